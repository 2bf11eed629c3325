"""Recall of the LSH banding: theory ``1 - (1 - J**r)**b`` vs planted near-duplicates.

Planted pairs: a real text and a copy with random word edits (substitute 60 %, delete 20 %, insert 20 %, replacement
words drawn from the corpus vocabulary) applied one at a time until the exact shingle Jaccard reaches the target;
the pair keeps its *actual* Jaccard, which is the ground truth.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from .lsh import _conn, candidate_pairs
from .minhash import MinHashParams
from .pipeline import compute_bands
from .shingle import shingle_hashes, shingle_strings, tokenize
from .verify import verify_pairs


def _jac(x: list[str], y: list[str], n: int) -> float:
    a, b = set(shingle_strings(x, n)), set(shingle_strings(y, n))
    return len(a & b) / len(a | b) if a or b else 0.0


class _EditedJaccard:
    """Exact shingle Jaccard of an edited copy against the original, updated per word edit in O(n) (an edit at i changes
    only the shingles starting in [i - n + 1, i]); equal to :func:`_jac` at every step for copies of >= n tokens."""

    def __init__(self, tokens: list[str], n: int):
        self.n = n
        grams = [tuple(tokens[s:s + n]) for s in range(len(tokens) - n + 1)]
        self.base = set(grams)
        self.counts = Counter(grams)
        self.size = self.inter = len(self.base)   # distinct shingles of the copy; those also in the original

    def _grams(self, toks: list[str], lo: int, hi: int):
        return (tuple(toks[s:s + self.n]) for s in range(max(lo, 0), min(hi, len(toks) - self.n + 1)))

    def update(self, old: list[str], new: list[str], i: int, old_end: int, new_end: int) -> float:
        """``new`` is ``old`` with positions [i, old_end) replaced by [i, new_end); returns the new Jaccard."""
        lo = i - self.n + 1
        for g in self._grams(old, lo, old_end):
            c = self.counts[g] - 1
            if c:
                self.counts[g] = c
            else:
                del self.counts[g]
                self.size -= 1
                self.inter -= g in self.base
        for g in self._grams(new, lo, new_end):
            c = self.counts.get(g, 0)
            self.counts[g] = c + 1
            if not c:
                self.size += 1
                self.inter += g in self.base
        union = len(self.base) + self.size - self.inter
        return self.inter / union if union else 0.0


def edit_to_jaccard(tokens: list[str], target: float, n: int, rng: np.random.Generator,
                    vocab: Sequence[str], max_edits: int = 10_000) -> tuple[list[str], float]:
    """Copy of ``tokens`` edited word by word until shingle Jaccard ~ ``target``; returns
    ``(edited_tokens, actual_jaccard)`` (the closer of the last two steps around the target)."""
    cur, j = list(tokens), 1.0
    # the incremental Jaccard needs copies of >= n tokens (deletes stop at n + 1); shorter texts re-shingle
    jac = _EditedJaccard(tokens, n) if len(tokens) >= n else None
    for _ in range(max_edits):
        if j <= target:
            break
        nxt = list(cur)
        op, i = rng.random(), int(rng.integers(len(nxt)))
        word = vocab[int(rng.integers(len(vocab)))]
        if op < 0.6:
            nxt[i] = word
            span = (i + 1, i + 1)
        elif op < 0.8 and len(nxt) > n + 1:
            del nxt[i]
            span = (i + 1, i)
        else:
            nxt.insert(i, word)
            span = (i, i + 1)
        nj = jac.update(cur, nxt, i, *span) if jac else _jac(tokens, nxt, n)
        if nj <= target:
            return (nxt, nj) if target - nj < j - target else (cur, j)
        cur, j = nxt, nj
    return cur, j


def plant_pairs(texts: Sequence[str], targets: Sequence[float], n: int, seed: int = 0,
                min_tokens: int = 40) -> pa.Table:
    """One planted pair per target: columns ``base_idx, target, jaccard, base_text, dup_text``
    (texts are space-joined normalised tokens; bases drawn from texts with >= min_tokens words)."""
    rng = np.random.default_rng(seed)
    toks = [tokenize(t) for t in texts]
    pool = [i for i, t in enumerate(toks) if len(t) >= min_tokens]
    if not pool:
        raise ValueError("no text is long enough to plant pairs")
    vocab = sorted({w for t in toks for w in t})
    rows = {"base_idx": [], "target": [], "jaccard": [], "base_text": [], "dup_text": []}
    order = rng.permutation(pool)  # distinct bases while the pool lasts
    for k, tgt in enumerate(targets):
        i = int(order[k % len(order)])
        dup, j = edit_to_jaccard(toks[i], float(tgt), n, rng, vocab)
        for k, v in zip(rows, (i, float(tgt), j, " ".join(toks[i]), " ".join(dup))):
            rows[k].append(v)
    return pa.table(rows)


def _corpus(texts: Sequence[str], params: MinHashParams, pairs_per_target: int, targets, seed: int, con):
    """Planted pairs (base i, copy i + m), the corpus of their texts, its int64 ids and its LSH candidates."""
    planted = plant_pairs(texts, np.repeat(np.asarray(targets, float), pairs_per_target), params.ngram, seed)
    corpus = planted["base_text"].to_pylist() + planted["dup_text"].to_pylist()
    ids = pa.array(np.arange(len(corpus), dtype=np.int64))
    return planted, corpus, ids, candidate_pairs(compute_bands(ids, corpus, params), _conn(con))


def _all_pairs_jaccard(corpus: list[str], n: int, threshold: float) -> set[tuple[int, int]]:
    """Ground truth: every pair with exact shingle Jaccard >= threshold (sparse X @ X.T)."""
    off, h = shingle_hashes(corpus, n)
    _, col = np.unique(h, return_inverse=True)
    rows = np.repeat(np.arange(len(corpus)), np.diff(off))
    x = sp.csr_matrix((np.ones(h.size, np.int32), (rows, col)), shape=(len(corpus), int(col.max()) + 1))
    inter = sp.triu(x @ x.T, k=1).tocoo()
    size = np.diff(off)
    keep = inter.data / (size[inter.row] + size[inter.col] - inter.data) >= threshold
    return set(zip(inter.row[keep].tolist(), inter.col[keep].tolist()))


def recall_curve(texts: Sequence[str], params: MinHashParams = MinHashParams(),
                 targets: Sequence[float] = tuple(np.round(np.arange(0.4, 1.0001, 0.05), 2)),
                 pairs_per_target: int = 40, seed: int = 0, con: duckdb.DuckDBPyConnection | None = None) -> pa.Table:
    """``(jaccard, theoretical, measured, n_pairs)`` per 0.05-wide bin of actual Jaccard:
    ``measured`` = share of planted pairs that are LSH candidates (DuckDB band GROUP BY),
    ``theoretical`` = mean ``1-(1-J^r)^b`` over the same pairs, ``jaccard`` = bin mean."""
    planted, _, _, cand = _corpus(texts, params, pairs_per_target, targets, seed, con)
    cset = set(zip(cand["doc_id_a"].to_pylist(), cand["doc_id_b"].to_pylist()))
    hit = np.array([(a, a + planted.num_rows) in cset for a in range(planted.num_rows)])
    j = planted["jaccard"].to_numpy()
    edges = np.round(np.arange(0.0, 1.0001, 0.05), 2)
    b = np.clip(np.digitize(j, edges, right=False) - 1, 0, len(edges) - 1)
    b[j >= 1.0] = len(edges) - 1
    masks = [b == k for k in np.unique(b)]
    return pa.table({"jaccard": [float(j[m].mean()) for m in masks],
                     "theoretical": [float(params.candidate_probability(j[m]).mean()) for m in masks],
                     "measured": [float(hit[m].mean()) for m in masks], "n_pairs": [int(m.sum()) for m in masks]})


def planted_precision_recall(texts: Sequence[str], params: MinHashParams = MinHashParams(),
                             targets: Sequence[float] = tuple(np.round(np.arange(0.6, 1.0001, 0.02), 2)),
                             pairs_per_target: int = 20, seed: int = 0,
                             con: duckdb.DuckDBPyConnection | None = None) -> dict:
    """Precision/recall of (LSH candidates -> exact verification) at ``params.threshold`` against
    ground truth = ALL corpus pairs (planted or not) with exact Jaccard >= threshold."""
    planted, corpus, ids, cand = _corpus(texts, params, pairs_per_target, targets, seed, con)
    found_t = verify_pairs(cand, ids, corpus, params.ngram, params.threshold)
    found = set(zip(found_t["doc_id_a"].to_pylist(), found_t["doc_id_b"].to_pylist()))
    cands = set(zip(cand["doc_id_a"].to_pylist(), cand["doc_id_b"].to_pylist()))
    truth = _all_pairs_jaccard(corpus, params.ngram, params.threshold)
    tp = len(found & truth)
    return {"n_docs": len(corpus), "n_planted": planted.num_rows, "n_truth": len(truth), "n_candidates": len(cands),
            "n_found": len(found), "precision": tp / len(found) if found else 1.0,
            "recall": tp / len(truth) if truth else 1.0,
            "candidate_precision": len(cands & truth) / len(cands) if cands else 1.0,
            "candidate_recall": len(cands & truth) / len(truth) if truth else 1.0, "threshold": params.threshold}
