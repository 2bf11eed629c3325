"""Word tokenisation and hashed word n-gram shingles (vectorised with NumPy).

Recipe ``words-v1`` (recorded in :class:`factory.dedup.minhash.MinHashParams`):

1. ``text`` -> ``unicodedata.normalize("NFKC", text).casefold()``;
2. tokens = ``re.findall(r"\\w+", ...)`` (punctuation and whitespace are dropped);
3. word hash ``w = sha1(token.utf8)[:8]`` read little-endian (= ``datasketch.hashfunc.sha1_hash64``);
4. n-gram hash: ``h = H0; for w in gram: h = fmix64(h * K + w)`` (all mod 2**64);
   a text with 1..n-1 tokens gives ONE shingle over all its tokens; an empty text gives none.

The 64-bit n-gram hashes are the set elements used for exact Jaccard. Their low 32 bits
(``shingle_hash32``) feed MinHash; :func:`shingle_hash32` is the same function as a
``datasketch`` ``hashfunc`` taking the shingle bytes ``" ".join(gram).encode()``.

:func:`shingle_hashes` computes exactly this without per-token Python (see :func:`_word_ids`), on one thread
per core for large inputs (``FACTORY_DEDUP_THREADS`` caps the count); :func:`tokenize` stays the definition.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

RECIPE = "words-v1"
_WORD = re.compile(r"\w+")
_H0 = np.uint64(0x243F6A8885A308D3)
_K = np.uint64(0x9E3779B97F4A7C15)
_M64 = (1 << 64) - 1
_F1, _F2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)


def tokenize(text: str | None) -> list[str]:
    """NFKC + casefold, then the ``\\w+`` runs of ``text`` (None -> [])."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold()) if text else []


def word_hash64(word: str) -> int:
    """First 8 bytes of SHA-1 of the UTF-8 word, little-endian (datasketch ``sha1_hash64``)."""
    return int.from_bytes(hashlib.sha1(word.encode("utf-8")).digest()[:8], "little")


def fmix64_inplace(h: np.ndarray, tmp: np.ndarray) -> None:
    """MurmurHash3's 64-bit finaliser fmix64 (a bijection on uint64) in place on a uint64 array, elementwise
    (``tmp``: scratch of the same shape)."""
    for f in (_F1, _F2, None):
        np.right_shift(h, _S33, out=tmp)
        np.bitwise_xor(h, tmp, out=h)
        if f is not None:
            np.multiply(h, f, out=h)


