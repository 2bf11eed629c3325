"""Union-find and the keeper rule."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from factory.dedup import clusters, union_find


def _naive(n, edges):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x
    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [find(i) for i in range(n)]


def test_union_find_matches_naive():
    rng = np.random.default_rng(0)
    for n, m in [(1, 0), (10, 5), (500, 400), (2000, 3000)]:
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        assert union_find(n, a, b).tolist() == _naive(n, zip(a.tolist(), b.tolist()))
    chain = np.arange(999)
    assert set(union_find(1000, chain, chain + 1).tolist()) == {0}


def test_keeper_rule():
    docs = pa.table({
        "doc_id": ["e", "d", "c", "b", "a", "z"],
        "n_tests": [5, 9, 9, 9, None, 1],
        "source_priority": [0, 2, 1, 1, 0, 0],
    })
    pairs = pa.table({"doc_id_a": ["e", "d", "c", "b"], "doc_id_b": ["d", "c", "b", "a"]})
    cl = clusters(pairs, docs)
    # most tests (9: d, c, b) -> best source priority (1: c, b) -> smallest id -> "b"
    assert cl["cluster_id"].to_pylist() == ["b"] * 5 + ["z"]
    assert cl["is_keeper"].to_pylist() == [False, False, False, True, False, True]
    assert cl["cluster_size"].to_pylist() == [5] * 5 + [1]
    assert clusters(pairs, docs.drop_columns(["n_tests", "source_priority"]))["cluster_id"].to_pylist()[0] == "a"
