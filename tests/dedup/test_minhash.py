"""Signatures must equal datasketch's MinHash (affine32) bit for bit on real problem texts."""
from __future__ import annotations

import numpy as np
import pytest
from datasketch import MinHash

from factory.dedup import MinHashParams, band_table, permutations, shingle_hash32, shingle_hashes, signatures
from factory.dedup.minhash import _compiled_kernel, minhash_from_hashes
from factory.dedup.shingle import fold_words_int, shingle_strings, tokenize

from ._data import humaneval, leetcode, mbpp


def _datasketch(text, p: MinHashParams, **kw) -> np.ndarray:
    m = MinHash(num_perm=p.num_perm, seed=p.seed, scheme="affine32", **kw)
    for s in shingle_strings(tokenize(text), p.ngram):
        m.update(s.encode("utf-8"))
    return m.hashvalues


@pytest.mark.parametrize("num_perm,seed", [(128, 1), (256, 7), (64, 42)])
def test_permutations_match_datasketch(num_perm, seed):
    a, b = permutations(num_perm, seed)
    ref = MinHash(num_perm=num_perm, seed=seed, scheme="affine32").permutations
    assert np.array_equal(a, ref[0]) and np.array_equal(b, ref[1])


def test_shingle_hash_numpy_equals_python_reference(shared_data):
    texts = [r["text"] for r in mbpp(shared_data)[:200]] + ["", "one", "two words", "a b c d"]
    off, h = shingle_hashes(texts, 3, unique=False)
    for i, t in enumerate(texts):
        ref = [fold_words_int(s.split(" ")) for s in shingle_strings(tokenize(t), 3)]
        assert h[off[i]:off[i + 1]].tolist() == ref


@pytest.mark.parametrize("params", [MinHashParams(), MinHashParams(num_perm=256, bands=32, rows=8, ngram=5, seed=7)])
def test_signatures_bit_identical_to_datasketch(shared_data, params):
    texts = [r["text"] for r in mbpp(shared_data)] + [r["prompt"] for r in humaneval(shared_data)]
    texts += [r["statement"] for r in leetcode(shared_data, "v0.3.1-test")[:100]] + ["", "x"]
    sig = signatures(texts, params)
    for i, t in enumerate(texts):
        assert np.array_equal(sig[i], _datasketch(t, params, hashfunc=shingle_hash32)), i


@pytest.mark.parametrize("compiled", [False, True])
def test_kernels_bit_identical_to_datasketch(shared_data, compiled):
    """The numba kernel (split over threads on large inputs) and the NumPy one: the same signatures as
    datasketch, with a permutation count that is no multiple of a vector width and documents of 1..n shingles."""
    if compiled and _compiled_kernel() is None:
        pytest.skip("numba not installed (the fast extra)")
    p = MinHashParams(num_perm=200, bands=20, rows=10, seed=3)
    texts = [r["statement"] for r in leetcode(shared_data, "v0.2.0-train")] + ["", "x", "a b c", "a b c d e"]
    off, h = shingle_hashes(texts, p.ngram, unique=False)
    assert off[-1] > 1 << 17  # more than one thread's part for the compiled kernel
    sig = minhash_from_hashes(off, h.astype(np.uint32), p, compiled=compiled)
    other = minhash_from_hashes(off, h.astype(np.uint32), p, compiled=not compiled) if _compiled_kernel() else sig
    assert np.array_equal(sig, other)
    for i in [*range(0, len(texts) - 4, 97), *range(len(texts) - 4, len(texts))]:
        assert np.array_equal(sig[i], _datasketch(texts[i], p, hashfunc=shingle_hash32)), i


def test_sha1_mode_equals_datasketch_default_hashfunc(shared_data):
    p = MinHashParams(hashfunc="sha1_32")
    texts = [r["prompt"] for r in humaneval(shared_data)]
    sig = signatures(texts, p)
    for i, t in enumerate(texts):
        assert np.array_equal(sig[i], _datasketch(t, p)), i  # datasketch default sha1_hash32


def test_jaccard_estimates_equal_datasketch(shared_data):
    p = MinHashParams()
    texts = [r["text"] for r in mbpp(shared_data)[:60]]
    sig = signatures(texts, p)
    mh = [MinHash(num_perm=128, hashfunc=shingle_hash32, hashvalues=s, scheme="affine32") for s in sig]
    for i in range(0, 60, 7):
        for j in range(1, 60, 5):
            assert mh[i].jaccard(mh[j]) == pytest.approx(float(np.mean(sig[i] == sig[j])))


def test_band_table_and_params():
    p = MinHashParams()
    sig = signatures(["a b c d e f", "", "a b c d e f"], p)
    bt = band_table(["x", "y", "z"], sig, p)
    assert bt.column_names == ["doc_id", "band", "band_hash"]
    assert bt.num_rows == 2 * p.bands  # empty doc has no bands
    x = bt.filter(bt["doc_id"].to_numpy(zero_copy_only=False) == "x")["band_hash"].to_pylist()
    z = bt.filter(bt["doc_id"].to_numpy(zero_copy_only=False) == "z")["band_hash"].to_pylist()
    assert x == z and len(set(x)) == p.bands
    d = p.as_dict()
    for k in ("datasketch_version", "scheme", "seed", "num_perm", "bands", "rows", "ngram", "recipe", "hashfunc"):
        assert k in d
    assert d["scheme"] == "affine32" and d["datasketch_version"].startswith("2.")
    assert p.candidate_probability(0.8) >= 0.95
    with pytest.raises(ValueError):
        MinHashParams(bands=20, rows=7)
    with pytest.raises(ValueError):
        MinHashParams(scheme="legacy")
