"""Value serialization shared by the sandboxed child and the trusted parent.

Format: compact JSON text.  JSON-native values map directly (``None``, ``bool``, ``int``, finite
``float``, ``str``, ``list``, and ``dict`` whose keys are all ``str`` not starting with ``$``).
Everything else is a *tagged* object, i.e. a JSON object with exactly one key starting with ``$``:

=====================  ==============================================
``{"$f": "nan"}``       float nan / ``"inf"`` / ``"-inf"`` / ``"-0.0"``
``{"$ih": "0x.."}``     int too large for JSON decimal conversion (hex)
``{"$t": [...]}``       tuple
``{"$s": [...]}``       set (elements sorted by their serialized text)
``{"$fs": [...]}``      frozenset (sorted likewise)
``{"$b": "base64"}``    bytes; ``{"$ba": ...}`` bytearray
``{"$c": [re, im]}``    complex
``{"$d": [[k, v],..]}`` dict with non-str or ``$``-prefixed keys
``{"$nd": [...]}``      numpy array (``tolist()``; deserializes to a list)
``{"$m": [a, b, g]}``   ``re.Match``: span and matched text (deserializes to :class:`MatchValue`)
``{"$o": "TypeName"}``  opaque (unsupported type, cycle, too deep) -> never equal to anything
=====================  ==============================================

Serialization is purely structural: subclasses of builtins are read through the base-class slots
and no user-defined method (``__eq__``, ``__iter__``, ``__repr__`` ...) is ever called, so a rigged
object serializes as opaque (or as the plain value it really holds) and cannot fake equality.
"""
from __future__ import annotations

import sys

import base64
import json
import math

_MAX_DEPTH = 400
_BIG_INT_BITS = 12000


def _stdlib_truth(v) -> str:
    """'|truthy' / '|falsy' for instances of standard-library types (e.g. re.Match), whose truth value a test
    may assert (`assert re.search(...)`); program-defined classes get nothing, so a rigged __bool__ never passes."""
    module = (getattr(type(v), "__module__", "") or "").split(".")[0]
    if module != "builtins" and module not in sys.stdlib_module_names:
        return ""
    try:
        return "|truthy" if bool(v) else "|falsy"
    except Exception:  # noqa: BLE001
        return ""


class Opaque:
    """Deserialized stand-in for a value that could not be serialized; equal to nothing.

    ``truth`` is the value's truthiness when it is a standard-library object (else None: unknown)."""
    __slots__ = ("type_name", "truth")

    def __init__(self, type_name: str):
        name, _, truth = type_name.partition("|")
        self.type_name = name
        self.truth = {"truthy": True, "falsy": False}.get(truth)

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    __hash__ = object.__hash__

    def __repr__(self):
        return f"<opaque {self.type_name}>"


class MatchValue:
    """Deserialized ``re.Match``: equal to another match with the same span and matched text; always truthy."""
    __slots__ = ("span", "text")

    def __init__(self, span, text):
        self.span, self.text = tuple(span), text

    def __eq__(self, other):
        return type(other) is MatchValue and (self.span, self.text) == (other.span, other.text)

    def __hash__(self):
        return hash((self.span, self.text))

    def __repr__(self):
        return f"<re.Match object; span={self.span}, match={self.text!r}>"


def _match_tree(v, depth, stack):
    re_mod = sys.modules.get("re")
    if re_mod is None or type(v) is not re_mod.Match:  # re.Match cannot be subclassed
        return None
    m = re_mod.Match
    return {"$m": [m.start(v), m.end(v), _tree(m.group(v, 0), depth, stack)]}


def _type_name(v) -> str:
    try:
        return str(type.__dict__["__qualname__"].__get__(type(v)))[:80]
    except Exception:  # noqa: BLE001
        return "?"


def _float(x: float):
    if x != x:
        return {"$f": "nan"}
    if x in (math.inf, -math.inf):
        return {"$f": "inf" if x > 0 else "-inf"}
    if x == 0.0 and math.copysign(1.0, x) < 0:
        return {"$f": "-0.0"}
    return x


def _numpy_tree(v, depth, stack):
    np = __import__("sys").modules.get("numpy")
    if np is None:
        return None
    if isinstance(v, np.generic):
        return _tree(v.item(), depth, stack)
    if type(v) is np.ndarray:
        return {"$nd": _tree(v.tolist(), depth, stack)}
    return None


