"""Value serialization shared by the sandboxed child and the trusted parent.

Format: compact JSON text.  JSON-native values map directly (``None``, ``bool``, ``int``, finite ``float``, ``str``,
``list``, and ``dict`` whose keys are all ``str`` not starting with ``$``). Everything else is a *tagged* object, i.e. a
JSON object with exactly one key starting with ``$``:

=====================  ==============================================
``{"$f": "nan"}``       float nan / ``"inf"`` / ``"-inf"`` / ``"-0.0"``
``{"$ih": "0x.."}``     int too large for JSON decimal conversion (hex)
``{"$t": [...]}``       tuple
``{"$s": [...]}``       set (elements sorted by their serialized text)
``{"$fs": [...]}``      frozenset (sorted likewise)
``{"$b": "base64"}``    bytes; ``{"$ba": ...}`` bytearray
``{"$c": [re, im]}``    complex
``{"$d": [[k, v],..]}`` dict with non-str or ``$``-prefixed keys
``{"$nda": [dt, sh, x]}`` numpy array: dtype (``dtype.str``), shape, the elements flat (C order)
``{"$npv": [dt, x]}``   numpy scalar (``np.float64``, ``np.int32``, ``np.bool_`` ...): dtype and value
``{"$nd": [...]}``      numpy array, older format (nested ``tolist()``; read back as a list)
``{"$dec": "1.10"}``    ``decimal.Decimal`` (its exact text); ``{"$fr": [n, d]}`` ``fractions.Fraction``
``{"$dtm": iso}``       ``datetime.datetime``; ``$date`` / ``$time`` likewise; ``{"$td": [d, s, us]}`` timedelta
``{"$od": [[k, v],..]}`` ``OrderedDict`` (in its order); ``$ctr`` ``Counter``; ``{"$dd": [f, [[k, v],..]]}``
                        ``defaultdict`` (``f``: its factory when a builtin/collections type, else null)
``{"$dq": [m, [...]]}``  ``collections.deque`` (``m``: maxlen or null); ``{"$rg": [a, b, c]}`` ``range``
``{"$m": [a, b, g]}``   ``re.Match``: span and matched text (deserializes to :class:`MatchValue`)
``{"$o": "TypeName"}``  opaque (unsupported type, cycle, too deep) -> never equal to anything
=====================  ==============================================

Serialization is purely structural: subclasses of builtins are read through the base-class slots and no user-defined
method (``__eq__``, ``__iter__``, ``__repr__`` ...) is ever called, so a rigged object serializes as opaque (or as the
plain value it really holds) and cannot fake equality.  A subclass of a supported library type (a program's
``class V(np.ndarray)``, ``class C(Counter)``) is written as the library type's data, so it is rebuilt as the library
type itself: no program-defined class crosses.

Reading back is done by trusted code from plain data only: the RPC between judge and program (:mod:`.rpc`) rebuilds
every tag as the real type -- numpy arrays and scalars with their dtype and shape (numpy is imported on first need; see
:data:`VALUE_IMPORTS`), so a test's ``vector >= 0`` or ``np.array_equal(result, expected)`` sees what it would see
without a sandbox.  The parent's :func:`deserialize_value` (equality against a test's literal) reads numpy arrays as
nested lists and numpy scalars as Python numbers, and needs no numpy.  A payload no trusted constructor accepts (a
crafted dtype, a shape that does not match its elements) reads as :class:`Opaque`.
"""
from __future__ import annotations

import base64
import json
import math
import re
import sys

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

    def __eq__(self, other):   # != is its inverse (object.__ne__)
        return False

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


_PLAIN = frozenset({list, tuple, dict, set, frozenset, bytes, bytearray, complex})
_ND_KINDS = "biufcUSMmO"     # numpy dtype kinds that cross (no structured / void dtypes)
_ND_MAX_BYTES = 1 << 26      # a rebuilt array's memory may not exceed this (a crafted '<U99999999' dtype)


def _numpy_base(v, np):
    """``v`` as numpy's own type: an ndarray subclass is viewed as a plain ndarray, a scalar subclass is read as
    the numpy scalar type it derives from; nothing of the subclass is called."""
    if isinstance(v, np.ndarray):
        return v if type(v) is np.ndarray else np.ndarray.view(v, np.ndarray)
    if type(v).__module__ == "numpy":
        return np.asarray(v)
    base = next(c for c in type(v).__mro__ if getattr(c, "__module__", None) == "numpy")
    return np.asarray(base(np.generic.item(v)))


