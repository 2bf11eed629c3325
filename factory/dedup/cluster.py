"""Clusters from verified pairs (vectorised union-find) and a deterministic keeper per cluster.

Keeper rule (first difference wins): most ``n_tests`` (null counts as -1), then smallest
``source_priority`` (lower = preferred source; null = least preferred), then smallest ``doc_id``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def union_find(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Root (smallest index) of every element's component given edges ``a[i] -- b[i]``.

    Vectorised hook-to-min + pointer jumping: each round hooks the larger root of every
    unmerged edge under the smaller one, then compresses all paths.
    """
    parent = np.arange(n, dtype=np.int64)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    while a.size:
        ra, rb = parent[a], parent[b]
        m = ra != rb
        if not m.any():
            break
        a, b, ra, rb = a[m], b[m], ra[m], rb[m]
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:
            pp = parent[parent]
            if np.array_equal(pp, parent):
                break
            parent = pp
    return parent


def _col(docs: pa.Table, name: str, default, dtype) -> np.ndarray:
    if name not in docs.column_names:
        return np.full(docs.num_rows, default, dtype=dtype)
    return pc.fill_null(docs[name], default).to_numpy().astype(dtype)


def keeper_rank(docs: pa.Table) -> np.ndarray:
    """Position of each row in keeper-preference order (0 = best)."""
    ntests = _col(docs, "n_tests", -1, np.int64)
    prio = _col(docs, "source_priority", np.iinfo(np.int64).max, np.int64)
    id_rank = np.argsort(pc.sort_indices(docs["doc_id"]).to_numpy())   # argsort of a permutation: its inverse
    return np.argsort(np.lexsort((id_rank, prio, -ntests)))


def clusters(pairs: pa.Table, docs: pa.Table) -> pa.Table:
    """Cluster every row of ``docs`` (``doc_id`` [, ``n_tests``, ``source_priority``]).

    ``pairs`` has ``doc_id_a, doc_id_b`` (ids must be in ``docs``; others raise).
    Returns ``(doc_id, cluster_id, cluster_size, is_keeper)`` in ``docs`` order, where
    ``cluster_id`` is the keeper's ``doc_id`` (singletons are their own cluster).
    """
    ids = docs["doc_id"]
    if pc.count_distinct(ids).as_py() != docs.num_rows:
        raise ValueError("doc_id must be unique")
    ia = pc.index_in(pairs["doc_id_a"], value_set=ids)
    ib = pc.index_in(pairs["doc_id_b"], value_set=ids)
    if ia.null_count or ib.null_count:
        raise ValueError("pairs reference doc_ids missing from docs")
    root = union_find(docs.num_rows, ia.to_numpy(), ib.to_numpy())
    rank = keeper_rank(docs)
    best = np.full(docs.num_rows, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, root, rank)
    keeper = np.argsort(rank)[best[root]]
    size = np.bincount(root, minlength=docs.num_rows)[root]
    return pa.table({"doc_id": ids, "cluster_id": pc.take(ids, pa.array(keeper)),
                     "cluster_size": pa.array(size.astype(np.int64)),
                     "is_keeper": pa.array(keeper == np.arange(docs.num_rows))})


def with_source_priority(docs: pa.Table, prefer: list[str]) -> pa.Table:
    """``docs`` plus the keeper rule's ``source_priority`` column: a source's index in ``prefer`` (null: not listed)."""
    rank = {s: i for i, s in enumerate(prefer)}
    prio = pa.array([rank.get(s) for s in docs["source"].to_pylist()], pa.int64())
    return docs.append_column("source_priority", prio)
