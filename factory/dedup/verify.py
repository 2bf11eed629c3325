"""Exact Jaccard verification of candidate pairs on shingle sets (64-bit n-gram hashes)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .shingle import pool_map, shingle_hashes


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


def _positions(pairs: pa.Table, doc_ids: pa.Array | Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Row of ``doc_ids`` holding each pair's ``doc_id_a`` / ``doc_id_b`` (the last one where an id repeats,
    as a ``{id: row}`` dict gives); an id missing from ``doc_ids`` raises ``KeyError``."""
    try:
        ids = doc_ids if isinstance(doc_ids, (pa.Array, pa.ChunkedArray)) else pa.array(doc_ids)
        if isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks()
        rev = ids[::-1]  # index_in finds the first occurrence; reversed, that is the last one
        out = []
        for col in ("doc_id_a", "doc_id_b"):
            idx = pc.index_in(pairs[col], value_set=rev)
            if idx.null_count:
                raise KeyError(pc.filter(pairs[col], pc.is_null(idx))[0].as_py())
            out.append(len(ids) - 1 - np.asarray(idx.to_numpy(zero_copy_only=False), dtype=np.int64))
        return out[0], out[1]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):  # ids Arrow cannot match: dict
        ids = doc_ids.to_pylist() if isinstance(doc_ids, (pa.Array, pa.ChunkedArray)) else list(doc_ids)
        pos = {d: i for i, d in enumerate(ids)}
        return (np.array([pos[d] for d in pairs["doc_id_a"].to_pylist()], dtype=np.int64),
                np.array([pos[d] for d in pairs["doc_id_b"].to_pylist()], dtype=np.int64))


_PAIR_BLOCK = 1 << 14


def _intersections(offsets, size, hashes, key, r, a, b, small_a) -> np.ndarray:
    """``|A ∩ B|`` for the pairs ``a[i], b[i]`` (see :func:`pair_jaccard`)."""
    up = np.uint64(64) - r
    q_doc = np.where(small_a, a, b)      # the set whose elements are looked up ...
    t_doc = np.where(small_a, b, a)      # ... in this one
    cnt = size[q_doc]
    pair_of = np.repeat(np.arange(a.size, dtype=np.int64), cnt)
    first = np.cumsum(cnt) - cnt
    elem = np.repeat(offsets[:-1][q_doc] - first, cnt) + np.arange(int(cnt.sum()), dtype=np.int64)
    x = hashes[elem]
    q = (t_doc[pair_of].astype(np.uint64) << up) | (x >> r)
    at = np.searchsorted(key, q)
    hit = np.zeros(q.size, dtype=bool)
    todo = np.arange(q.size)
    while todo.size:  # usually one round; more only where different hashes share a key
        at_t = at[todo]
        ok = at_t < key.size
        todo, at_t = todo[ok], at_t[ok]
        same_key = key[at_t] == q[todo]
        todo, at_t = todo[same_key], at_t[same_key]
        eq = hashes[at_t] == x[todo]
        hit[todo[eq]] = True
        todo = todo[~eq]
        at[todo] += 1
    return np.bincount(pair_of[hit], minlength=a.size)


def pair_jaccard(offsets: np.ndarray, hashes: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact Jaccard of sets ``a[i]`` and ``b[i]`` (rows of the CSR ``offsets, hashes``, each sorted and
    duplicate-free), vectorised; equal to :func:`jaccard_sorted` pair by pair.

    ``key = row << (64 - r) | hash >> r`` (``r`` bits hold a row) is non-decreasing over the CSR array, so each
    element of the smaller set of a pair is looked up in the other set's row with one ``searchsorted`` on
    ``key``; a hit is confirmed on the full hash, stepping over keys that tie without being equal.
    """
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    size = np.diff(offsets)
    sa, sb = size[a], size[b]
    inter = np.zeros(a.size, dtype=np.int64)
    if a.size and hashes.size:
        r = np.uint64(max(1, int(size.size).bit_length()))
        up = np.uint64(64) - r
        key = np.repeat(np.arange(size.size, dtype=np.uint64) << up, size)
        key |= hashes >> r
        small_a = sa <= sb

        def block(lo: int) -> np.ndarray:  # blocks of pairs keep the query arrays small; threads share them
            hi = lo + _PAIR_BLOCK
            return _intersections(offsets, size, hashes, key, r, a[lo:hi], b[lo:hi], small_a[lo:hi])

        inter = np.concatenate(pool_map(block, list(range(0, a.size, _PAIR_BLOCK)))).astype(np.int64)
    den = sa + sb - inter
    jac = np.zeros(a.size, dtype=np.float64)
    nz = den > 0
    jac[nz] = inter[nz] / den[nz]  # int/int -> float64, correctly rounded as Python's true division
    return jac


def verify_pairs(pairs: pa.Table, doc_ids: pa.Array | Sequence, texts: Sequence[str | None], n: int,
                 threshold: float) -> pa.Table:
    """Exact Jaccard for each candidate ``(doc_id_a, doc_id_b)``; keeps pairs with J >= threshold.

    ``doc_ids``/``texts`` must cover every id in ``pairs``; only those texts are shingled.
    Returns ``pairs`` columns plus ``jaccard`` (float64), filtered.
    """
    if pairs.num_rows == 0:
        return pairs.append_column("jaccard", pa.array([], pa.float64()))
    pa_pos, pb_pos = _positions(pairs, doc_ids)
    need, local = np.unique(np.concatenate([pa_pos, pb_pos]), return_inverse=True)
    local = local.reshape(-1)
    off, h = shingle_hashes([texts[g] for g in need.tolist()], n)
    jac = pair_jaccard(off, h, local[: pa_pos.size], local[pa_pos.size :])
    return pairs.append_column("jaccard", pa.array(jac)).filter(pa.array(jac >= threshold))
