"""Small on-policy GRPO-family loop on an HF causal LM (generate → reward callable → advantage → update).

Meant for smoke runs and unit tests on CPU, not for scale: one optimizer step per batch of
``prompts_per_step`` prompts × ``n`` samples, full-batch forward, no reference model / KL.
"""
from __future__ import annotations

import random
import time
from typing import Callable, Sequence

import torch

from factory_train.metrics import to_records, write_metrics_json
from factory_train.rl.advantages import ADV_ESTIMATORS, outcome_to_token_rewards
from factory_train.rl.losses import (AdaptiveEntropyController, PolicyLossConfig, agg_loss, entropy_from_logits,
                             get_policy_loss_fn, sft_loss)
from factory_train.rl.rewards import overlong_mask, zero_variance_filter

RewardFn = Callable[[list[str], list[dict]], Sequence[float]]


def order_prompts(prompts: list[dict], shuffle: bool = True, seed: int = 0) -> list[dict]:
    """Curriculum order: ascending ``stage`` when any row has one (missing → last), shuffled within a stage."""
    rows = list(prompts)
    if shuffle:
        random.Random(seed).shuffle(rows)
    if any("stage" in r for r in rows):
        rows.sort(key=lambda r: (r.get("stage") is None, r.get("stage") if r.get("stage") is not None else 0))
    return rows


def render_prompt(row: dict, tokenizer) -> str:
    """``prompt`` string as is; a list of chat messages goes through the tokenizer's chat template."""
    prompt = row["prompt"]
    if isinstance(prompt, str):
        return prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(list(prompt), tokenize=False, add_generation_prompt=True)
    return "".join(f"{m['role']}: {m['content']}\n" for m in prompt)


def _eos_ids(tokenizer, policy) -> list[int]:
    eos = getattr(policy.generation_config, "eos_token_id", None) if hasattr(policy, "generation_config") else None
    ids = eos if isinstance(eos, (list, tuple)) else [eos] if eos is not None else []
    return sorted({*ids, tokenizer.eos_token_id} - {None})


