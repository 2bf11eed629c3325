"""Exact Jaccard verification of candidate pairs on shingle sets (64-bit n-gram hashes)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .shingle import shingle_hashes


def jaccard_sorted(x: np.ndarray, y: np.ndarray) -> float:
    """Jaccard of two sorted, duplicate-free arrays (two empty sets -> 0.0)."""
    if x.size == 0 and y.size == 0:
        return 0.0
    inter = np.intersect1d(x, y, assume_unique=True).size
    return inter / (x.size + y.size - inter)


def exact_jaccard(a: str | None, b: str | None, n: int) -> float:
    """Exact Jaccard of the word n-gram shingle sets of two texts."""
    off, h = shingle_hashes([a, b], n)
    return jaccard_sorted(h[off[0] : off[1]], h[off[1] : off[2]])


def verify_pairs(
    pairs: pa.Table, doc_ids: pa.Array | Sequence, texts: Sequence[str | None], n: int, threshold: float
) -> pa.Table:
    """Exact Jaccard for each candidate ``(doc_id_a, doc_id_b)``; keeps pairs with J >= threshold.

    ``doc_ids``/``texts`` must cover every id in ``pairs``; only those texts are shingled.
    Returns ``pairs`` columns plus ``jaccard`` (float64), filtered.
    """
    if pairs.num_rows == 0:
        return pairs.append_column("jaccard", pa.array([], pa.float64()))
    ids = doc_ids.to_pylist() if isinstance(doc_ids, (pa.Array, pa.ChunkedArray)) else list(doc_ids)
    pos = {d: i for i, d in enumerate(ids)}
    a_ids, b_ids = pairs["doc_id_a"].to_pylist(), pairs["doc_id_b"].to_pylist()
    need = sorted({pos[d] for d in a_ids} | {pos[d] for d in b_ids})
    local = {g: k for k, g in enumerate(need)}
    off, h = shingle_hashes([texts[g] for g in need], n)
    sets = [h[off[k] : off[k + 1]] for k in range(len(need))]
    jac = np.fromiter(
        (jaccard_sorted(sets[local[pos[x]]], sets[local[pos[y]]]) for x, y in zip(a_ids, b_ids)),
        dtype=np.float64,
        count=len(a_ids),
    )
    out = pairs.append_column("jaccard", pa.array(jac))
    return out.filter(pa.array(jac >= threshold))
