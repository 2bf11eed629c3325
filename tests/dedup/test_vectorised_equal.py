"""The vectorised shingling / verification paths give exactly the reference results (issue #33).

Reference: ``tokenize`` (NFKC + casefold + ``re.findall``) text by text, ``fold_words_int`` per n-gram,
``jaccard_sorted`` per pair - the definitions the vectorised code must reproduce bit for bit.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from factory.dedup import MinHashParams, shingle, signatures
from factory.dedup.shingle import (
    WordHasher, _sort_within_docs, _vector_word_ids, _word_ids, fold_words_int, shingle_hashes, shingle_strings, tokenize,
)
from factory.dedup.verify import jaccard_sorted, pair_jaccard, verify_pairs

from ._data import humaneval, leetcode, mbpp, mbpp_sanitized

EDGE = [
    "", None, "x", "a b", "A B C", "   ", "!!!", "_", "a_b__c 9_9", "tab\tsep\nnew\rline", "\0a\0b\0", "caf\u00e9 CAF\u00c9",
    "\ufb01ne \ufb02ow", "Stra\u00dfe STRASSE", "\u0130stanbul", "x\u00b2 + y\u00b3 = \u2460", "\u2264 10^5, \u2212 1",
    "\u4e2d\u6587 \u5206\u8bcd test", "\U0001d400\U0001d401 math bold", "\u0645\u0631\u062d\u0628\u0627 world",
    "e\u0301 combining", "\u212b \u2126 compat", "emoji \U0001f600 here", "half\uff21\uff22 fullwidth", "nbsp\u00a0sep",
    "lone \ud800 surrogate word",
]


def _texts(d) -> list:
    out = [r["text"] for r in mbpp(d)] + [r["prompt"] for r in mbpp_sanitized(d)] + [r["prompt"] for r in humaneval(d)]
    out += [r["statement"] for r in leetcode(d, "v0.3.1-test")] + [r["statement"] for r in leetcode(d, "v0.2.0-test")]
    return out + EDGE


def _reference(texts, n, unique):
    off, flat = [0], []
    for t in texts:
        hs = [fold_words_int(s.split(" ")) for s in shingle_strings(tokenize(t), n)]
        flat += sorted(set(hs)) if unique else hs
        off.append(len(flat))
    return np.array(off, dtype=np.int64), np.array(flat, dtype=np.uint64)


def test_real_texts_include_non_ascii(shared_data):
    texts = _texts(shared_data)
    n_non_ascii = sum(1 for t in texts if t and not t.isascii())
    assert n_non_ascii > 400 and n_non_ascii < len(texts) - 400  # both paths are exercised


@pytest.mark.parametrize("n", [1, 3, 5])
@pytest.mark.parametrize("unique", [True, False])
def test_shingle_hashes_equal_reference(shared_data, n, unique):
    texts = _texts(shared_data)
    ref_off, ref_h = _reference(texts, n, unique)
    hasher = WordHasher()
    for order in (texts, texts[::-1]):  # second pass: words already in the shared hasher
        off, h = shingle_hashes(order, n, hasher, unique=unique)
        r_off, r_h = (ref_off, ref_h) if order is texts else _reference(order, n, unique)
        assert np.array_equal(off, r_off) and np.array_equal(h, r_h)


def test_word_ids_fast_equals_python_path(shared_data):
    texts = _texts(shared_data)
    h1, h2 = WordHasher(), WordHasher()
    lens1, ids1 = _vector_word_ids([t or "" for t in texts], h1)  # the vectorised path itself, no fallback
    lens2, ids2 = _word_ids(texts, h2, fast=False)
    assert np.array_equal(lens1, lens2)
    assert np.array_equal(h1.table()[ids1], h2.table()[ids2])
    assert lens1.sum() > 100_000


def test_parallel_split_equals_serial(shared_data, monkeypatch):
    texts = _texts(shared_data) * 3
    assert len(texts) >= shingle.PARALLEL_MIN_TEXTS
    monkeypatch.setattr(shingle, "cores", lambda: 2)
    off_p, h_p = shingle_hashes(texts, 3)
    sig_p = signatures(texts, MinHashParams())
    monkeypatch.setattr(shingle, "cores", lambda: 1)
    off_s, h_s = shingle_hashes(texts, 3)
    sig_s = signatures(texts, MinHashParams())
    assert np.array_equal(off_p, off_s) and np.array_equal(h_p, h_s)
    assert np.array_equal(sig_p, sig_s)


def test_sort_within_docs_matches_lexsort_with_ties():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 30, 500)
    h = rng.integers(0, 2**63, counts.sum(), dtype=np.int64).view(np.uint64)
    h[::3] = rng.integers(0, 64, h[::3].size).astype(np.uint64)  # many keys tie in their high bits
    h[1::7] = h[::7][: h[1::7].size]  # repeats
    doc = np.repeat(np.arange(counts.size), counts)
    order = np.lexsort((h, doc))
    assert np.array_equal(_sort_within_docs(h, counts), h[order]) and np.array_equal(doc, doc[order])


@pytest.mark.parametrize("small_values", [False, True])
def test_pair_jaccard_equals_jaccard_sorted(small_values):
    rng = np.random.default_rng(1)
    sets = []
    for _ in range(300):
        v = rng.integers(0, 60, rng.integers(0, 40)).astype(np.uint64)
        sets.append(np.unique(v if small_values else v * np.uint64(0x9E3779B97F4A7C15)))
    off = np.zeros(len(sets) + 1, dtype=np.int64)
    off[1:] = np.cumsum([s.size for s in sets])
    h = np.concatenate(sets)
    a, b = rng.integers(0, 300, 4000), rng.integers(0, 300, 4000)
    got = pair_jaccard(off, h, a, b)
    ref = np.array([jaccard_sorted(sets[x], sets[y]) for x, y in zip(a, b)])
    assert np.array_equal(got, ref) and (ref == 1.0).sum() > 0 and ((ref > 0) & (ref < 1)).sum() > 100


def test_verify_pairs_equals_pairwise_loop(shared_data):
    texts = _texts(shared_data)[:1500]
    ids = [f"d{i}" for i in range(len(texts))]
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, len(texts), 3000), rng.integers(0, len(texts), 3000)
    a = np.concatenate([a, np.arange(0, 400), np.arange(0, 400)])  # plus identical and neighbouring texts
    b = np.concatenate([b, np.arange(0, 400), np.arange(1, 401)])
    pairs = pa.table({"doc_id_a": [ids[i] for i in a], "doc_id_b": [ids[i] for i in b]})
    off, h = shingle_hashes(texts, 3)
    sets = [h[off[i]:off[i + 1]] for i in range(len(texts))]
    ref = [(ids[x], ids[y], jaccard_sorted(sets[x], sets[y])) for x, y in zip(a, b)]
    for threshold in (0.0, 0.3, 0.8):
        got = verify_pairs(pairs, pa.array(ids), texts, 3, threshold)
        want = [r for r in ref if r[2] >= threshold]
        assert list(zip(*[got[c].to_pylist() for c in ("doc_id_a", "doc_id_b", "jaccard")])) == want
    assert sum(r[2] == 1.0 for r in ref) >= 400 and sum(0 < r[2] < 1 for r in ref) > 50
    with pytest.raises(KeyError):
        verify_pairs(pa.table({"doc_id_a": ["d0"], "doc_id_b": ["missing"]}), pa.array(ids), texts, 3, 0.5)


def _band_table(shared_data, id_kind: str) -> pa.Table:
    from factory.dedup import compute_bands

    texts = _texts(shared_data)[:1200]
    texts = texts + [texts[5]] * 250 + [texts[7] + " extra words here"] * 30  # one oversized bucket, one small
    n = len(texts)
    ids = {"int64": pa.array(np.arange(n, dtype=np.int64) * 7 % n),
           "int32": pa.array((np.arange(n) * 11 % n).astype(np.int32)),
           "string": pa.array([f"s/{(i * 13) % n}" for i in range(n)]),
           "large_string": pa.array([f"L{(i * 17) % n:05d}" for i in range(n)], pa.large_string())}[id_kind]
    return compute_bands(ids, texts, MinHashParams())


@pytest.mark.parametrize("id_kind", ["int64", "int32", "string", "large_string"])
@pytest.mark.parametrize("max_bucket", [200, 3, 1])
def test_candidate_pairs_numpy_equals_duckdb_query(shared_data, id_kind, max_bucket):
    from factory.dedup import lsh

    bands = _band_table(shared_data, id_kind)
    got = lsh.candidate_pairs(bands, max_bucket=max_bucket)
    want = lsh._candidate_pairs_sql(bands, None, max_bucket)
    assert got.equals(want) and got.schema == want.schema
    assert got.num_rows > 200 and int(pa.compute.max(got["n_bands"]).as_py()) == MinHashParams().bands


def test_candidate_pairs_repeated_rows_and_empty():
    from factory.dedup import lsh

    bands = pa.table({"doc_id": pa.array([1, 2, 2, 3, 1, 4, 5], pa.int64()),
                      "band": pa.array([0, 0, 0, 0, 1, 1, 1], pa.int16()),
                      "band_hash": pa.array([9, 9, 9, 9, 4, 4, 5], pa.int64())})
    for mb in (200, 2):
        assert lsh.candidate_pairs(bands, max_bucket=mb).equals(lsh._candidate_pairs_sql(bands, None, mb))
    empty = bands.slice(0, 0)
    assert lsh.candidate_pairs(empty).equals(lsh._candidate_pairs_sql(empty, None, 200))


def test_thread_cap_from_environment(monkeypatch):
    monkeypatch.setenv("FACTORY_DEDUP_THREADS", "1")
    assert shingle.cores() == 1
    monkeypatch.setenv("FACTORY_DEDUP_THREADS", "not-a-number")
    assert shingle.cores() >= 1


def test_pool_works_in_a_forked_child(shared_data, monkeypatch):
    import multiprocessing as mp

    monkeypatch.setattr(shingle, "cores", lambda: 2)
    texts = _texts(shared_data) * 3
    want = shingle_hashes(texts, 3)[1]  # the parent's pool now has threads
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_child_hash_count, (texts,)).get(timeout=60)
    assert got == int(want.size)


def _child_hash_count(texts) -> int:
    shingle.cores = lambda: 2  # the child must use a pool of its own, not the parent's dead threads
    return int(shingle_hashes(texts, 3)[1].size)
