"""Trusted-side comparison policies (run in the parent, never in the sandbox).

* :func:`values_equal` -- Python ``==`` on deserialized plain values, except that ``nan`` equals
  ``nan`` and :class:`~factory.sandbox.serialize.Opaque` equals nothing.
* :func:`call_equal` -- EvalPlus-style: exact first, then if the expected value is a float or a
  sequence of floats, ``|out - exp| <= atol + rtol * |exp|`` elementwise (``atol`` defaults to
  1e-6 when not given, ``rtol`` to 1e-7).
* :func:`stdio_equal` -- stdout policies, on the BYTES the program wrote (never a lossy decoding; whitespace is
  ASCII whitespace, as in testlib): ``exact`` (line-exact after normalising ``\\r\\n``, right-stripping every
  line and dropping trailing blank lines), ``token`` (whitespace tokens), ``float`` (testlib's rules, below),
  ``casefold`` (tokens, case-insensitive, on each token's lossless decoding).

``float`` follows testlib's conventions (``rcmp``/``doubleCompare``): tokens are whitespace-separated and their
counts must match; where the *expected* token is an integer (``-?[0-9]+``) the output token must be exactly that
number (decimal arithmetic, any length, no tolerance: ``3.0`` is 3, ``1000001`` is not 1000000); where it is a
decimal number (``-?digits[.digits][e±k]``) the output token must also be one (``0.500_000``, ``inf``, ``nan``,
``0x10``, ``1_000`` are wrong answers) and is accepted when its absolute error is at most ``atol`` *or* its
relative error at most ``rtol`` (defaults 1e-6 each, a stated ``rtol`` of 0 means absolute only; 1e-15 slack for
binary rounding); any other expected token compares exactly. Values too large for a double (``1e400``) are never
within a tolerance.

Every comparison is total: whatever value or text a program produces, the answer is True or False, never an
exception (an overflow, a recursion limit, a value whose ``==`` raises all mean "not equal").
"""
from __future__ import annotations

import functools
import itertools
import math
import re
from decimal import Decimal

from .serialize import Opaque


def total(fn):
    """``fn`` made total: any exception while comparing (OverflowError, RecursionError, MemoryError, a value
    whose operators raise) is a False answer, so no program output can turn a verdict into an error."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs) -> bool:
        try:
            return bool(fn(*args, **kwargs))
        except Exception:  # noqa: BLE001 - a comparison that cannot complete is not an equality
            return False
    return wrapper


@total
def values_equal(a, b) -> bool:
    if isinstance(a, Opaque) or isinstance(b, Opaque):
        return False
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(values_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    if isinstance(a, (set, frozenset)) and isinstance(b, (set, frozenset)):
        return not any(isinstance(x, Opaque) for x in a) and a == b
    if type(a) in (list, tuple, dict, set, frozenset) or type(b) in (list, tuple, dict, set, frozenset):
        return False
    return bool(a == b)   # an == that raises: False (total)


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _close(o, e, atol, rtol) -> bool:
    if not (_is_num(o) and _is_num(e)):
        return False
    try:
        x, y = float(o), float(e)
    except OverflowError:   # an int too large for a double is not close to any float
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= atol + rtol * abs(y)


@total
def call_equal(out, exp, atol: float | None = None, rtol: float | None = None) -> bool:
    if values_equal(out, exp):
        return True
    atol = atol if atol else 1e-6
    rtol = 1e-7 if rtol is None else rtol
    if isinstance(exp, float):
        return _close(out, exp, atol, rtol)
    if not (isinstance(exp, (list, tuple)) and exp and all(isinstance(e, float) for e in exp)):
        return False   # a tolerance only for a float or a sequence of floats
    return (isinstance(out, (list, tuple)) and len(out) == len(exp)
            and all(_close(o, e, atol, rtol) for o, e in zip(out, exp)))


def as_bytes(text) -> bytes:
    """What a program wrote, as bytes: ``bytes`` unchanged; text encoded back losslessly (a decoding with
    ``surrogateescape`` returns to the exact bytes; other lone surrogates are kept as their UTF-8 forms)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


_WS = b" \t\n\r\x0b\x0c"   # a contest judge's whitespace: ASCII only (NBSP, U+2003, NEL are characters)


def _text(token: bytes) -> str:
    return token.decode("utf-8", "surrogateescape")   # lossless: an invalid byte is a character of its own


_INT_TOKEN = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TOKEN = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SLACK = 1e-15


def float_token_equal(actual: str, expected: str, atol: float, rtol: float) -> bool:
    """One token under testlib's rules (see the module docstring)."""
    if _INT_TOKEN.fullmatch(expected):   # exactly that integer (``3.0`` is 3; ``1000001`` is not 1000000)
        return bool(_DECIMAL_TOKEN.fullmatch(actual)) and Decimal(actual) == Decimal(expected)
    if not _DECIMAL_TOKEN.fullmatch(expected):
        return actual == expected
    if not _DECIMAL_TOKEN.fullmatch(actual):
        return False
    x, y = float(actual), float(expected)
    if not (math.isfinite(x) and math.isfinite(y)):
        return False
    diff = abs(x - y)
    return diff <= atol + _SLACK or diff <= rtol * abs(y) + _SLACK