@torch.no_grad()
def generate_rollouts(policy, tokenizer, rows: list[dict], n: int, max_new_tokens: int, temperature: float = 1.0,
                      top_p: float = 1.0) -> dict:
    """Sample ``n`` completions per prompt; returns ids/masks (prompt left-padded), texts and truncation flags."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    enc = tokenizer([render_prompt(r, tokenizer) for r in rows], return_tensors="pt", padding=True,
                    add_special_tokens=False)
    tokenizer.padding_side = side
    dev = next(policy.parameters()).device
    enc = {k: v.to(dev) for k, v in enc.items()}
    eos = _eos_ids(tokenizer, policy)
    was = policy.training
    policy.eval()
    out = policy.generate(**enc, do_sample=True, temperature=temperature, top_p=top_p, top_k=0,
                          max_new_tokens=max_new_tokens, num_return_sequences=n,
                          pad_token_id=tokenizer.pad_token_id, eos_token_id=eos)
    policy.train(was)
    P = enc["input_ids"].shape[1]
    resp = out[:, P:]
    is_eos = torch.isin(resp, torch.tensor(eos, device=resp.device)).long()
    response_mask = ((is_eos.cumsum(-1) - is_eos) == 0).float()  # up to and including the first EOS
    prompt_mask = enc["attention_mask"].repeat_interleave(n, 0)
    texts = tokenizer.batch_decode(resp * response_mask.long() + tokenizer.pad_token_id * (1 - response_mask.long()),
                                   skip_special_tokens=True)
    return {"input_ids": out, "attention_mask": torch.cat([prompt_mask, response_mask.long()], -1),
            "response_mask": response_mask, "prompt_len": P, "completions": texts,
            "truncated": is_eos.sum(-1) == 0, "rows": [r for r in rows for _ in range(n)],
            "index": [i for i in range(len(rows)) for _ in range(n)]}


def response_log_probs(policy, input_ids, attention_mask, prompt_len: int, temperature: float = 1.0,
                       with_entropy: bool = False):
    """Per-token log π(a_t) of the response part (logits / temperature), optionally the full entropy."""
    position_ids = (attention_mask.cumsum(-1) - 1).clamp_min(0)
    logits = policy(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                    use_cache=False).logits[:, prompt_len - 1:-1].float() / temperature
    logp = torch.log_softmax(logits, -1).gather(-1, input_ids[:, prompt_len:].unsqueeze(-1)).squeeze(-1)
    return logp, (entropy_from_logits(logits) if with_entropy else None)


def policy_update(policy, optimizer, batch: dict, loss_mode: str = "vanilla", loss_agg_mode: str = "token-mean",
                  config: PolicyLossConfig | None = None, sft_alpha: float = 0.0, entropy_coef: float = 0.0,
                  max_grad_norm: float = 1.0, temperature: float = 1.0) -> dict:
    """One optimizer step on ``batch`` (input_ids, attention_mask, response_mask, prompt_len, old_log_prob,
    advantages [B,T], positive [B]); loss = policy loss + α_sft·NLL(positives) − entropy_coef·H."""
    logp, ent = response_log_probs(policy, batch["input_ids"], batch["attention_mask"], batch["prompt_len"],
                                   temperature, with_entropy=True)
    mask = batch["response_mask"]
    old = batch.get("old_log_prob")
    pg_loss, metrics = get_policy_loss_fn(loss_mode)(logp.detach() if old is None else old, logp,
                                                     batch["advantages"], mask, loss_agg_mode, config)
    loss = pg_loss
    entropy = agg_loss(ent, mask, "token-mean")
    if entropy_coef:
        loss = loss - entropy_coef * entropy
    if sft_alpha:
        s_loss, s_met = sft_loss(logp, mask, batch["positive"], sft_alpha)
        loss = loss + s_loss
        metrics.update(s_met)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), max_grad_norm)
    optimizer.step()
    return {**metrics, "pg_loss": float(pg_loss.detach()), "loss": float(loss.detach()),
            "entropy": float(entropy.detach()), "grad_norm": float(grad_norm)}


def _select(batch: dict, keep: torch.Tensor) -> dict:
    idx = torch.nonzero(keep).squeeze(-1)
    return {k: (v[idx.to(v.device)] if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == len(keep)
                else v) for k, v in batch.items()}


def grpo_loop(policy, tokenizer, prompts: list[dict], reward_fn: RewardFn, n: int = 4, steps: int = 10,
              lr: float = 1e-6, prompts_per_step: int = 2, max_new_tokens: int = 64, temperature: float = 1.0,
              top_p: float = 1.0, loss_mode: str = "vanilla", loss_agg_mode: str = "token-mean",
              clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.28, clip_ratio_c: float | None = 10.0,
              gppo_beta1: float = 1.0, gppo_beta2: float = 1.0, cispo_cap: float | None = None,
              adv_estimator: str = "grpo", ppo_epochs: int = 1, filter_zero_variance: bool = False,
              filter_metric: str = "score", mask_truncated: bool = False, sft_alpha: float = 0.0,
              correct_score: float = 1.0, entropy_control: AdaptiveEntropyController | None = None,
              entropy_coef: float = 0.0, max_grad_norm: float = 1.0, weight_decay: float = 0.0,
              shuffle: bool = True, seed: int = 0, metrics_path=None, run_id: str | None = None,
              log_fn: Callable[[dict], None] | None = None) -> list[dict]:
    """Run ``steps`` on-policy updates and return one metrics dict per step.

    ``prompts``: rows with ``prompt`` (str or chat messages) plus any columns the reward needs (e.g. tests,
    task_id) and an optional ``stage`` for curriculum order. ``reward_fn(completions, rows) -> floats``
    (rows repeated per sample). Loss modes: vanilla/dapo (clip-higher + dual clip), gppo, cispo, gpg.
    Advantage estimators: grpo, dr_grpo, rloo, reinforce_plus_plus(_baseline). Optional DAPO pieces:
    zero-variance group filtering (``filter_metric='acc'`` = full pass), truncated-rollout masking;
    Klear SFT term on rollouts with ``score == correct_score``; Skywork adaptive entropy control.
    If ``metrics_path`` is given, long-format records (:func:`factory_train.metrics.to_records`) are written there.
    """
    torch.manual_seed(seed)
    cfg = PolicyLossConfig(clip_ratio_low=clip_ratio_low, clip_ratio_high=clip_ratio_high,
                           clip_ratio_c=clip_ratio_c, gppo_beta1=gppo_beta1, gppo_beta2=gppo_beta2, cispo_cap=cispo_cap)
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=lr, weight_decay=weight_decay)
    ordered = order_prompts(prompts, shuffle, seed)
    estimator = ADV_ESTIMATORS[adv_estimator]
    history: list[dict] = []
    cursor = 0
    policy.train()
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        rows = [ordered[(cursor + i) % len(ordered)] for i in range(prompts_per_step)]
        cursor += prompts_per_step
        batch = generate_rollouts(policy, tokenizer, rows, n, max_new_tokens, temperature, top_p)
        t_gen = time.perf_counter() - t0
        scores = torch.tensor([float(s) for s in reward_fn(batch["completions"], batch["rows"])])
        dev = batch["input_ids"].device
        mask = batch["response_mask"]
        if mask_truncated:
            mask = overlong_mask(mask, batch["truncated"].cpu())
        token_rewards = outcome_to_token_rewards(scores, batch["response_mask"].cpu())
        kw = {} if adv_estimator == "reinforce_plus_plus" else {"index": batch["index"]}
        adv, _ = estimator(token_rewards, batch["response_mask"].cpu(), **kw)
        batch.update(response_mask=mask.to(dev), advantages=adv.to(dev) * mask.to(dev),
                     positive=(scores == correct_score).to(dev))
        keep = (zero_variance_filter(scores, batch["index"], filter_metric, correct_score)
                if filter_zero_variance else torch.ones(len(scores), dtype=torch.bool))
        stages = [r.get("stage") for r in rows if r.get("stage") is not None]
        row = {"step": step, "split": "train", "stage": max(stages) if stages else None,
               "reward_mean": float(scores.mean()), "reward_std": float(scores.std()) if len(scores) > 1 else 0.0,
               "solve_rate": float((scores >= correct_score).float().mean()), "kept_frac": float(keep.float().mean()),
               "response_length": float(batch["response_mask"].sum(-1).float().mean()),
               "truncated_frac": float(batch["truncated"].float().mean()), "gen_time_s": t_gen}
        if keep.any():
            train_batch = _select(batch, keep.to(dev)) if not keep.all() else batch
            old, coef = None, entropy_coef
            if ppo_epochs > 1 or entropy_control is not None:
                with torch.no_grad():
                    sampled_lp, _ = response_log_probs(policy, train_batch["input_ids"],
                                                       train_batch["attention_mask"], train_batch["prompt_len"],
                                                       temperature)
                old = sampled_lp if ppo_epochs > 1 else None
                if entropy_control is not None:  # OR1 proxy H_k = −mean log π(sampled token)
                    h_proxy = float(-agg_loss(sampled_lp, train_batch["response_mask"], "token-mean"))
                    coef = entropy_control.update(h_proxy)
                    row.update(entropy_proxy=h_proxy, ent_coef=coef)
            train_batch["old_log_prob"] = old
            for _ in range(ppo_epochs):
                met = policy_update(policy, opt, train_batch, loss_mode, loss_agg_mode, cfg, sft_alpha, coef,
                                    max_grad_norm, temperature)
            row.update(met)
        row["step_time_s"] = time.perf_counter() - t0
        history.append(row)
        if log_fn:
            log_fn(row)
    if metrics_path:
        write_metrics_json(to_records(history, run_id or f"rl-{int(time.time())}", "rl"), metrics_path)
    return history
