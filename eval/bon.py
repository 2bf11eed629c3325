"""Best-of-N with a reward model: exact order-statistic BoN@k estimator and AceCoder-style tables.

BoN@k = expected pass indicator of the top-scored sample among k drawn without replacement from n scored
samples. Sorting scores ascending, rank i is the maximum of a uniform k-subset with probability
C(i−1, k−1)/C(n, k), so BoN@k = Σ_{i=k..n} C(i−1, k−1)/C(n, k)·y_(i). Ties are averaged over orderings
(= uniform random tie-break) by replacing y inside a tie block with the block mean.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

import numpy as np

from factory_eval.passk import pass_at_k


def _top_weights(n: int, k: int) -> np.ndarray:
    """w_i = C(i−1, k−1)/C(n, k) for ascending ranks i=1..n, via a stable ratio recurrence."""
    w = np.zeros(n)
    # w_n = k/n; w_{i-1} = w_i·(i−k)/(i−1)
    w[n - 1] = k / n
    for i in range(n, k, -1):
        w[i - 2] = w[i - 1] * (i - k) / (i - 1)
    return w


def bon_at_k(scores: Sequence[float], passed: Sequence[float], k: int, ties: str = "average") -> float:
    """Unbiased BoN@k for one problem. ``ties='average'`` (random tie-break) or 'first' (stable order)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(passed, dtype=float)
    n = len(s)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n (n={n}, k={k})")
    order = np.argsort(s, kind="stable")
    s, y = s[order], y[order]
    if ties == "average":
        y = y.copy()
        cuts = np.flatnonzero(np.r_[True, s[1:] != s[:-1], True])   # the tie blocks of the sorted scores
        for a, b in zip(cuts[:-1], cuts[1:]):
            y[a:b] = y[a:b].mean()
    elif ties != "first":
        raise ValueError("ties must be 'average' or 'first'")
    return float(_top_weights(n, k) @ y)


def _row(sample) -> tuple:
    if isinstance(sample, dict):
        return sample["problem_id"], sample.get("score"), sample["passed"], bool(sample.get("is_greedy", False))
    pid, _, score, passed, *rest = sample
    return pid, score, passed, bool(rest[0]) if rest else False


def bon_table(samples: Iterable, ks: Sequence[int] | None = None, ties: str = "average") -> list[dict]:
    """AceCoder-style rows from ``(problem_id, sample_idx, score, passed, is_greedy)`` tuples or dicts.

    Greedy samples form the ``greedy`` row only; sampled ones give ``average`` (= pass@1), ``bon`` (RM
    best-of-k) and ``oracle`` (= pass@k) rows per k. A k is reported only when every problem has ≥ k samples
    (default ks: powers of two up to that minimum, plus the minimum itself). Rows: {method, k, value, n_problems}.
    Every row is on the same problems: with any greedy sample, only problems with greedy and sampled ones count.
    """
    pool: dict = defaultdict(list)
    greedy: dict = {}
    for sample in samples:
        pid, score, passed, is_greedy = _row(sample)
        if is_greedy:
            greedy[pid] = float(bool(passed))
        else:
            pool[pid].append((float(score), float(bool(passed))))
    if greedy and pool:
        common = greedy.keys() & pool.keys()
        greedy = {p: v for p, v in greedy.items() if p in common}
        pool = {p: v for p, v in pool.items() if p in common}
    rows: list[dict] = []
    if greedy:
        rows.append({"method": "greedy", "k": 1, "value": float(np.mean(list(greedy.values()))),
                     "n_problems": len(greedy)})
    if not pool:
        return rows
    n_min = min(len(v) for v in pool.values())
    rows.append({"method": "average", "k": 1, "value": float(np.mean([np.mean([p for _, p in v])
                                                                       for v in pool.values()])),
                 "n_problems": len(pool)})
    if ks is None:
        ks = sorted({2 ** j for j in range(n_min.bit_length()) if 2 ** j <= n_min} | {n_min})
    for k in ks:
        if k > n_min:
            continue
        bon = [bon_at_k([s for s, _ in v], [p for _, p in v], k, ties) for v in pool.values()]
        orc = [pass_at_k(len(v), int(sum(p for _, p in v)), k) for v in pool.values()]
        rows.append({"method": "bon", "k": k, "value": float(np.mean(bon)), "n_problems": len(pool)})
        rows.append({"method": "oracle", "k": k, "value": float(np.mean(orc)), "n_problems": len(pool)})
    return rows
