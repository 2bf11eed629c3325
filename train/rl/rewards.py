"""Code-RL reward shapes and batch filters (pure functions over pass counts / tensors)."""
from __future__ import annotations

from typing import Sequence

import torch

from factory_train.rl.advantages import _groups


def soft_reward(passed: int, total: int) -> float:
    """Pass rate passed/total (Klear paper soft reward, open-r1 code_reward); 0 when no tests."""
    return passed / total if total > 0 else 0.0


def hard_reward(passed: int, total: int, positive: float = 1.0, negative: float = 0.0) -> float:
    """All-or-nothing: ``positive`` iff every test passes (AceReason, DeepCoder, Skywork default)."""
    return positive if total > 0 and passed == total else negative


def klear_reward(passed: int, total: int, format_ok: bool = True, format_penalty: float = -1.0) -> float:
    """Klear code_r1: mean of +1 (pass) / −1 (fail) per test = 2p − 1; missing code fence → −1."""
    return format_penalty if not format_ok or total <= 0 else (passed - (total - passed)) / total


def acecoder_reward(passed: int, total: int, binary: bool = False, bonus: float = 0.5) -> float:
    """AceCoder serve_rm rule reward: pass rate (or binary) plus +0.5 when all tests pass (values ≤ 1.5)."""
    full = total > 0 and passed == total
    base = (1.0 if full else 0.0) if binary else soft_reward(passed, total)
    return base + (bonus if full else 0.0)


def overlong_penalty(length: int, max_length: int, buffer_length: int, factor: float = 1.0) -> float:
    """DAPO soft overlong punishment: ``min(−(L − (L_max − L_buf))/L_buf · factor, 0)``."""
    return min(-(length - (max_length - buffer_length)) / buffer_length * factor, 0.0)


def is_truncated(response_ids: torch.Tensor, eos_token_id: int | Sequence[int], pad_token_id: int | None = None,
                 response_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Bool ``[batch]``: the last valid response token is neither EOS nor PAD (generation hit the cap)."""
    eos = torch.as_tensor([eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id))
    if response_mask is None:
        last = response_ids[:, -1]
    else:
        idx = response_mask.shape[1] - 1 - response_mask.long().flip(-1).argmax(-1)
        last = response_ids.gather(1, idx.unsqueeze(-1)).squeeze(-1)
    done = torch.isin(last, eos)
    if pad_token_id is not None:
        done |= last == pad_token_id
    return ~done


def overlong_mask(response_mask: torch.Tensor, truncated: torch.Tensor, scores: torch.Tensor | None = None,
                  only_if_zero: bool = False) -> torch.Tensor:
    """Zero the loss mask of truncated rollouts (DAPO/Klear overlong filtering).

    ``only_if_zero=True`` masks only truncated rollouts with score 0 (DeepCoder ``mask_truncated_samples``).
    """
    drop = truncated.bool()
    if only_if_zero:
        if scores is None:
            raise ValueError("only_if_zero needs scores")
        drop = drop & (scores == 0)
    return response_mask * (~drop).to(response_mask.dtype).unsqueeze(-1)


def zero_variance_filter(scores: Sequence[float] | torch.Tensor, index: Sequence,
                         metric: str = "score", correct_score: float = 1.0) -> torch.Tensor:
    """DAPO dynamic-sampling keep mask: keep a group iff its metric has nonzero std (or group size 1).

    ``metric='acc'`` uses the binary full-pass flag ``score == correct_score`` (Klear), else the raw score.
    """
    s = torch.as_tensor(scores, dtype=torch.float64)
    vals = (s == correct_score).double() if metric == "acc" else s
    keep = torch.zeros(len(s), dtype=torch.bool)
    for rows in _groups(index).values():
        keep[rows] = len(rows) == 1 or bool(vals[rows].std() > 0)
    return keep