def _tree(v, depth=0, stack=None, fallback=None):
    """Plain tree of ``v``; ``fallback(v)`` (RPC: handles, structural objects) is asked for anything not plain."""
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v if v.bit_length() < _BIG_INT_BITS else {"$ih": hex(v)}
    if t is float:
        return _float(v)
    if depth > _MAX_DEPTH:
        return {"$o": "too-deep"}
    if stack is None:
        stack = set()
    if isinstance(v, bool):  # pragma: no cover - bool cannot be subclassed
        return bool(v)
    if isinstance(v, int):
        return _tree(int.__int__(v), depth, stack, fallback)
    if isinstance(v, float):
        return _float(float.__float__(v))
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, (bytes, bytearray)):
        tag = "$b" if isinstance(v, bytes) else "$ba"
        return {tag: base64.b64encode(bytes(memoryview(v))).decode()}
    if isinstance(v, complex):
        c = complex.__complex__(v) if hasattr(complex, "__complex__") else complex(v.real, v.imag)
        return {"$c": [_float(c.real), _float(c.imag)]}
    key = id(v)
    if key in stack:
        return {"$o": "cycle"}
    stack.add(key)
    try:
        if isinstance(v, list):
            return [_tree(x, depth + 1, stack, fallback) for x in list.__iter__(v)]
        if isinstance(v, tuple):
            return {"$t": [_tree(x, depth + 1, stack, fallback) for x in tuple.__iter__(v)]}
        if isinstance(v, (set, frozenset)):
            it = set.__iter__(v) if isinstance(v, set) else frozenset.__iter__(v)
            items = sorted((_tree(x, depth + 1, stack, fallback) for x in it), key=_dumps)
            return {("$s" if isinstance(v, set) else "$fs"): items}
        if isinstance(v, dict):
            pairs = [(k, x) for k, x in dict.items(v)]
            if all(type(k) is str and not k.startswith("$") for k, _ in pairs):
                return {k: _tree(x, depth + 1, stack, fallback) for k, x in pairs}
            return {"$d": [[_tree(k, depth + 1, stack, fallback), _tree(x, depth + 1, stack, fallback)] for k, x in pairs]}
        if t is MatchValue:  # a match that crossed the RPC stays a match (truthy, compared by span + text)
            return {"$m": [v.span[0], v.span[1], _tree(v.text, depth + 1, stack)]}
        if t is Opaque:
            truth = {True: "|truthy", False: "|falsy"}.get(v.truth, "")
            return {"$o": v.type_name + truth}
        got = _numpy_tree(v, depth + 1, stack)
        if got is None:
            got = _match_tree(v, depth + 1, stack)
        if got is not None:
            return got
        if fallback is not None:
            return fallback(v)
        return {"$o": _type_name(v) + _stdlib_truth(v)}
    finally:
        stack.discard(key)


def _dumps(tree) -> str:
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def serialize_value(value) -> str:
    """Serialize ``value`` to the tagged-JSON text described in the module docstring."""
    try:
        return _dumps(_tree(value))
    except (RecursionError, ValueError, TypeError, OverflowError) as exc:
        return _dumps({"$o": f"unserializable:{type(exc).__name__}"})


_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}


def _hashable(x):
    try:
        hash(x)
        return x
    except TypeError:
        return Opaque("unhashable")


def _untree(t, hook=None):
    """Inverse of :func:`_tree`; ``hook(tag, payload)`` decodes tags this module does not know (RPC)."""
    if isinstance(t, list):
        return [_untree(x, hook) for x in t]
    if not isinstance(t, dict):
        return t
    if len(t) == 1:
        (k, x), = t.items()
        if k.startswith("$"):
            if k == "$f":
                return _FLOATS[x]
            if k == "$ih":
                return int(x, 16)
            if k == "$t":
                return tuple(_untree(e, hook) for e in x)
            if k == "$s":
                return {_hashable(_untree(e, hook)) for e in x}
            if k == "$fs":
                return frozenset(_hashable(_untree(e, hook)) for e in x)
            if k in ("$b", "$ba"):
                raw = base64.b64decode(x)
                return raw if k == "$b" else bytearray(raw)
            if k == "$c":
                return complex(_untree(x[0], hook), _untree(x[1], hook))
            if k == "$d":
                return {_hashable(_untree(a, hook)): _untree(b, hook) for a, b in x}
            if k == "$nd":
                return _untree(x, hook)
            if k == "$m":
                return MatchValue(x[:2], _untree(x[2], hook))
            if k == "$o":
                return Opaque(str(x))
            if hook is not None:
                return hook(k, x)
            raise ValueError(f"unknown tag {k!r}")
    return {k: _untree(x, hook) for k, x in t.items()}


def clean_text(value):
    """Text every UTF-8 consumer (Parquet, JSON, a terminal) accepts: lone surrogates -- a program's returned
    string, exception message or undecodable output -- become backslash escapes (``\\ud800``; inside JSON text
    that is the exact JSON escape, so serialized values stay lossless); valid text is returned unchanged."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = str(value)
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


def deserialize_value(text: str):
    """Inverse of :func:`serialize_value` (opaque values become :class:`Opaque`).

    Robust to any text a program can produce: nesting too deep for the decoder, or beyond the recursion
    limit, gives an :class:`Opaque` value (equal to nothing) instead of an exception on the trusted side."""
    try:
        return _untree(json.loads(text))
    except (RecursionError, MemoryError):
        return Opaque("too-deep")
