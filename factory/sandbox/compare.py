"""Trusted-side comparison policies (run in the parent, never in the sandbox).

* :func:`values_equal` -- Python ``==`` on deserialized plain values, except that ``nan`` equals
  ``nan`` and :class:`~factory.sandbox.serialize.Opaque` equals nothing.
* :func:`call_equal` -- EvalPlus-style: exact first, then if the expected value is a float or a
  sequence of floats, ``|out - exp| <= atol + rtol * |exp|`` elementwise (``atol`` defaults to
  1e-6 when not given, ``rtol`` to 1e-7).
* :func:`stdio_equal` -- stdout policies: ``exact`` (line-exact after normalising ``\\r\\n``,
  right-stripping every line and dropping trailing blank lines), ``token`` (whitespace tokens),
  ``float`` (tokens; numeric tokens within ``atol``/``rtol``, defaults 1e-6/1e-6), ``casefold``
  (tokens, case-insensitive).
"""
from __future__ import annotations

import math

from .serialize import Opaque


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
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_floats(x) -> bool:
    if isinstance(x, float):
        return True
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(e, float) for e in x)


def _close(o, e, atol, rtol) -> bool:
    return _is_num(o) and _is_num(e) and abs(o - e) <= atol + rtol * abs(e)


def call_equal(out, exp, atol: float | None = None, rtol: float | None = None) -> bool:
    if values_equal(out, exp):
        return True
    if not _is_floats(exp):
        return False
    atol = atol if atol else 1e-6
    rtol = 1e-7 if rtol is None else rtol
    if isinstance(exp, float):
        return _close(out, exp, atol, rtol)
    if not isinstance(out, (list, tuple)) or len(out) != len(exp):
        return False
    return all(_close(o, e, atol, rtol) for o, e in zip(out, exp))


def _lines(text: str) -> list[str]:
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _num_token_equal(a: str, b: str, atol: float, rtol: float) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return abs(x - y) <= atol + rtol * abs(y)


def stdio_equal(actual: str, expected: str, comparison: str = "exact",
                atol: float | None = None, rtol: float | None = None) -> bool:
    if comparison == "exact":
        return _lines(actual) == _lines(expected)
    ta, te = actual.split(), expected.split()
    if comparison == "token":
        return ta == te
    if comparison == "casefold":
        return [t.casefold() for t in ta] == [t.casefold() for t in te]
    if comparison == "float":
        at = 1e-6 if atol is None else atol
        rt = 1e-6 if rtol is None else rtol
        return len(ta) == len(te) and all(_num_token_equal(a, b, at, rt) for a, b in zip(ta, te))
    raise ValueError(f"unknown comparison {comparison!r}")