def _numpy_tree(v, depth, stack, fallback):
    np = sys.modules.get("numpy")
    if np is None or not isinstance(v, (np.ndarray, np.generic)):
        return None
    try:
        a = _numpy_base(v, np)
        dt = a.dtype
    except Exception:  # noqa: BLE001
        return {"$o": _type_name(v)}
    if dt.kind not in _ND_KINDS or dt.fields is not None or dt.subdtype is not None:
        return {"$o": f"numpy:{dt.str}"}
    flat = np.ndarray.reshape(a, -1)
    if dt.kind in "Mm":   # datetime64 / timedelta64: their int64 counts (tolist() gives datetime objects or ints)
        flat = flat.view("<i8")
    items = [_tree(x, depth + 1, stack, fallback) for x in flat.tolist()]
    return {"$nda": [dt.str, list(a.shape), items]} if isinstance(v, np.ndarray) else {"$npv": [dt.str, items[0]]}


_DD_FACTORIES = ("int", "float", "str", "bytes", "bool", "complex", "list", "tuple", "dict", "set", "frozenset")
_COLLECTION_FACTORIES = ("Counter", "OrderedDict", "deque", "defaultdict")


def _factories() -> dict:
    """The defaultdict factories that cross, by name (builtin types, collections classes)."""
    import builtins
    col = _module("collections")
    return {**{n: getattr(builtins, n) for n in _DD_FACTORIES}, **{n: getattr(col, n) for n in _COLLECTION_FACTORIES}}


def _pairs(items, depth, stack, fallback) -> list:
    return [[_tree(k, depth + 1, stack, fallback), _tree(x, depth + 1, stack, fallback)] for k, x in items]


def _library_tree(v, depth, stack, fallback):
    """Standard-library value types tests compare (collections, decimal, fractions, datetime, range); a subclass
    is read through the library class, so it is written as the library type's data."""
    mods = sys.modules
    if type(v) is range:
        return {"$rg": [v.start, v.stop, v.step]}
    col = mods.get("collections")
    if col is not None:
        if isinstance(v, col.Counter):
            return {"$ctr": _pairs(dict.items(v), depth, stack, fallback)}
        if isinstance(v, col.OrderedDict):
            return {"$od": _pairs(col.OrderedDict.items(v), depth, stack, fallback)}
        if isinstance(v, col.defaultdict):
            f = col.defaultdict.default_factory.__get__(v)
            factory = next((name for name, g in _factories().items() if g is f), None)
            return {"$dd": [factory, _pairs(dict.items(v), depth, stack, fallback)]}
        if isinstance(v, col.deque):
            return {"$dq": [col.deque.maxlen.__get__(v),
                            [_tree(x, depth + 1, stack, fallback) for x in col.deque.__iter__(v)]]}
    dec = mods.get("decimal")
    if dec is not None and isinstance(v, dec.Decimal):
        return {"$dec": dec.Decimal.__str__(v)}
    fr = mods.get("fractions")
    if fr is not None and isinstance(v, fr.Fraction):
        return {"$fr": [_tree(int(fr.Fraction.numerator.__get__(v)), depth, stack),
                        _tree(int(fr.Fraction.denominator.__get__(v)), depth, stack)]}
    dt = mods.get("datetime")
    if dt is not None:
        if isinstance(v, dt.datetime):
            return {"$dtm": dt.datetime.isoformat(v)}
        if isinstance(v, dt.date):
            return {"$date": dt.date.isoformat(v)}
        if isinstance(v, dt.time):
            return {"$time": dt.time.isoformat(v)}
        if isinstance(v, dt.timedelta):
            td = dt.timedelta
            return {"$td": [td.days.__get__(v), td.seconds.__get__(v), td.microseconds.__get__(v)]}
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
    key = id(v)
    if key in stack:
        return {"$o": "cycle"}
    stack.add(key)
    try:
        if t not in _PLAIN and "numpy" in sys.modules:   # before int/float/str: np.float64 subclasses float
            got = _numpy_tree(v, depth, stack, fallback)
            if got is not None:
                return got
        if isinstance(v, int):   # a subclass (bool cannot be subclassed: handled above)
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
        if t not in _PLAIN:
            got = _library_tree(v, depth, stack, fallback)
            if got is not None:
                return got
        if isinstance(v, list):
            return [_tree(x, depth + 1, stack, fallback) for x in list.__iter__(v)]
        if isinstance(v, tuple):
            return {"$t": [_tree(x, depth + 1, stack, fallback) for x in tuple.__iter__(v)]}
        if isinstance(v, (set, frozenset)):
            it = set.__iter__(v) if isinstance(v, set) else frozenset.__iter__(v)
            items = sorted((_tree(x, depth + 1, stack, fallback) for x in it), key=_dumps)
            return {("$s" if isinstance(v, set) else "$fs"): items}
        if isinstance(v, dict):
            pairs = list(dict.items(v))
            if all(type(k) is str and not k.startswith("$") for k, _ in pairs):
                return {k: _tree(x, depth + 1, stack, fallback) for k, x in pairs}
            return {"$d": _pairs(pairs, depth, stack, fallback)}
        if t is MatchValue:  # a match that crossed the RPC stays a match (truthy, compared by span + text)
            return {"$m": [v.span[0], v.span[1], _tree(v.text, depth + 1, stack)]}
        if t is Opaque:
            return {"$o": v.type_name + {True: "|truthy", False: "|falsy"}.get(v.truth, "")}
        if t is re.Match:   # cannot be subclassed
            return {"$m": [re.Match.start(v), re.Match.end(v), _tree(re.Match.group(v, 0), depth + 1, stack)]}
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


