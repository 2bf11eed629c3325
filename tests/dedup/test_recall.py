"""Planted near-duplicates: precision/recall at the threshold and the recall curve vs theory."""
from __future__ import annotations

import numpy as np
import pytest

from factory.dedup import MinHashParams, plant_pairs, planted_precision_recall, recall_curve, exact_jaccard

from ._data import leetcode


@pytest.fixture(scope="module")
def texts(shared_data):
    return [r["statement"] for r in leetcode(shared_data, "v0.2.0-train")]


def test_planted_pairs_hit_targets(texts):
    t = plant_pairs(texts, [0.9, 0.8, 0.7, 0.6], n=3, seed=1)
    for tgt, j, a, b in zip(*(t[c].to_pylist() for c in ("target", "jaccard", "base_text", "dup_text"))):
        assert abs(j - tgt) < 0.05
        assert exact_jaccard(a, b, 3) == pytest.approx(j)


def test_precision_recall_at_threshold(texts):
    r = planted_precision_recall(texts, MinHashParams(), pairs_per_target=20, seed=0)
    assert r["n_truth"] >= 150
    assert r["precision"] >= 0.95 and r["recall"] >= 0.95
    assert r["candidate_recall"] == r["recall"]  # verification never drops a true pair


def test_recall_curve_follows_theory(texts):
    p = MinHashParams()
    assert p.candidate_probability(0.8) == pytest.approx(1 - (1 - 0.8 ** 7) ** 18)
    curve = recall_curve(texts, p, pairs_per_target=30, seed=0).to_pylist()
    assert {"jaccard", "theoretical", "measured", "n_pairs"} <= set(curve[0])
    for row in curve:
        if row["n_pairs"] >= 15:  # binomial noise: 4 sigma plus a small model slack
            sd = np.sqrt(max(row["theoretical"] * (1 - row["theoretical"]), 0.01) / row["n_pairs"])
            assert abs(row["measured"] - row["theoretical"]) <= 4 * sd + 0.05, row
    high = [r for r in curve if r["jaccard"] >= 0.8]
    assert high and all(r["measured"] >= 0.95 for r in high)
    # a weak band config must fail the same bar: the test can fail
    weak = recall_curve(texts, MinHashParams(bands=4, rows=16), pairs_per_target=10, seed=0).to_pylist()
    assert any(r["measured"] < 0.95 for r in weak if 0.8 <= r["jaccard"] < 0.9)


def _reference_edit_to_jaccard(tokens, target, n, rng, vocab, max_edits=10_000):
    """The planting loop as first written: both texts re-shingled after every edit."""
    from factory.dedup.recall import _jac

    cur, j = list(tokens), 1.0
    for _ in range(max_edits):
        if j <= target:
            break
        nxt = list(cur)
        op, i = rng.random(), int(rng.integers(len(nxt)))
        word = vocab[int(rng.integers(len(vocab)))]
        if op < 0.6:
            nxt[i] = word
        elif op < 0.8 and len(nxt) > n + 1:
            del nxt[i]
        else:
            nxt.insert(i, word)
        nj = _jac(tokens, nxt, n)
        if nj <= target:
            return (nxt, nj) if target - nj < j - target else (cur, j)
        cur, j = nxt, nj
    return cur, j


@pytest.mark.parametrize("n", [1, 3, 5])
def test_incremental_jaccard_equals_reshingling(n):
    """#33: the O(n)-per-edit Jaccard gives the same copies and the same Jaccard (bit for bit) as re-shingling,
    including repeated shingles, texts of n tokens and edits at both ends."""
    from factory.dedup.recall import edit_to_jaccard

    rng = np.random.default_rng(n)
    vocab = ["a", "b", "c", "d", "e", "f", "g", "the", "of", "x1"]   # small: repeats and re-created shingles
    for case in range(60):
        tokens = [vocab[k] for k in rng.integers(len(vocab), size=int(rng.integers(n, 80)))]
        target = float(rng.uniform(0.0, 0.95))
        seed = int(rng.integers(1 << 30))
        got = edit_to_jaccard(tokens, target, n, np.random.default_rng(seed), vocab)
        want = _reference_edit_to_jaccard(tokens, target, n, np.random.default_rng(seed), vocab)
        assert got == want, (case, len(tokens), target)