CHUNK = 1 << 18   # MB-sized outputs are compared 256 KiB at a time: memory O(chunk), time O(size)
_WS_RE = re.compile(rb"[ \t\n\r\x0b\x0c]")


def _token_chunks(data: bytes, size: int = CHUNK):
    """The whitespace tokens of ``data``, a list per ~``size`` bytes (a chunk ends at whitespace, so no token is
    cut): never one list of every token (a 20 MB output of short numbers: ~130 MB per side)."""
    pos, n = 0, len(data)
    while pos < n:
        end = n
        if pos + size < n:
            m = _WS_RE.search(data, pos + size)
            end = m.start() if m else n
        tokens = data[pos:end].split()
        if tokens:
            yield tokens
        pos = end


def _tokens(data: bytes):
    return itertools.chain.from_iterable(_token_chunks(data))


def _canonical_tokens(data: bytes):
    """The token sequence as bytes chunks whose concatenation is ``b" ".join(data.split())`` (tokens hold no
    whitespace, so two outputs have the same tokens exactly when these streams are equal)."""
    for k, tokens in enumerate(_token_chunks(data)):
        yield (b" " if k else b"") + b" ".join(tokens)


def _canonical_lines(data: bytes, size: int = CHUNK):
    """The lines of ``data`` joined by ``\n``, as bytes chunks: ``\r\n`` / ``\r`` -> ``\n``, every line right-stripped
    of ASCII whitespace, trailing blank lines dropped. A chunk ends just after a ``\n`` (a ``\r\n`` is never
    cut), and trailing newlines are held back until more text follows them."""
    pos, n, pending = 0, len(data), b""
    while pos < n:
        end = n if pos + size >= n else data.find(b"\n", pos + size) + 1 or n
        lines = data[pos:end].replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        piece = pending + b"\n".join(ln.rstrip(_WS) for ln in lines)
        del lines
        body = piece.rstrip(b"\n")
        pending = piece[len(body):]
        if body:
            yield body
        pos = end


def _same_stream(xs, ys) -> bool:
    """Two iterables of bytes chunks have the same concatenation (chunk boundaries may differ)."""
    xs, ys = iter(xs), iter(ys)
    bx = by = b""
    while True:
        if not bx:
            bx = next(xs, None)
        if not by:
            by = next(ys, None)
        if bx is None or by is None:
            return bx is None and by is None
        k = min(len(bx), len(by))
        if bx[:k] != by[:k]:
            return False
        bx, by = bx[k:], by[k:]


def _same_tokens(ta, te, equal, same_ok=None) -> bool:
    """Token streams of equal length whose pairs are all ``equal``. An identical pair is accepted without the
    policy's rule where ``same_ok`` (default: always) allows, so only differing tokens pay for it."""
    end = object()
    for x, y in itertools.zip_longest(ta, te, fillvalue=end):
        if x is end or y is end:
            return False
        if not (x == y and (same_ok is None or same_ok(x))) and not equal(x, y):
            return False
    return True


@total
def stdio_equal(actual, expected, comparison: str = "exact",
                atol: float | None = None, rtol: float | None = None) -> bool:
    """``actual`` (the bytes the program wrote, or text) against ``expected`` as bytes, never through a lossy
    decoding (the byte 0xFF does not match an expected U+FFFD); whitespace is ASCII; ``casefold`` folds the case
    of each token's lossless decoding. Linear in the outputs' size, memory bounded by :data:`CHUNK`."""
    if comparison not in ("exact", "token", "casefold", "float"):
        return False   # an unknown policy accepts nothing (TestSpec validation names the field)
    a, e = as_bytes(actual), as_bytes(expected)
    if a == e and comparison != "float":   # float: an identical 1e400 is still no double within a tolerance
        return True
    if comparison == "exact":
        return _same_stream(_canonical_lines(a), _canonical_lines(e))
    if comparison == "token":
        return _same_stream(_canonical_tokens(a), _canonical_tokens(e))
    if comparison == "casefold":
        return _same_tokens(_tokens(a), _tokens(e), lambda x, y: _text(x).casefold() == _text(y).casefold())
    at = 1e-6 if atol is None else atol
    rt = 1e-6 if rtol is None else rtol
    return _same_tokens(_tokens(a), _tokens(e), lambda x, y: float_token_equal(_text(x), _text(y), at, rt),
                        same_ok=_float_same_ok)


def _float_same_ok(token: bytes) -> bool:
    """An identical token is equal under ``float`` unless it is a decimal too large for a double (``1e400``, or
    300+ digits with a point): those go through :func:`float_token_equal`, which never accepts them."""
    return len(token) < 300 and b"e" not in token and b"E" not in token