VALUE_IMPORTS = [0]   # modules this process imported to rebuild a value it was sent (a kept judge retires on them)


def _module(name: str):
    mod = sys.modules.get(name)
    if mod is None:
        import importlib
        mod = importlib.import_module(name)
        VALUE_IMPORTS[0] += 1
    return mod


def _int(x) -> int:
    if type(x) is dict and set(x) == {"$ih"}:
        return int(x["$ih"], 16)
    if type(x) is not int:
        raise TypeError("not an int")
    return x


def _nest(flat: list, shape: list) -> list:
    """``flat`` (C order) as nested lists of ``shape`` (what ``ndarray.tolist()`` gives)."""
    if len(shape) <= 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _np_dtype(text):
    """(numpy, the dtype of ``text``); ValueError for a dtype that does not cross."""
    np = _module("numpy")
    dt = np.dtype(str(text))
    if dt.kind not in _ND_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise ValueError(f"dtype {text!r} does not cross")
    return np, dt


_ND_DTYPE = re.compile(r"[<>|=]?[biufcUSMmO]\d{0,9}(\[\d{0,9}[A-Za-z]{1,2}\])?")
_SCALAR_TAGS = ("$f", "$ih", "$c", "$b")


def _element(x, hook, numpy: bool, dtype: str):
    """One array element / scalar value: plain, except in an object array."""
    if dtype.lstrip("<>|=")[:1] != "O" and isinstance(x, (list, dict)) and not (
            type(x) is dict and len(x) == 1 and next(iter(x)) in _SCALAR_TAGS):
        raise ValueError("a numpy element holds one plain value")
    return _untree(x, hook, numpy)


def _np_array(payload, hook, numpy: bool):
    text, shape, flat = payload
    if type(text) is not str or not _ND_DTYPE.fullmatch(text):
        raise ValueError(f"dtype {text!r} does not cross")
    shape = [_int(n) for n in shape]
    if any(n < 0 for n in shape) or not isinstance(flat, list) or math.prod(shape) != len(flat) or len(shape) > 32:
        raise ValueError("shape does not match the elements")
    width = int(re.sub(r"\D", "", text.split("[")[0]) or 0)
    if width * 4 * len(flat) > _ND_MAX_BYTES:
        raise ValueError("array too large")
    items = [_element(x, hook, numpy, text) for x in flat]
    if not numpy:
        return items[0] if not shape else _nest(items, shape)
    np, dt = _np_dtype(text)
    if dt.itemsize * len(items) > _ND_MAX_BYTES:
        raise ValueError("array too large")
    if dt.kind == "O":
        a = np.empty(len(items), dtype=object)
        for i, x in enumerate(items):
            a[i] = x
    elif dt.kind in "Mm":
        a = np.array([_int(x) for x in items], dtype="<i8").view(dt)
    else:
        a = np.array(items, dtype=dt)
        if a.shape != (len(items),):
            raise ValueError("elements are not scalars")
    return a.reshape(shape)


def _np_scalar(payload, hook, numpy: bool):
    text, x = payload
    if type(text) is not str or not _ND_DTYPE.fullmatch(text) or text.lstrip("<>|=")[:1] == "O":
        raise ValueError(f"dtype {text!r} is no numpy scalar's")
    value = _element(x, hook, numpy, text)
    if not numpy:
        return value
    np, dt = _np_dtype(text)
    if dt.kind == "O" or dt.itemsize > _ND_MAX_BYTES:
        raise ValueError("not a numpy scalar dtype")
    if dt.kind in "Mm":
        return np.array(_int(value), dtype="<i8").view(dt)[()]
    return np.array(value, dtype=dt)[()]


def _dd_factory(name):
    if name is not None and name not in (known := _factories()):
        raise ValueError(f"unknown defaultdict factory {name!r}")
    return None if name is None else known[name]


def _unpairs(x, h, n) -> list:
    return [(_hashable(_untree(a, h, n)), _untree(b, h, n)) for a, b in x]


