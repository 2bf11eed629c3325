"""Bradley-Terry reward-model training from TRL-style preference pairs (prompt, chosen, rejected)."""
from __future__ import annotations

import math
import random
import time
from functools import reduce
from pathlib import Path

import torch
import torch.nn.functional as F

from factory_train.metrics import to_records, write_metrics_json
from factory_train.rm.model import encode, load_reward_model, pad_batch, sequence_rewards


def bt_loss(r_chosen: torch.Tensor, r_rejected: torch.Tensor, margin: torch.Tensor | None = None,
            center_rewards_coefficient: float | None = None) -> tuple[torch.Tensor, dict]:
    """−mean logσ(r_c − r_r − margin) [+ coef·mean((r_c + r_r)²)], TRL RewardTrainer's loss and metrics."""
    diff = r_chosen - r_rejected
    loss = -F.logsigmoid(diff - margin if margin is not None else diff).mean()
    if center_rewards_coefficient:
        loss = loss + center_rewards_coefficient * (r_chosen + r_rejected).square().mean()
    both, diff = torch.cat([r_chosen, r_rejected]).detach(), diff.detach()
    return loss, {"accuracy": float((diff > 0).float().mean()), "margin": float(diff.mean()),
                  "mean_reward": float(both.mean()), "min_reward": float(both.min()), "max_reward": float(both.max())}


def load_pairs(path: str | Path) -> list[dict]:
    """Rows of a Parquet file or directory with string columns prompt/chosen/rejected (+ optional margin)."""
    import pyarrow.parquet as pq

    rows = pq.read_table(str(path)).to_pylist()
    missing = {"chosen", "rejected"} - set(rows[0] if rows else {})
    if not rows or missing:
        raise ValueError(f"{path}: no rows or missing columns {sorted(missing)}")
    return rows


