"""Policy-gradient losses with verl-compatible signatures.

Every loss is ``fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
config=None, rollout_is_weights=None) -> (loss, metrics)``; tensors are ``[batch, response_len]``.
``config`` is a :class:`PolicyLossConfig`, a dict, or ``None`` (defaults).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

import torch

AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")


@dataclass
class PolicyLossConfig:
    """Clip settings (verl names). DAPO clip-higher: low 0.2 / high 0.28; Klear: clip_ratio_c 10."""

    clip_ratio_low: float = 0.2
    clip_ratio_high: float = 0.2
    clip_ratio_c: float | None = 3.0  # dual clip for A<0; None disables
    gppo_beta1: float = 1.0  # GPPO low-side gradient scale (Klear general form)
    gppo_beta2: float = 1.0  # GPPO high-side gradient scale
    cispo_cap: float | None = None  # TRL-style absolute cap on the IS weight (overrides the two-sided clip)
    loss_scale_factor: float | None = None  # seq-mean-token-sum-norm divisor (default: response length)


def as_config(config: Any = None, **overrides) -> PolicyLossConfig:
    """Coerce ``None`` / dict / dataclass / attribute object into :class:`PolicyLossConfig`."""
    if isinstance(config, PolicyLossConfig) and not overrides:
        return config
    missing = object()
    get = config.get if isinstance(config, dict) else lambda k, default: getattr(config, k, default)
    values = {f.name: v for f in fields(PolicyLossConfig) if (v := get(f.name, missing)) is not missing}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return PolicyLossConfig(**values)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp_min(1.0)


def agg_loss(loss_mat: torch.Tensor, loss_mask: torch.Tensor, loss_agg_mode: str = "token-mean",
             loss_scale_factor: float | None = None) -> torch.Tensor:
    """Aggregate a per-token loss matrix (verl ``agg_loss`` semantics, single process).

    token-mean: Σ L·m / Σ m (DAPO) | seq-mean-token-sum: mean_i Σ_t L | seq-mean-token-mean: mean_i mean_t L
    (original GRPO; empty sequences skipped) | seq-mean-token-sum-norm: Σ_i Σ_t L / factor (Dr.GRPO; factor
    defaults to the padded response length, as in verl).
    """
    m = loss_mask.to(loss_mat.dtype)
    if loss_agg_mode == "token-mean":
        return masked_mean(loss_mat, m)
    seq_sum = (loss_mat * m).sum(-1)
    if loss_agg_mode == "seq-mean-token-sum":
        return seq_sum.mean()
    if loss_agg_mode == "seq-mean-token-mean":
        n_tok = m.sum(-1)
        valid = n_tok > 0
        return (seq_sum / n_tok.clamp_min(1.0) * valid).sum() / valid.sum().clamp_min(1)
    if loss_agg_mode == "seq-mean-token-sum-norm":
        factor = loss_scale_factor if loss_scale_factor is not None else loss_mask.shape[-1]
        return seq_sum.sum() / factor
    raise ValueError(f"unknown loss_agg_mode {loss_agg_mode!r}; expected one of {AGG_MODES}")


def _ratio(config, old_log_prob, log_prob):
    """(``config`` as a :class:`PolicyLossConfig`, ratio π/π_old, its log clamped to ±20)."""
    neg_kl = torch.clamp(log_prob - old_log_prob, -20.0, 20.0)
    return as_config(config), torch.exp(neg_kl), neg_kl


def _finish(pg_losses, response_mask, loss_agg_mode, cfg, rollout_is_weights, metrics, neg_kl=None):
    """(aggregated loss, float metrics); ``neg_kl`` given: metric ``ppo_kl`` (mean −log ratio) last."""
    if neg_kl is not None:
        metrics["ppo_kl"] = masked_mean(-neg_kl, response_mask).detach()
    if rollout_is_weights is not None:
        pg_losses = pg_losses * rollout_is_weights
    loss = agg_loss(pg_losses, response_mask, loss_agg_mode, cfg.loss_scale_factor)
    return loss, {k: float(v) for k, v in metrics.items()}


def _dual_clip(pg, advantages, cfg, response_mask):
    """For A<0 cap the loss at −A·c (verl/Klear dual clip). Returns (loss, lower-clip fraction)."""
    if cfg.clip_ratio_c is None:
        return pg, torch.zeros(())
    if cfg.clip_ratio_c <= 1.0:
        raise ValueError("clip_ratio_c must be > 1")
    cap = -advantages * cfg.clip_ratio_c
    lower = (advantages < 0) & (pg > cap)
    return torch.where(advantages < 0, torch.minimum(pg, cap), pg), masked_mean(lower.float(), response_mask)


def ppo_clip_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
                  config=None, rollout_is_weights=None):
    """PPO clipped surrogate with clip-higher (ε_low, ε_high) and dual clip (verl ``vanilla``)."""
    cfg, ratio, neg_kl = _ratio(config, old_log_prob, log_prob)
    pg1 = -advantages * ratio
    pg2 = -advantages * torch.clamp(ratio, 1 - cfg.clip_ratio_low, 1 + cfg.clip_ratio_high)
    pg, lower_frac = _dual_clip(torch.maximum(pg1, pg2), advantages, cfg, response_mask)
    metrics = {"pg_clipfrac": masked_mean((pg2 > pg1).float(), response_mask), "pg_clipfrac_lower": lower_frac}
    return _finish(pg, response_mask, loss_agg_mode, cfg, rollout_is_weights, metrics, neg_kl)


def gppo_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
              config=None, rollout_is_weights=None):
    """GPPO (Klear): PPO-clip forward, but clipped tokens keep a gradient via ``r/sg(r)``.

    Per-token gradient factor on −A·∇logπ: β1(1−ε_l) if r<1−ε_l & A<0; β2(1+ε_h) if r>1+ε_h & A>0; r otherwise
    (explicit-mask general-β form; with β1=β2=1 the forward value equals clip-higher PPO). Dual clip applies.
    """
    cfg, ratio, neg_kl = _ratio(config, old_log_prob, log_prob)
    unit = ratio / ratio.detach()  # value 1, gradient ∇log π
    low = (ratio < 1 - cfg.clip_ratio_low) & (advantages < 0)
    high = (ratio > 1 + cfg.clip_ratio_high) & (advantages > 0)
    pg = torch.where(low, -advantages * cfg.gppo_beta1 * (1 - cfg.clip_ratio_low) * unit,
                     torch.where(high, -advantages * cfg.gppo_beta2 * (1 + cfg.clip_ratio_high) * unit,
                                 -advantages * ratio))
    pg, lower_frac = _dual_clip(pg, advantages, cfg, response_mask)
    metrics = {"pg_clipfrac": masked_mean((low | high).float(), response_mask),
               "pg_clipfrac_low": masked_mean(low.float(), response_mask),
               "pg_clipfrac_high": masked_mean(high.float(), response_mask), "pg_clipfrac_lower": lower_frac}
    return _finish(pg, response_mask, loss_agg_mode, cfg, rollout_is_weights, metrics, neg_kl)


def cispo_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
               config=None, rollout_is_weights=None):
    """CISPO: −sg(clip(r))·A·logπ. Two-sided clip (verl) or absolute cap ``cispo_cap`` (TRL, e.g. 5.0).

    Every token gets gradient −clip(r)·A·∇logπ; the weight itself is detached.
    """
    cfg, ratio, neg_kl = _ratio(config, old_log_prob, log_prob)
    clipped = (torch.clamp(ratio, max=cfg.cispo_cap) if cfg.cispo_cap is not None
               else torch.clamp(ratio, 1 - cfg.clip_ratio_low, 1 + cfg.clip_ratio_high))
    pg = -clipped.detach() * advantages * log_prob
    metrics = {"pg_clipfrac": masked_mean((clipped != ratio).float(), response_mask)}
    return _finish(pg, response_mask, loss_agg_mode, cfg, rollout_is_weights, metrics, neg_kl)


def reinforce_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
                   config=None, rollout_is_weights=None):
    """Plain policy gradient −A·logπ (verl ``gpg``)."""
    cfg = as_config(config)
    return _finish(-advantages * log_prob, response_mask, loss_agg_mode, cfg, rollout_is_weights, {})


POLICY_LOSSES: dict[str, Callable] = {
    "vanilla": ppo_clip_loss, "ppo": ppo_clip_loss, "dapo": ppo_clip_loss, "grpo": ppo_clip_loss,
    "gppo": gppo_loss, "cispo": cispo_loss, "gpg": reinforce_loss, "reinforce": reinforce_loss,
}


def get_policy_loss_fn(name: str) -> Callable:
    try:
        return POLICY_LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown policy loss {name!r}; known: {sorted(POLICY_LOSSES)}") from None


def sft_loss(log_prob: torch.Tensor, response_mask: torch.Tensor, positive: torch.Tensor,
             alpha: float = 0.1) -> tuple[torch.Tensor, dict]:
    """Klear positive-sample NLL: α · token-mean of −logπ over rollouts flagged ``positive`` (all tests pass).

    ``positive`` is a bool ``[batch]`` (e.g. ``reward == 1.0``). Zero (with grad graph) when no positive.
    """
    mask = response_mask.to(log_prob.dtype) * positive.to(log_prob.dtype).unsqueeze(-1)
    nll = -(log_prob * mask).sum() / mask.sum().clamp_min(1.0)
    return alpha * nll, {"sft_nll": float(nll.detach()), "sft_positive_frac": float(positive.float().mean())}


def kl_penalty(log_prob: torch.Tensor, ref_log_prob: torch.Tensor, kind: str = "low_var_kl") -> torch.Tensor:
    """Per-token KL estimators (verl): 'kl' (k1), 'abs', 'mse' (k2), 'low_var_kl' (k3, clamped)."""
    diff = log_prob - ref_log_prob
    if kind in ("kl", "k1"):
        return diff
    if kind == "abs":
        return diff.abs()
    if kind in ("mse", "k2"):
        return 0.5 * diff.square()
    if kind in ("low_var_kl", "k3"):
        kl = torch.clamp(-diff, -20, 20)
        return torch.clamp(torch.exp(kl) - kl - 1, -10, 10)
    raise ValueError(f"unknown kl kind {kind!r}")


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Per-position entropy H = logsumexp(z) − Σ softmax(z)·z."""
    return torch.logsumexp(logits, -1) - (torch.softmax(logits, -1) * logits).sum(-1)


class AdaptiveEntropyController:
    """Skywork-OR1 adaptive entropy control.

    ``α_k = c_k·1[H_k < target]`` is applied at step k, then ``c_{k+1} = clip(c_k + Δ·(+1 if H_k < target
    else −1), c_min, c_max)`` and the total loss is ``L_pg − α·H``. Defaults are the OR1 script values.
    """

    def __init__(self, target: float = 0.2, delta: float = 1e-4, c_min: float = 0.0, c_max: float = 0.005,
                 c_init: float = 0.0):
        self.target, self.delta, self.c_min, self.c_max, self.coef = target, delta, c_min, c_max, c_init

    def update(self, entropy: float) -> float:
        """Feed the current entropy H_k; returns the effective coefficient α_k for this step."""
        below = float(entropy) < self.target
        alpha = self.coef if below else 0.0  # α_k = c_k·1[H_k < target]
        self.coef = min(max(self.coef + self.delta * (1 if below else -1), self.c_min), self.c_max)
        return alpha

    def state(self) -> dict:
        return {"ent_coef": self.coef, "ent_target": self.target}
