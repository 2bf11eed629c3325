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
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence

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
    if not text:
        return []
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def word_hash64(word: str) -> int:
    """First 8 bytes of SHA-1 of the UTF-8 word, little-endian (datasketch ``sha1_hash64``)."""
    return int.from_bytes(hashlib.sha1(word.encode("utf-8")).digest()[:8], "little")


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 64-bit finaliser (bijection on uint64), elementwise."""
    h = h ^ (h >> _S33)
    h = h * _F1
    h = h ^ (h >> _S33)
    h = h * _F2
    return h ^ (h >> _S33)


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
    """Caches word -> uint64 hash across calls (vocabulary grows as texts arrive)."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._hashes: list[int] = []

    def ids(self, tokens: list[str]) -> list[int]:
        ids = self._ids
        try:  # fast path: every word already known
            return [ids[t] for t in tokens]
        except KeyError:
            pass
        get = ids.get
        out = []
        for t in tokens:
            i = get(t)
            if i is None:
                i = ids[t] = len(self._hashes)
                self._hashes.append(word_hash64(t))
            out.append(i)
        return out

    def table(self) -> np.ndarray:
        return np.array(self._hashes, dtype=np.uint64)


def shingle_hashes(
    texts: Sequence[str | None], n: int, hasher: WordHasher | None = None, unique: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Hash the word n-grams of many texts at once.

    Returns ``(offsets, hashes)``: ``hashes[offsets[i]:offsets[i+1]]`` are the uint64
    shingle hashes of ``texts[i]`` (sorted and de-duplicated when ``unique``, else in text order).
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    hasher = hasher or WordHasher()
    lens = np.zeros(len(texts), dtype=np.int64)
    flat: list[int] = []
    for i, t in enumerate(texts):
        ids = hasher.ids(tokenize(t))
        lens[i] = len(ids)
        flat.extend(ids)
    words = hasher.table()[np.asarray(flat, dtype=np.int64)] if flat else np.zeros(0, np.uint64)
    starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    nsh = np.where(lens >= n, lens - n + 1, np.minimum(lens, 1))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(nsh, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        long_docs = np.flatnonzero(lens >= n)
        if long_docs.size:  # every start position p of a full n-gram, vectorised over all docs
            cnt = nsh[long_docs]
            doc_rep = np.repeat(long_docs, cnt)
            within = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            pos = starts[doc_rep] + within
            h = np.full(pos.size, _H0, dtype=np.uint64)
            for k in range(n):
                h = fmix64(h * _K + words[pos + k])
            out[offsets[doc_rep] + within] = h
        for length in range(1, n):  # short texts: one shingle over all tokens
            docs = np.flatnonzero(lens == length)
            if docs.size:
                h = np.full(docs.size, _H0, dtype=np.uint64)
                for k in range(length):
                    h = fmix64(h * _K + words[starts[docs] + k])
                out[offsets[docs]] = h
    if not unique or out.size == 0:
        return offsets, out
    doc_of = np.repeat(np.arange(len(texts)), nsh)
    order = np.lexsort((out, doc_of))
    h, d = out[order], doc_of[order]
    keep = np.ones(h.size, dtype=bool)
    keep[1:] = (h[1:] != h[:-1]) | (d[1:] != d[:-1])
    counts = np.bincount(d[keep], minlength=len(texts))
    uoff = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=uoff[1:])
    return uoff, h[keep]
