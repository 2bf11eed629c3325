"""Candidate side of the RPC: :class:`Server` runs in the program's own process and answers the judge
(:func:`serve`); nothing it says is more than data to the judge."""
from __future__ import annotations

import builtins
import contextlib

from ..serialize import Opaque
from .codec import (JUDGE_MODULE, PROGRAM_MODULE, Codec, FrameTooLarge, decode, dumps, exception_info, loads,
                    read_frame, write_frame)


# ---------------------------------------------------------------------------------------------- candidate side
class Server:
    """The candidate's end: runs in the program's own process (so it is only as trustworthy as the program,
    which is why nothing it says is more than data to the judge)."""

    def __init__(self, ns: dict, struct_names: set[str], rfd: int = -1, wfd: int = -1):
        self.ns, self.struct_names = ns, struct_names
        self.rfd, self.wfd = rfd, wfd
        self.handles: list = []
        self.handle_of: dict[int, int] = {}

    def is_struct(self, v) -> bool:
        return (type(v).__name__ in self.struct_names and not isinstance(v, type)
                and hasattr(v, "__dict__") and not callable(v))

    def other(self, v):
        n = self.handle_of.get(id(v))   # the same object keeps its handle (`mirror(root) == root` is identity)
        if n is None:
            n = self.handle_of[id(v)] = len(self.handles)
            self.handles.append(v)      # kept alive: its id is never reused while the handle exists
        if type(v).__name__ == "module":
            return {"$h": [n, "module", str(getattr(v, "__name__", ""))]}
        if isinstance(v, type):
            try:
                mro = [c.__name__ for c in v.__mro__]
            except Exception:  # noqa: BLE001
                mro = []
            return {"$h": [n, "class", mro]}
        return {"$h": [n, "callable" if callable(v) else "object"]}

    def resolve_type(self, x):
        """A class the judge passed: a builtin, a preamble class (the program's class of that name), or a
        class of an importable module."""
        try:
            module, name = str(x[0]), str(x[1])
            if module == "builtins":
                found = getattr(builtins, name)
            elif module == JUDGE_MODULE:
                found = self.ns[name]
            else:
                import importlib
                found = importlib.import_module(module)
                for part in name.split("."):
                    found = getattr(found, part)
            return found if isinstance(found, type) else Opaque("type")
        except Exception:  # noqa: BLE001
            return Opaque("type")

    def callback(self, n):
        def judge_function(*args, **kwargs):
            tree, objs = Codec(self).encode([list(args), kwargs])
            write_frame(self.wfd, dumps({"cb": n, "x": tree, "objs": objs}))
            data = read_frame(self.rfd, 1 << 30)
            if data is None:
                raise SystemExit(0)
            reply = loads(data)
            if not reply.get("ok"):
                exc = reply.get("exc") or {}
                raise RuntimeError(f"{exc.get('type')}: {exc.get('msg')}")
            return decode(self, reply.get("v"), reply.get("objs"))[0]
        return judge_function

    def new_struct(self, name: str):
        cls = self.ns.get(name)
        if isinstance(cls, type):
            with contextlib.suppress(TypeError):
                return object.__new__(cls)
        return _Plain()

    def from_handle(self, x):
        try:
            return self.handles[int(x[0] if isinstance(x, list) else x)]
        except (TypeError, ValueError, IndexError):
            return Opaque("bad-handle")

    def entry(self, expr: str):
        """The entry point in any form datasets write: ``f``, ``Solution().f``, ``Solution.f``; a bare ``f``
        the program only defines as a method (a LeetCode-style class exported by a peer as ``fn_name``) is
        that method of a fresh instance of the class defining it (``Solution`` first)."""
        try:
            return eval(expr, self.ns)
        except NameError:
            if not expr.isidentifier():
                raise
            classes = [v for v in list(self.ns.values()) if isinstance(v, type) and expr in getattr(v, "__dict__", {})]
            classes.sort(key=lambda c: getattr(c, "__name__", "") != "Solution")
            if not classes:
                raise
            return getattr(classes[0](), expr)

    def handle(self, req: dict) -> dict:
        op = req.get("op")
        if op == "call":
            return self._call(req)
        if op == "get":
            name = req.get("name")
            if name not in self.ns:
                return {"ok": True, "v": {"$o": "missing-name"}, "objs": []}
            origin = _import_origin(str(name), self.ns[name])
            if origin:   # `from typing import List`: the judge takes its own copy of what the program imported
                n = len(self.handles)
                self.handles.append(self.ns[name])
                return {"ok": True, "v": {"$h": [n, "import", origin]}, "objs": []}
            return self._reply(self.ns[name])
        if op == "init":
            self.struct_names = set(map(str, req.get("struct") or ()))
            return {"ok": True, "v": None, "objs": []}
        if op == "getmany":
            return self._reply({k: v for k, v in list(self.ns.items()) if not k.startswith("_")})
        if op == "entry":
            return self._reply(self.entry(str(req.get("expr"))))
        obj = self.from_handle(req.get("h"))
        if op == "getattr":
            return self._reply(getattr(obj, str(req["a"][0])))
        if op == "setattr":
            value, _ = decode(self, req.get("x"), req.get("objs"))
            setattr(obj, str(req.get("name")), value)
            return self._reply(None)
        if op == "iter":
            return self._reply(iter(obj))
        if op == "next":
            return self._reply(next(obj))
        if op == "snapshot":
            return self._reply(plain_value(obj))
        if op == "isinstance":
            return self._reply(isinstance(self.from_handle(req["a"][0]), obj))
        raise ValueError(f"unknown op {op!r}")

    def _reply(self, value, codec: Codec | None = None, resend=()) -> dict:
        codec = codec or Codec(self)
        tree, objs = codec.encode(value, resend)
        return {"ok": True, "v": tree, "objs": objs}

    def _call(self, req: dict) -> dict:
        fn = self.from_handle(req.get("h"))
        (args, kwargs), insts = decode(self, req.get("x"), req.get("objs"))
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise TypeError("malformed call")
        value = fn(*args, **{str(k): v for k, v in kwargs.items()})
        codec = Codec(self)
        codec.seed(insts)
        if not req.get("m"):
            return self._reply(value, codec)
        before = req.get("x")
        reply = self._reply(value, codec, [k for k, o in enumerate(insts) if not isinstance(o, (Opaque, _Plain))])
        mut = {}
        for pos, arg in list(enumerate(args)) + [("k" + k, v) for k, v in kwargs.items()]:
            if type(arg) in (list, dict, set, bytearray) or _library_mutable(arg):
                tree, _ = codec.encode(arg)
                old = before[0][pos] if isinstance(pos, int) else before[1].get(pos[1:])
                if tree != old:
                    mut[str(pos)] = tree
        reply["objs"] = codec.objs
        if mut:
            reply["mut"] = mut
        return reply


