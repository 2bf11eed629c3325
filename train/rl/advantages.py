"""Outcome advantage estimators (verl-compatible): GRPO, Dr.GRPO, RLOO, REINFORCE++ (+baseline).

Signatures follow verl: ``token_level_rewards`` and ``response_mask`` are ``[batch, T]``; ``index`` holds one
group id (prompt uid) per row. Each returns ``(advantages, returns)`` broadcast over valid tokens.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import torch


def _groups(index: Sequence) -> dict:
    groups: dict = defaultdict(list)
    for i, uid in enumerate(list(index)):
        groups[uid].append(i)
    return groups


def group_normalize(scores: torch.Tensor, index: Sequence, epsilon: float = 1e-6,
                    norm_by_std: bool = True) -> torch.Tensor:
    """Per-group ``(s − mean)/(std + ε)`` with unbiased std (torch.std); singleton group → mean 0, std 1."""
    scores = scores.float()
    out = torch.empty_like(scores)
    for rows in _groups(index).values():
        s = scores[rows]
        mean, std = (torch.zeros(()), torch.ones(())) if len(rows) == 1 else (s.mean(), s.std())
        out[rows] = (s - mean) / (std + epsilon) if norm_by_std else s - mean
    return out


def compute_grpo_outcome_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                                   index: Sequence, epsilon: float = 1e-6, norm_adv_by_std_in_grpo: bool = True,
                                   config=None):
    """GRPO: sequence score = Σ_t rewards, group-normalised; ``norm_adv_by_std_in_grpo=False`` is Dr.GRPO."""
    scores = token_level_rewards.sum(-1)
    adv = group_normalize(scores, index, epsilon, norm_adv_by_std_in_grpo).unsqueeze(-1) * response_mask
    return adv, adv


def compute_drgrpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon: float = 1e-6, config=None):
    """Dr.GRPO: group mean subtracted, no std division (pair with ``seq-mean-token-sum-norm``)."""
    return compute_grpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon, False)


def compute_rloo_outcome_advantage(token_level_rewards, response_mask, index, config=None):
    """RLOO: r_i − mean of the other group members (= n/(n−1)·(r_i − mean)); singleton → 0."""
    scores = token_level_rewards.sum(-1).float()
    adv = torch.zeros_like(scores)
    for rows in _groups(index).values():
        n = len(rows)
        if n > 1:
            s = scores[rows]
            adv[rows] = (s - s.mean()) * n / (n - 1)
    adv = adv.unsqueeze(-1) * response_mask
    return adv, adv


def masked_whiten(values: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """Global whitening over valid tokens: unbiased masked variance, ``(v − μ)·rsqrt(var + 1e-8)``."""
    m = mask.to(values.dtype)
    n = m.sum()
    mean = (values * m).sum() / n.clamp_min(1.0)
    var = ((values - mean).square() * m).sum() / (n - 1).clamp_min(1.0)
    out = (values - mean) * torch.rsqrt(var + 1e-8)
    return out if shift_mean else out + mean


def discounted_returns(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, gamma: float = 1.0):
    """G_t = r_t + γ·G_{t+1}, computed right-to-left and zeroed on padding."""
    returns = torch.zeros_like(token_level_rewards, dtype=torch.float32)
    running = torch.zeros(token_level_rewards.shape[0])
    for t in reversed(range(token_level_rewards.shape[1])):
        running = token_level_rewards[:, t].float() + gamma * running
        returns[:, t] = running
        running = running * response_mask[:, t].float()
    return returns * response_mask


def compute_reinforce_plus_plus_outcome_advantage(token_level_rewards, response_mask, gamma: float = 1.0, config=None):
    """REINFORCE++: discounted returns, then whitening over the whole batch (no group baseline)."""
    returns = discounted_returns(token_level_rewards, response_mask, gamma)
    return masked_whiten(returns, response_mask) * response_mask, returns


def compute_reinforce_plus_plus_baseline_outcome_advantage(token_level_rewards, response_mask, index,
                                                           epsilon: float = 1e-6, config=None):
    """REINFORCE++-baseline: subtract the group mean score, tile over tokens, then batch whitening."""
    scores = group_normalize(token_level_rewards.sum(-1), index, epsilon, norm_by_std=False)
    tiled = scores.unsqueeze(-1) * response_mask
    return masked_whiten(tiled, response_mask) * response_mask, tiled


ADV_ESTIMATORS = {
    "grpo": compute_grpo_outcome_advantage, "dr_grpo": compute_drgrpo_outcome_advantage,
    "rloo": compute_rloo_outcome_advantage, "reinforce_plus_plus": compute_reinforce_plus_plus_outcome_advantage,
    "reinforce_plus_plus_baseline": compute_reinforce_plus_plus_baseline_outcome_advantage,
}


def outcome_to_token_rewards(scores: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Place each sequence's scalar score on its last valid response token (verl NaiveRewardManager)."""
    out = torch.zeros_like(response_mask, dtype=torch.float32)
    rows = torch.nonzero(response_mask.long().sum(-1) > 0).squeeze(-1)
    last = response_mask.shape[1] - 1 - response_mask.long().flip(-1).argmax(-1)
    out[rows, last[rows]] = scores.float()[rows]
    return out
