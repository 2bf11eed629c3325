"""Incremental dedup (new docs against stored band hashes) equals a full dedup of the union."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from factory.dedup import MinHashParams, dedup, dedup_incremental
from factory.dedup.recall import plant_pairs

from ._data import leetcode, mbpp, mbpp_sanitized


def _docs(shared_data) -> pa.Table:
    san, mb = mbpp_sanitized(shared_data), mbpp(shared_data)
    lc = leetcode(shared_data, "v0.2.0-train")[:400]
    planted = plant_pairs([r["statement"] for r in lc], [0.75, 0.8, 0.85, 0.9, 1.0] * 8, 3, seed=3)
    texts = [r["prompt"] for r in san] + [r["text"] for r in mb] + [r["statement"] for r in lc] \
        + planted["dup_text"].to_pylist()
    codes = [r["code"] for r in san] + [r["code"] for r in mb] + [None] * (len(lc) + planted.num_rows)
    n = len(texts)
    rng = np.random.default_rng(0)
    return pa.table({
        "doc_id": [f"d{i:05d}" for i in rng.permutation(n)], "text": texts, "code": codes,
        "n_tests": rng.integers(0, 5, n), "source_priority": rng.integers(0, 3, n),
    })


def _norm(pairs: pa.Table, kind: str) -> set:
    t = pairs.filter(pa.compute.equal(pairs["kind"], kind))
    return {(min(a, b), max(a, b)) for a, b in zip(t["doc_id_a"].to_pylist(), t["doc_id_b"].to_pylist())}


def test_incremental_equals_full(shared_data):
    docs = _docs(shared_data)
    p = MinHashParams()
    full = dedup(docs, p)
    mask = np.zeros(docs.num_rows, bool)
    mask[np.random.default_rng(1).permutation(docs.num_rows)[: docs.num_rows // 3]] = True
    old, new = docs.filter(pa.array(~mask)), docs.filter(pa.array(mask))
    first = dedup(old, p)
    inc = dedup_incremental(new, first.bands, old, first.clusters, p)
    assert inc.bands.num_rows == full.bands.num_rows - first.bands.num_rows  # only new docs signed
    a = full.clusters.sort_by("doc_id")
    b = inc.clusters.sort_by("doc_id")
    assert a.equals(b)
    assert _norm(full.pairs, "near") == _norm(first.pairs, "near") | _norm(inc.pairs, "near")
    assert full.stats["n_removed"] > 100 and full.stats["n_removed"] == inc.stats["n_removed"]


def test_incremental_ignores_resubmitted_bands(shared_data):
    docs = _docs(shared_data).slice(0, 300)
    p = MinHashParams()
    first = dedup(docs.slice(0, 200), p)
    new = docs.slice(200)
    inc_a = dedup_incremental(new, first.bands, docs.slice(0, 200), first.clusters, p)
    # existing band table that already contains the new docs' rows: anti-join drops them
    doubled = pa.concat_tables([first.bands, inc_a.bands])
    from factory.dedup import cross_candidate_pairs
    c1 = cross_candidate_pairs(inc_a.bands, first.bands)
    c2 = cross_candidate_pairs(inc_a.bands, doubled)
    assert c2.num_rows == 0 and c1.num_rows >= 0
