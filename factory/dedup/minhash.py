"""Vectorised MinHash signatures (bit-identical to ``datasketch.MinHash``) and LSH band hashes.

datasketch 2.0 ``scheme="affine32"`` (the 2.0 default) computes, per input hash ``h`` (uint32): ``x = fmix32(h)``
(MurmurHash3 finaliser) then ``a_k * x + b_k mod 2**32`` with ``a = 2*randint(0, 2**31) + 1``, ``b = randint(0, 2**32)``
drawn from ``np.random.RandomState(seed)``; the signature is the per-permutation minimum (``0xFFFFFFFF`` for an empty
set). Here a numba-compiled loop (the ``fast`` extra) computes it in registers, one document row at a time; without
numba the shingles of a chunk of documents are permuted as one ``(num_perm, shingles)`` uint32 matrix and reduced per
document with ``np.minimum.reduceat`` along its contiguous rows (same signatures).
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import asdict, dataclass, field
from collections.abc import Sequence
from importlib.metadata import version

import numpy as np
import pyarrow as pa

from .shingle import (RECIPE, _H0, _K, WordHasher, cores, fmix64_inplace, parallel_map, pool_map,
                      shingle_hashes_serial, shingle_strings, tokenize)

try:  # only recorded, never required
    DATASKETCH_VERSION = version("datasketch")
except Exception:  # pragma: no cover
    DATASKETCH_VERSION = "not-installed"

EMPTY = np.uint32(0xFFFFFFFF)
HASHFUNCS = ("words64-low32", "sha1_32")


@dataclass(frozen=True)
class MinHashParams:
    """Everything that determines a signature or a band hash; persist ``as_dict()`` with them.

    Defaults: 128 permutations, 18 bands x 7 rows (126 of 128 hashes used), word 3-grams (code-RL statements are
    short), threshold 0.8 (exact Jaccard of shingle sets): P(candidate | J) = 1 - (1 - J**7)**18 is 0.985 at J=0.8;
    lower-J candidates are removed by exact verification.

    ``hashfunc``: ``"words64-low32"`` (default; low 32 bits of the ``words-v1`` 64-bit n-gram hash,
    see :mod:`factory.dedup.shingle`, equal to datasketch with ``hashfunc=shingle_hash32``) or
    ``"sha1_32"`` (datasketch's default ``sha1_hash32`` of the shingle bytes; slower, Python hashing).
    """

    num_perm: int = 128
    bands: int = 18
    rows: int = 7
    ngram: int = 3
    threshold: float = 0.8
    seed: int = 1
    scheme: str = "affine32"
    hashfunc: str = "words64-low32"
    recipe: str = RECIPE
    datasketch_version: str = field(default=DATASKETCH_VERSION)

    def __post_init__(self) -> None:
        if self.scheme != "affine32":
            raise ValueError("only datasketch scheme 'affine32' is implemented")
        if self.hashfunc not in HASHFUNCS:
            raise ValueError(f"hashfunc must be one of {HASHFUNCS}")
        if self.bands * self.rows > self.num_perm or min(self.bands, self.rows, self.ngram) < 1:
            raise ValueError("need bands*rows <= num_perm and positive bands, rows, ngram")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")

    def as_dict(self) -> dict:
        return asdict(self)

    def candidate_probability(self, j: float | np.ndarray) -> float | np.ndarray:
        """Theoretical P(candidate | Jaccard j) = 1 - (1 - j**rows)**bands."""
        return 1.0 - (1.0 - np.asarray(j, dtype=float) ** self.rows) ** self.bands


def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The affine32 ``(a, b)`` uint32 arrays datasketch draws for ``(num_perm, seed)``."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    return a, gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 32-bit finaliser on a uint32 array."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _rows_kernel(offsets, h, a, b, sig):  # pragma: no cover (runs compiled, see _compiled_kernel)
    """``sig[d] = min over i in offsets[d]:offsets[d+1] of a * fmix32(h[i]) + b mod 2**32`` (uint32 throughout).

    Four shingles per pass over a document's row, so the row stays in vector registers between them; a
    document's last shingle stands in for the missing ones of its last pass (a repeat leaves every minimum).
    """
    lo = offsets[0]
    x = np.empty(offsets[-1] - lo, dtype=np.uint32)
    for i in range(x.size):  # fmix32, in uint64 lanes: numba widens uint32 arithmetic
        v = np.uint64(h[lo + i])
        v ^= v >> np.uint64(16)
        v = (v * np.uint64(0x85EBCA6B)) & np.uint64(0xFFFFFFFF)
        v ^= v >> np.uint64(13)
        v = (v * np.uint64(0xC2B2AE35)) & np.uint64(0xFFFFFFFF)
        x[i] = np.uint32(v ^ (v >> np.uint64(16)))
    for d in range(sig.shape[0]):
        row = sig[d]
        row[:] = np.uint32(0xFFFFFFFF)
        i, end = offsets[d] - lo, offsets[d + 1] - lo
        while i < end:
            x0, x1, x2, x3 = x[i], x[min(i + 1, end - 1)], x[min(i + 2, end - 1)], x[min(i + 3, end - 1)]
            for k in range(a.size):
                ak, bk = a[k], b[k]
                v0 = min(np.uint32(ak * x0 + bk), np.uint32(ak * x1 + bk))
                v1 = min(np.uint32(ak * x2 + bk), np.uint32(ak * x3 + bk))
                row[k] = min(row[k], min(v0, v1))
            i += 4


@functools.cache
def _compiled_kernel():
    """:func:`_rows_kernel` compiled by numba (the ``fast`` extra; cached on disk), or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(cache=True, nogil=True)(_rows_kernel)


def minhash_from_hashes(offsets: np.ndarray, h32: np.ndarray, params: MinHashParams,
                        compiled: bool | None = None) -> np.ndarray:
    """Signatures ``(n_docs, num_perm)`` uint32 from per-doc uint32 input hashes (CSR layout).

    ``compiled`` (default: when numba is installed): :func:`_rows_kernel` (multiply, add and minimum in registers;
    one thread per core over contiguous document ranges), else :func:`_numpy_kernel`: the same signatures.
    """
    a, b = permutations(params.num_perm, params.seed)
    h32 = np.ascontiguousarray(h32, dtype=np.uint32)
    kernel = _compiled_kernel() if compiled is not False else None
    if kernel is None:
        if compiled:
            raise ImportError("the compiled MinHash kernel needs numba: pip install 'code-rl-factory[fast]'")
        return _numpy_kernel(offsets, fmix32(h32), a, b)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    sig = np.empty((len(offsets) - 1, params.num_perm), dtype=np.uint32)
    parts = min(cores(), max(1, int(offsets[-1]) // (1 << 16)))  # parts of about equal shingle counts
    cuts = [0, *np.searchsorted(offsets, np.arange(1, parts) * offsets[-1] // parts).tolist(), len(sig)]
    pool_map(lambda r: kernel(offsets[r[0]:r[1] + 1], h32, a, b, sig[r[0]:r[1]]), list(zip(cuts, cuts[1:])))
    return sig


def _numpy_kernel(offsets: np.ndarray, x: np.ndarray, a: np.ndarray, b: np.ndarray, chunk: int = 1 << 14) -> np.ndarray:
    """The NumPy path of :func:`minhash_from_hashes` on ``x = fmix32(h32)``.

    Each chunk of whole documents is permuted as one ``(num_perm, shingles)`` matrix into a reused buffer
    (permutations on rows, so the per-document minimum runs along contiguous memory).
    """
    a, b = a[:, None], b[:, None]
    sig = np.full((a.size, len(offsets) - 1), EMPTY, dtype=np.uint32)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    ends = offsets[nonempty + 1]
    buf = np.empty((a.size, chunk), dtype=np.uint32)
    i = 0
    while i < nonempty.size:  # chunks of whole documents, ~chunk columns each
        lo = offsets[nonempty[i]]
        j = max(int(np.searchsorted(ends, lo + chunk, side="right")), i + 1)
        docs = nonempty[i:j]
        width = int(ends[j - 1] - lo)
        if width > buf.shape[1]:          # one document longer than a chunk
            buf = np.empty((a.size, width), dtype=np.uint32)
        phv = buf[:, :width]
        np.multiply(a, x[lo:lo + width][None, :], out=phv)
        phv += b
        sig[:, docs] = np.minimum.reduceat(phv, offsets[docs] - lo, axis=1)
        i = j
    return np.ascontiguousarray(sig.T)


def _sha1_32_hashes(texts: Sequence[str | None], n: int) -> tuple[np.ndarray, np.ndarray]:
    offsets, flat = [0], []
    for t in texts:
        for s in set(shingle_strings(tokenize(t), n)):
            flat.append(int.from_bytes(hashlib.sha1(s.encode("utf-8")).digest()[:4], "little"))
        offsets.append(len(flat))
    return np.asarray(offsets, dtype=np.int64), np.asarray(flat, dtype=np.uint32)


def signatures(texts: Sequence[str | None], params: MinHashParams = MinHashParams(),
               hasher: WordHasher | None = None) -> np.ndarray:
    """MinHash signatures ``(len(texts), num_perm)`` uint32 of the word n-gram shingle sets.

    Equal to ``datasketch.MinHash(num_perm, seed, scheme="affine32", hashfunc=H)`` updated with ``b" ".join(gram)``
    for every n-gram, where ``H`` is :func:`~factory.dedup.shingle.shingle_hash32` (``hashfunc="words64-low32"``) or
    datasketch's default ``sha1_hash32`` (``"sha1_32"``). Empty texts get the all-``0xFFFFFFFF`` signature. Pass one
    ``hasher`` across batches to hash each distinct word only once.
    """
    if params.hashfunc == "sha1_32":
        return minhash_from_hashes(*_sha1_32_hashes(texts, params.ngram), params)
    hasher = hasher if hasher is not None else WordHasher()
    parts = parallel_map(lambda part: _words_signatures(part, params, hasher), texts)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _words_signatures(texts: Sequence[str | None], params: MinHashParams, hasher: WordHasher) -> np.ndarray:
    # repeats of a shingle leave every minimum unchanged, so the per-text sort/de-dup is skipped
    offsets, h64 = shingle_hashes_serial(texts, params.ngram, hasher, unique=False)
    return minhash_from_hashes(offsets, h64.astype(np.uint32), params)  # low 32 bits


def band_hashes(sig: np.ndarray, params: MinHashParams) -> np.ndarray:
    """``(n_docs, bands)`` int64: band k folds signature columns ``k*rows .. k*rows+rows-1``."""
    sig64 = sig[:, : params.bands * params.rows].astype(np.uint64).reshape(len(sig), params.bands, params.rows)
    h = np.full((len(sig), params.bands), _H0, dtype=np.uint64)
    tmp = np.empty_like(h)
    with np.errstate(over="ignore"):
        for j in range(params.rows):
            h = h * _K + sig64[:, :, j]
            fmix64_inplace(h, tmp)
    return h.view(np.int64)


def band_table(doc_ids: pa.Array | Sequence, sig: np.ndarray, params: MinHashParams) -> pa.Table:
    """Arrow table ``(doc_id, band int16, band_hash int64)``, one row per document and band.

    Documents with an empty shingle set (all-``0xFFFFFFFF`` signature) get no rows.
    """
    doc_ids = doc_ids if isinstance(doc_ids, (pa.Array, pa.ChunkedArray)) else pa.array(doc_ids)
    keep = np.flatnonzero(~(sig == EMPTY).all(axis=1))
    bh = band_hashes(sig[keep], params)
    return pa.table({"doc_id": doc_ids.take(pa.array(np.repeat(keep, params.bands))),
                     "band": pa.array(np.tile(np.arange(params.bands, dtype=np.int16), keep.size)),
                     "band_hash": pa.array(bh.reshape(-1))})