def split_pairs(rows: list[dict], eval_fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Held-out split by prompt (no prompt in both halves); falls back to a pair split for a single prompt."""
    if eval_fraction <= 0 or len(rows) < 2:
        return rows, []
    keys = sorted({r.get("prompt") or "" for r in rows})
    rng = random.Random(seed)
    if len(keys) > 1:
        rng.shuffle(keys)
        held = set(keys[:max(1, min(len(keys) - 1, round(eval_fraction * len(keys))))])
        return [r for r in rows if (r.get("prompt") or "") not in held], \
               [r for r in rows if (r.get("prompt") or "") in held]
    idx = list(range(len(rows)))
    rng.shuffle(idx)
    n_eval = max(1, min(len(rows) - 1, round(eval_fraction * len(rows))))
    return [rows[i] for i in idx[n_eval:]], [rows[i] for i in idx[:n_eval]]


def tokenize_pairs(rows: list[dict], tokenizer, max_length: int, overlong: str = "drop") -> list[dict]:
    """``prompt + chosen`` / ``prompt + rejected`` ids with EOS; over-length pairs dropped (TRL) or left-truncated."""
    out = []
    for r in rows:
        prompt = r.get("prompt") or ""
        c = encode(tokenizer, prompt + r["chosen"])
        j = encode(tokenizer, prompt + r["rejected"])
        if max(len(c), len(j)) > max_length:
            if overlong == "drop":
                continue
            c, j = c[-max_length:], j[-max_length:]
        m = r.get("margin")
        out.append({"chosen": c, "rejected": j, "margin": None if m is None else float(m)})
    return out


def _forward(model, batch: list[dict], pad_id: int, side: str, device):
    ids, mask = pad_batch([b["chosen"] for b in batch] + [b["rejected"] for b in batch], pad_id, side)
    r_c, r_r = sequence_rewards(model, ids.to(device), mask.to(device)).chunk(2)
    margins = [b["margin"] for b in batch]
    margin = None if any(m is None for m in margins) else torch.tensor(margins, device=device)
    return r_c, r_r, margin, int(mask.sum())


@torch.no_grad()
def evaluate_pairs(model, tokenized: list[dict], tokenizer, batch_size: int = 8, padding_side: str = "right",
                   use_margin: bool = True) -> dict:
    """Held-out pair accuracy mean(r_c > r_r), BT loss, reward mean/std."""
    was = model.training
    model.eval()
    dev = next(model.parameters()).device
    rc, rr, ms = [], [], []
    for i in range(0, len(tokenized), batch_size):
        c, r, m, _ = _forward(model, tokenized[i:i + batch_size], tokenizer.pad_token_id, padding_side, dev)
        rc.append(c), rr.append(r), ms.append(m)
    model.train(was)
    if not rc:
        return {}
    rc, rr = torch.cat(rc), torch.cat(rr)
    margin = torch.cat(ms) if use_margin and all(m is not None for m in ms) else None
    loss, met = bt_loss(rc, rr, margin)
    both = torch.cat([rc, rr])
    return {"loss": float(loss), "accuracy": met["accuracy"], "margin": met["margin"],
            "mean_reward": float(both.mean()), "std_reward": float(both.std()) if len(both) > 1 else 0.0,
            "n_pairs": len(rc)}


def freeze_below(model, top_layers: int) -> int:
    """Train only the top `top_layers` transformer blocks, the final norm and the score head (a small-budget RM
    on CPU: no gradients, optimizer state or saved activations for the frozen blocks). Returns trainable params."""
    found = (reduce(lambda obj, part: getattr(obj, part, None), name.split("."), model)
             for name in ("model.layers", "transformer.h", "gpt_neox.layers"))
    blocks = next((b for b in found if b is not None), None)
    if blocks is None:
        raise ValueError(f"train_top_layers: cannot find the transformer blocks of {type(model).__name__}")
    for p in model.parameters():
        p.requires_grad_(False)
    keep = list(blocks)[-top_layers:] if top_layers > 0 else []
    heads = [getattr(model, n) for n in ("score", "classifier") if getattr(model, n, None) is not None]
    norm = getattr(getattr(model, "model", None), "norm", None)
    for module in keep + heads + ([norm] if norm is not None else []):
        for p in module.parameters():
            p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def train_rm(pairs_path, model="smollm2", tokenizer=None, out_dir="rm_out", epochs: int = 1, lr: float = 1e-5,
             batch_size: int = 8, max_length: int = 1024, eval_fraction: float = 0.1, seed: int = 0,
             use_margin: bool = True, center_rewards_coefficient: float | None = None, max_steps: int | None = None,
             weight_decay: float = 0.0, max_grad_norm: float = 1.0, padding_side: str = "right",
             overlong: str = "drop", device: str | None = None, save: bool = True, run_id: str | None = None,
             log_fn=None, gradient_checkpointing: bool | None = None, train_top_layers: int | None = None) -> dict:
    """Train a Bradley-Terry RM on a pairs Parquet (file or dir) and return ``dict(metrics, checkpoint, ...)``.

    ``model``: see :func:`factory_train.rm.model.load_reward_model` (``"smollm2"`` default, ``"tiny"``, path, or a
    loaded model + ``tokenizer``). Loss −logσ(r_c − r_r − margin) (margin column used when present and
    ``use_margin``). Held-out split by prompt. ``gradient_checkpointing`` (default: on for CPU) recomputes
    activations in backward, trading step time for activation memory. ``train_top_layers=k`` trains only the top k
    blocks + final norm + head (the demo's CPU budget). Writes ``out_dir/metrics.json`` (long-format records, see
    :mod:`factory_train.metrics`) and, if ``save``, ``out_dir/checkpoint`` via ``save_pretrained``.
    Returns ``{"metrics": records, "history": wide per-step rows, "eval": final held-out dict,
    "checkpoint": path or None, "n_train": int, "n_eval": int, "step_time_s": mean train step seconds}``.
    """
    torch.manual_seed(seed)
    out_dir = Path(out_dir)
    run_id = run_id or f"rm-{int(time.time())}"
    model, tokenizer = load_reward_model(model, tokenizer, device)
    for mod in model.modules():  # TRL disable_dropout
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 0.0
    dev = next(model.parameters()).device
    if train_top_layers is not None:
        freeze_below(model, train_top_layers)
    if gradient_checkpointing is None:   # default: on for CPU, where memory (not compute) is what runs out
        gradient_checkpointing = dev.type == "cpu" and train_top_layers is None
    if gradient_checkpointing and getattr(model, "supports_gradient_checkpointing", False):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    rows = load_pairs(pairs_path)
    train_rows, eval_rows = split_pairs(rows, eval_fraction, seed)
    train_set = tokenize_pairs(train_rows, tokenizer, max_length, overlong)
    eval_set = tokenize_pairs(eval_rows, tokenizer, max_length, overlong)
    if not train_set:
        raise ValueError(f"no training pairs left (of {len(train_rows)}) with max_length={max_length}")
    if not use_margin:
        for b in train_set + eval_set:
            b["margin"] = None
    params = [p for p in model.parameters() if p.requires_grad]
    fused = dev.type == "cuda" and all(p.dtype in (torch.float32, torch.float16, torch.bfloat16) for p in params)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=fused or None)  # HF Trainer's default
    history, times, step = [], [], 0
    untrained = {}
    if eval_set:  # the untrained head's held-out accuracy: the baseline training must beat
        untrained = evaluate_pairs(model, eval_set, tokenizer, batch_size, padding_side, use_margin)
        history.append({"step": 0, "epoch": -1, "split": "eval", **untrained})
    gen = random.Random(seed)
    model.train()
    for epoch in range(epochs):
        order = list(range(len(train_set)))
        gen.shuffle(order)
        for i in range(0, len(order), batch_size):
            t0 = time.perf_counter()
            batch = [train_set[j] for j in order[i:i + batch_size]]
            r_c, r_r, margin, n_tok = _forward(model, batch, tokenizer.pad_token_id, padding_side, dev)
            loss, met = bt_loss(r_c, r_r, margin, center_rewards_coefficient)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            opt.step()
            step += 1
            dt = time.perf_counter() - t0
            times.append(dt)
            row = {"step": step, "epoch": epoch, "split": "train", "loss": float(loss.detach()), **met,
                   "grad_norm": float(grad_norm), "num_tokens": n_tok, "lr": lr, "step_time_s": dt}
            history.append(row)
            if log_fn:
                log_fn(row)
            if max_steps and step >= max_steps:
                break
        if eval_set:
            ev = evaluate_pairs(model, eval_set, tokenizer, batch_size, padding_side, use_margin)
            history.append({"step": step, "epoch": epoch, "split": "eval", **ev})
            if log_fn:
                log_fn(history[-1])
        if max_steps and step >= max_steps:
            break
    checkpoint = None
    if save:
        checkpoint = out_dir / "checkpoint"
        model.save_pretrained(checkpoint)
        tokenizer.save_pretrained(checkpoint)
    records = to_records(history, run_id, "rm")
    write_metrics_json(records, out_dir / "metrics.json")
    evals = [h for h in history if h["split"] == "eval"]
    return {"metrics": records, "history": history, "eval": evals[-1] if evals else {}, "eval_untrained": untrained,
            "checkpoint": str(checkpoint) if checkpoint else None, "n_train": len(train_set),
            "n_eval": len(eval_set), "step_time_s": sum(times) / len(times) if times else math.nan, "run_id": run_id}