def _import_origin(name: str, value) -> list[str] | None:
    """[module, name] when the program's global ``name`` is an object it imported from another module under
    that name (``from typing import List``, ``from math import sqrt``), else None."""
    import sys
    module = getattr(value, "__module__", None)
    if not isinstance(module, str) or module in (PROGRAM_MODULE, "__main__", JUDGE_MODULE) or isinstance(value, type) \
            and issubclass(value, BaseException):
        return None
    mod = sys.modules.get(module)
    try:
        return [module, name] if mod is not None and getattr(mod, name, None) is value else None
    except Exception:  # noqa: BLE001
        return None


_LIBRARY_MUTABLES = {("numpy", "ndarray"), ("collections", "deque"), ("collections", "Counter"),
                     ("collections", "OrderedDict"), ("collections", "defaultdict")}


def _library_mutable(arg) -> bool:
    """A mutable library value the judge sent (rebuilt here as the library type itself): its in-place changes
    are copied back like a list's (``arr.sort()``, ``queue.append(x)``)."""
    t = type(arg)
    return (getattr(t, "__module__", None), getattr(t, "__name__", None)) in _LIBRARY_MUTABLES


class _Plain:
    """A structural object whose class the program does not define."""


def plain_value(obj):
    """What the judge computes operators on (candidate side; the judge trusts only that it is data): an
    iterator/generator is a stream (``Opaque("iterator")``, read with ``next``), a mapping is its items, any
    other iterable its items, anything else has no plain value."""
    cls = type(obj)
    if hasattr(cls, "__next__"):
        return Opaque("iterator")
    if hasattr(cls, "keys") and hasattr(cls, "__getitem__"):
        return {k: obj[k] for k in obj.keys()}
    if hasattr(cls, "__iter__"):
        return list(obj)
    return Opaque("no-plain-value")


class _Tee:
    """sys.stdout during a call: the real stream (the verdict's stdout) plus a copy sent back with the reply."""

    def __init__(self, real, copy):
        self.real, self.copy = real, copy

    def write(self, s):
        if self.copy.tell() < (1 << 20):
            self.copy.write(s)
        return self.real.write(s)

    def __getattr__(self, name):
        return getattr(self.real, name)


def serve(server: Server, rfd: int, wfd: int, flush) -> None:
    """Answer the judge until it closes the pipe."""
    import io
    import sys
    while True:
        try:
            data = read_frame(rfd, 1 << 30)
        except (OSError, FrameTooLarge):
            return
        if data is None:
            return
        real, copy = sys.stdout, io.StringIO()
        tee = sys.stdout = _Tee(real, copy)
        try:
            reply = server.handle(loads(data))
        except BaseException as e:  # noqa: BLE001
            reply = {"ok": False, "exc": exception_info(e)}
        if sys.stdout is tee:
            sys.stdout = real
        flush()
        if copy.tell():
            reply["out"] = copy.getvalue()[:1 << 20]
        try:
            out = dumps(reply)
        except (ValueError, TypeError, RecursionError) as e:
            out = dumps({"ok": False, "exc": exception_info(e)})
        write_frame(wfd, out)