def _fmix64_int(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _M64
    return h ^ (h >> 33)


def fold_words_int(words: Iterable[str]) -> int:
    """Pure-Python 64-bit shingle hash of a token sequence (reference for the NumPy path)."""
    h = int(_H0)
    for w in words:
        h = _fmix64_int((h * int(_K) + word_hash64(w)) & _M64)
    return h


def shingle_hash32(shingle: bytes) -> int:
    """datasketch-compatible ``hashfunc``: low 32 bits of the ``words-v1`` hash of
    ``b" ".join(tokens)`` (tokens never contain spaces)."""
    return fold_words_int(shingle.decode("utf-8").split(" ")) & 0xFFFFFFFF


def shingle_strings(tokens: Sequence[str], n: int) -> list[str]:
    """The shingles of a token list as strings (``" ".join(gram)``), in order, with repeats."""
    if not tokens:
        return []
    if len(tokens) < n:
        return [" ".join(tokens)]
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


class WordHasher:
    """Caches word -> uint64 hash across calls (vocabulary grows as texts arrive).

    Thread-safe: :func:`shingle_hashes` may run on two threads sharing one hasher; a word's id can then
    differ from run to run, never its hash (ids only index :meth:`table`).
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._hashes: list[int] = []
        self._table = np.zeros(0, dtype=np.uint64)
        self._lock = threading.Lock()

    def ids(self, tokens: list[str]) -> list[int]:
        ids = self._ids
        with contextlib.suppress(KeyError):  # fast path: every word already known
            return [ids[t] for t in tokens]
        with self._lock:
            get = ids.get
            out = []
            for t in tokens:
                i = get(t)
                if i is None:
                    self._hashes.append(word_hash64(t))
                    i = ids[t] = len(self._hashes) - 1
                out.append(i)
            return out

    def table(self) -> np.ndarray:
        """uint64 word hashes indexed by id (grown incrementally, not rebuilt per call)."""
        with self._lock:
            n = len(self._hashes)
            if self._table.size < n:
                self._table = np.concatenate([self._table, np.array(self._hashes[self._table.size:n], dtype=np.uint64)])
            return self._table


# Vectorised ``tokenize``: the ``\w+`` runs are found with NumPy on the code points after NFKC + casefold (per text; on
# ASCII text the identity and ``lower``, and ``\w`` is ``[0-9A-Za-z_]``); a non-ASCII code point is classified once by
# Python's own ``\w`` (cached), so the tokens are exactly those of :func:`tokenize`.
_ASCII_WORD = np.zeros(128, dtype=np.int8)
_ASCII_WORD[np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_", np.uint8)] = 1
_CHUNK_TEXTS = 16384


@functools.cache
def _is_word_cp(cp: int) -> int:
    return int(_WORD.fullmatch(chr(cp)) is not None)


def _vector_word_ids(texts: list[str], hasher: WordHasher) -> tuple[np.ndarray, np.ndarray]:
    """``(lens, ids)`` of non-None texts without a per-token Python step: ASCII texts as bytes, the others as
    code points after NFKC + casefold (see :func:`_runs_word_ids`); the two groups are merged in text order."""
    asc = np.fromiter((t.isascii() for t in texts), dtype=bool, count=len(texts))
    if asc.all():
        return _runs_word_ids(texts, hasher, True)
    if not asc.any():
        return _runs_word_ids(texts, hasher, False)
    a_idx, o_idx = np.flatnonzero(asc), np.flatnonzero(~asc)
    a_lens, a_ids = _runs_word_ids([texts[i] for i in a_idx], hasher, True)
    o_lens, o_ids = _runs_word_ids([texts[i] for i in o_idx], hasher, False)
    lens = np.zeros(len(texts), dtype=np.int64)
    lens[a_idx], lens[o_idx] = a_lens, o_lens
    starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    ids = np.empty(int(lens.sum()), dtype=np.int64)
    for sub, sub_lens, sub_ids in ((a_idx, a_lens, a_ids), (o_idx, o_lens, o_ids)):
        if sub_ids.size:  # each group's tokens to their texts' slots
            first = np.cumsum(sub_lens) - sub_lens
            ids[np.repeat(starts[sub] - first, sub_lens) + np.arange(sub_ids.size)] = sub_ids
    return lens, ids


def _runs_word_ids(texts: list[str], hasher: WordHasher, ascii_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """The texts are joined by NUL (not a word character, so no token crosses a text boundary), the word runs
    found on the bytes (``ascii_only``) or UTF-32 code points, the compacted tokens dictionary-encoded by Arrow,
    and only the distinct words looked up in ``hasher``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(texts)
    if ascii_only:
        norm = texts
        u = np.frombuffer("\0".join(texts).lower().encode("ascii"), dtype=np.uint8)
        word = _ASCII_WORD[u]
    else:
        norm = [unicodedata.normalize("NFKC", t).casefold() for t in texts]
        # lone surrogates pass as their code points (never word characters, like in ``tokenize``)
        u = np.frombuffer("\0".join(norm).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        word = np.zeros(u.size, dtype=np.int8)
        lo = u < 128
        word[lo] = _ASCII_WORD[u[lo]]
        hi = np.flatnonzero(~lo)
        if hi.size:
            cps, inv = np.unique(u[hi], return_inverse=True)
            word[hi] = np.array([_is_word_cp(int(c)) for c in cps], dtype=np.int8)[inv]
    edge = np.diff(word, prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edge == 1)
    tlen = np.flatnonzero(edge == -1) - starts
    doc_end = np.cumsum(np.fromiter(map(len, norm), dtype=np.int64, count=n) + 1) - 1
    lens = np.diff(np.searchsorted(starts, doc_end), prepend=0).astype(np.int64)
    if starts.size == 0:
        return lens, np.zeros(0, dtype=np.int64)
    if u.itemsize == 1:
        chars = u[word.view(np.bool_)]
    else:  # back to UTF-8 with every non-word code point as NUL: the tokens are then the runs of non-NUL bytes
        b = np.frombuffer((u * word.view(np.bool_)).tobytes().decode("utf-32-le").encode("utf-8"), dtype=np.uint8)
        nz = (b != 0).view(np.int8)
        e8 = np.diff(nz, prepend=np.int8(0), append=np.int8(0))
        tlen = np.flatnonzero(e8 == -1) - np.flatnonzero(e8 == 1)  # same tokens, in the same order, as bytes
        chars = b[nz.view(np.bool_)]
    toff = np.zeros(starts.size + 1, dtype=np.int64)
    np.cumsum(tlen, out=toff[1:])
    words = pa.Array.from_buffers(pa.large_string(), starts.size, [None, pa.py_buffer(toff), pa.py_buffer(chars)])
    enc = pc.dictionary_encode(words)
    return lens, np.asarray(hasher.ids(enc.dictionary.to_pylist()), dtype=np.int64)[enc.indices.to_numpy()]


def _word_ids(texts: Sequence[str | None], hasher: WordHasher, fast: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per-text token counts and the concatenated word ids (into ``hasher.table()``) of ``texts``, in order.

    ``fast``: :func:`_vector_word_ids` (same tokens as :func:`tokenize`, so the result does not depend on
    ``fast``); texts that are not all ``str``/None take the reference path. Callers pass at most
    :data:`_CHUNK_TEXTS` texts (:func:`shingle_hashes_serial` cuts them).
    """
    if fast and len(texts) >= 4:
        with contextlib.suppress(AttributeError):  # not all str/None
            return _vector_word_ids([t if t else "" for t in texts], hasher)
    lens = np.zeros(len(texts), dtype=np.int64)   # the reference path: tokenize text by text
    flat: list[int] = []
    for i, t in enumerate(texts):
        ids = hasher.ids(tokenize(t))
        lens[i] = len(ids)
        flat.extend(ids)
    return lens, np.asarray(flat, dtype=np.int64)


def _sort_within_docs(h: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``h`` sorted within each document's CSR segment (``counts`` elements each): the order of
    ``np.lexsort((h, doc))``, where the document of every position is unchanged.

    One 64-bit sort: key = document in the high bits, the hash's high bits below; elements whose keys tie
    (equal hashes, or hashes equal in those high bits) are then ordered by their full hash.
    """
    nd = counts.size
    b = max(1, int(nd).bit_length())
    if b > 40:  # not a realistic batch; the two-key sort
        return h[np.lexsort((h, np.repeat(np.arange(nd), counts)))]
    key = np.repeat(np.arange(nd, dtype=np.uint64) << np.uint64(64 - b), counts)
    key |= h >> np.uint64(b)
    order = np.argsort(key)
    hs, ks = h[order], key[order]
    eq = ks[1:] == ks[:-1]
    if eq.any():
        tied = np.zeros(hs.size, dtype=bool)
        tied[1:] |= eq
        tied[:-1] |= eq
        pos = np.flatnonzero(tied)
        new_run = np.ones(pos.size, dtype=bool)
        new_run[1:] = ~eq[pos[1:] - 1]
        run = np.cumsum(new_run)
        sub = hs[pos]
        hs[pos] = sub[np.lexsort((sub, run))]
    return hs


# Texts are independent and the heavy steps (NumPy kernels, Arrow dictionary encoding) release the GIL, so large
# calls are split into contiguous parts over threads, one per core (no pickling of texts as processes would need).
PARALLEL_MIN_TEXTS = 4096
_POOL: ThreadPoolExecutor | None = None
_POOL_PREFIX = "factory-dedup"


def _drop_pool_in_child() -> None:  # a forked child has none of the parent's pool threads: start afresh
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_pool_in_child)


def cores() -> int:
    """Threads for large inputs: the CPUs this process may run on, capped by ``$FACTORY_DEDUP_THREADS``."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        n = os.cpu_count() or 1
    cap = os.environ.get("FACTORY_DEDUP_THREADS", "")
    return max(1, min(n, int(cap)) if cap.strip().isdigit() else n)


def parallel_map(fn, texts: Sequence) -> list:
    """``[fn(part) for part in parts]``: ``texts`` cut into up to :func:`cores` contiguous parts of at least
    ``PARALLEL_MIN_TEXTS / 2`` texts, run on a shared thread pool (one part, on this thread, for small inputs
    or when already on a pool thread)."""
    n = len(texts)
    k = min(cores(), n // (PARALLEL_MIN_TEXTS // 2)) if n >= PARALLEL_MIN_TEXTS else 1
    step = -(-n // k) if n else 1
    return pool_map(fn, [texts[i : i + step] for i in range(0, n, step)] if k > 1 else [texts])


def pool_map(fn, items: list) -> list:
    """``[fn(x) for x in items]`` on the shared thread pool (in order; on this thread for one item, one core,
    or when already on a pool thread, so nested calls never wait on the pool)."""
    global _POOL
    if len(items) <= 1 or cores() == 1 or threading.current_thread().name.startswith(_POOL_PREFIX):
        return [fn(x) for x in items]
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=cores(), thread_name_prefix=_POOL_PREFIX)
    return list(_POOL.map(fn, items))


def shingle_hashes(texts: Sequence[str | None], n: int, hasher: WordHasher | None = None,
                   unique: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Hash the word n-grams of many texts at once.

    Returns ``(offsets, hashes)``: ``hashes[offsets[i]:offsets[i+1]]`` are the uint64
    shingle hashes of ``texts[i]`` (sorted and de-duplicated when ``unique``, else in text order).
    From :data:`PARALLEL_MIN_TEXTS` texts on, contiguous parts run on one thread per core (same result).
    """
    hasher = hasher if hasher is not None else WordHasher()   # n < 1: ValueError from shingle_hashes_serial
    return _concat_csr(parallel_map(lambda part: shingle_hashes_serial(part, n, hasher, unique), texts))


def shingle_hashes_serial(texts: Sequence[str | None], n: int, hasher: WordHasher,
                          unique: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """:func:`shingle_hashes` on the calling thread, :data:`_CHUNK_TEXTS` texts at a time (bounded temporaries)."""
    if n < 1:
        raise ValueError("n must be >= 1")
    return _concat_csr([_shingle_chunk(texts[i : i + _CHUNK_TEXTS], n, hasher, unique)
                        for i in range(0, max(len(texts), 1), _CHUNK_TEXTS)])


def _concat_csr(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if len(parts) == 1:
        return parts[0]
    offsets = [parts[0][0]]
    for off, _ in parts[1:]:
        offsets.append(off[1:] + offsets[-1][-1])
    return np.concatenate(offsets), np.concatenate([h for _, h in parts])


def _shingle_chunk(texts: Sequence[str | None], n: int, hasher: WordHasher, unique: bool) -> tuple[np.ndarray, np.ndarray]:
    lens, flat = _word_ids(texts, hasher)
    words = hasher.table()[flat] if flat.size else np.zeros(0, np.uint64)
    starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    nsh = np.where(lens >= n, lens - n + 1, np.minimum(lens, 1))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(nsh, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    if out.size == 0:
        return offsets, out
    # h[p] folds words[p .. p+k] after round k, over all token positions at once (shifted slices, no gathers);
    # a text with L < n tokens takes h[start] after round L-1, a longer one h[start .. start+L-n] after round n-1.
    t = words.size
    h = np.full(t, _H0, dtype=np.uint64)
    tmp = np.empty(t, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            m = t - k
            hk, tk = h[:m], tmp[:m]
            np.multiply(hk, _K, out=hk)
            np.add(hk, words[k:], out=hk)
            fmix64_inplace(hk, tk)
            docs = np.flatnonzero(lens == k + 1) if k + 1 < n else None
            if docs is not None and docs.size:
                out[offsets[docs]] = h[starts[docs]]
    long_docs = np.flatnonzero(lens >= n)
    if long_docs.size:
        src = np.zeros(t + 1, dtype=np.int8)  # +1 on a long text's first start, -1 after its last
        np.add.at(src, starts[long_docs], 1)
        np.add.at(src, starts[long_docs] + nsh[long_docs], -1)
        dst = np.zeros(out.size + 1, dtype=np.int8)
        np.add.at(dst, offsets[long_docs], 1)
        np.add.at(dst, offsets[long_docs + 1], -1)
        out[np.cumsum(dst[:-1], dtype=np.int8).view(np.bool_)] = h[np.cumsum(src[:-1], dtype=np.int8).view(np.bool_)]
    if not unique:
        return offsets, out
    h = _sort_within_docs(out, nsh)
    keep = np.empty(h.size, dtype=bool)
    keep[0] = True
    np.not_equal(h[1:], h[:-1], out=keep[1:])
    keep[offsets[:-1][nsh > 0]] = True  # a document's first shingle
    kept = np.zeros(h.size + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    return kept[offsets], h[keep]