def _iso(x, cls: str):
    if type(x) is not str or len(x) > 64:
        raise ValueError("not an ISO date/time")
    return getattr(_module("datetime"), cls).fromisoformat(x)


def _timedelta(x, h, n):
    days, seconds, micro = (_int(v) for v in x)
    return _module("datetime").timedelta(days=days, seconds=seconds, microseconds=micro)


_LIBRARY = {   # the library tags, built by trusted constructors only: (payload, hook, numpy) -> value
    "$nda": _np_array,
    "$npv": _np_scalar,
    "$dec": lambda x, h, n: _module("decimal").Decimal(str(x)),
    "$fr": lambda x, h, n: _module("fractions").Fraction(_int(x[0]), _int(x[1])),
    "$dtm": lambda x, h, n: _iso(x, "datetime"),
    "$date": lambda x, h, n: _iso(x, "date"),
    "$time": lambda x, h, n: _iso(x, "time"),
    "$td": _timedelta,
    "$rg": lambda x, h, n: range(*(_int(v) for v in x)),
    "$od": lambda x, h, n: _module("collections").OrderedDict(_unpairs(x, h, n)),
    "$ctr": lambda x, h, n: _module("collections").Counter(dict(_unpairs(x, h, n))),
    "$dd": lambda x, h, n: _module("collections").defaultdict(_dd_factory(x[0]), _unpairs(x[1], h, n)),
    "$dq": lambda x, h, n: _module("collections").deque([_untree(e, h, n) for e in x[1]],
                                                        None if x[0] is None else _int(x[0])),
}
_TAGS = {   # the builtin tags: (payload, hook, numpy) -> value
    "$f": lambda x, h, n: _FLOATS[x],
    "$ih": lambda x, h, n: int(x, 16),
    "$t": lambda x, h, n: tuple(_untree(e, h, n) for e in x),
    "$s": lambda x, h, n: {_hashable(_untree(e, h, n)) for e in x},
    "$fs": lambda x, h, n: frozenset(_hashable(_untree(e, h, n)) for e in x),
    "$b": lambda x, h, n: base64.b64decode(x),
    "$ba": lambda x, h, n: bytearray(base64.b64decode(x)),
    "$c": lambda x, h, n: complex(_untree(x[0], h, n), _untree(x[1], h, n)),
    "$d": lambda x, h, n: dict(_unpairs(x, h, n)),
    "$nd": lambda x, h, n: _untree(x, h, n),
    "$m": lambda x, h, n: MatchValue(x[:2], _untree(x[2], h, n)),
    "$o": lambda x, h, n: Opaque(str(x)),
}


def _untree(t, hook=None, numpy: bool = True):
    """Inverse of :func:`_tree`; ``hook(tag, payload)`` decodes tags this module does not know (RPC).

    ``numpy=False`` (the parent's comparisons) reads numpy arrays as nested lists and numpy scalars as Python
    numbers instead of importing numpy."""
    if isinstance(t, list):
        return [_untree(x, hook, numpy) for x in t]
    if not isinstance(t, dict):
        return t
    if len(t) == 1:
        (k, x), = t.items()
        if k.startswith("$"):
            if k in _TAGS:
                return _TAGS[k](x, hook, numpy)
            if k in _LIBRARY:
                try:
                    return _LIBRARY[k](x, hook, numpy)
                except (RecursionError, MemoryError):
                    raise
                except Exception:  # noqa: BLE001 - any payload a program could shape reads as opaque, never an error
                    return Opaque(f"bad {k[1:]}")
            if hook is not None:
                return hook(k, x)
            raise ValueError(f"unknown tag {k!r}")
    return {k: _untree(x, hook, numpy) for k, x in t.items()}


def clean_text(value):
    """Text every UTF-8 consumer (Parquet, JSON, a terminal) accepts: lone surrogates -- a program's returned
    string, exception message or undecodable output -- become backslash escapes (``\\ud800``; inside JSON text
    that is the exact JSON escape, so serialized values stay lossless); valid text is returned unchanged."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = str(value)
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def deserialize_value(text: str, numpy: bool = False):
    """Inverse of :func:`serialize_value` (opaque values become :class:`Opaque`); numpy arrays read as nested
    lists and numpy scalars as Python numbers unless ``numpy`` (then they are rebuilt, importing numpy).

    Robust to any text a program can produce: nesting too deep for the decoder, or beyond the recursion
    limit, gives an :class:`Opaque` value (equal to nothing) instead of an exception on the trusted side."""
    try:
        return _untree(json.loads(text), numpy=numpy)
    except (RecursionError, MemoryError):
        return Opaque("too-deep")
