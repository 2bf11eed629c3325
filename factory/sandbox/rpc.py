"""RPC between the judge (test code; trusted) and the candidate (the program; untrusted).

The judge never runs candidate code and the candidate never sees a test: the judge calls the program's
functions through :class:`RemoteRef` proxies, and only plain data crosses the pipe (the tagged JSON of
:mod:`.serialize`, plus three RPC tags):

* ``{"$h": [n, what, extra]}`` -- a handle to an object that stays in the candidate (a function, class,
  module, generator, instance...).  In the judge it is a :class:`RemoteRef`: calls and attribute reads are
  forwarded (their results cross as data), ``==`` is identity and ``hash`` is ``id``.  No other operator is
  ever answered by the program's object: ``len``, ``in``, ``[]``, iteration, ``str`` and ``repr`` are computed
  by the judge on the object's *plain value*, one snapshot the candidate sends as data (a mapping's items, an
  iterable's items; taken again only after the program ran in between), so an object cannot say ``len`` 3,
  contain everything and index to anything at once.  An object with no plain value (not iterable) supports
  none of them; an iterator or generator is a stream: ``next`` yields its items as data.  A module handle becomes the judge's *own* import of that
  module; a class deriving from ``BaseException`` becomes a local exception class of the same name, so
  ``pytest.raises(ProgramError)`` and ``except ValueError`` work.
* ``{"$r": k}`` -- entry ``k`` of the message's object table ``objs`` (``[class name, attributes]``):
  instances of classes both sides define (LeetCode's ``ListNode``/``TreeNode`` from the preamble) cross
  structurally, as a graph (cycles and 10^5-long linked lists are fine).  The receiver rebuilds them with its
  *own* class of that name; the judge's classes come from the preamble and test code only.
* In-place mutation of list/dict/set/bytearray arguments and of structural objects is copied back to the
  judge after a call (``sort_in_place(a); assert a == [...]`` works).

Frames are a 4-byte length plus UTF-8 JSON; every frame from the candidate is size-capped and decoded with
depth errors caught, so no bytes a program writes can crash the judge.
"""
from __future__ import annotations

import builtins
import json
import os
import struct

from .serialize import Opaque, _tree, _untree

_LEN = struct.Struct("!I")
JUDGE_MODULE = "__judge__"      # __module__ of classes defined by the preamble / test code in the judge
PROGRAM_MODULE = "solution"     # the program's module (KodCode tests `from solution import f`)


PROGRAM_DRIVEN_IMPORTS = [0]    # modules the judge imported because a program handed it a module of that name


class CandidateGone(BaseException):
    """The candidate process exited or broke the protocol; the running test cannot finish."""


class CandidateExit(Exception):
    """The candidate raised SystemExit / KeyboardInterrupt / GeneratorExit inside a call."""


# ---------------------------------------------------------------------------------------------- frames
def write_frame(fd: int, data: bytes) -> None:
    view = memoryview(_LEN.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, cap: int) -> bytes | None:
    """One frame, or None at EOF.  A frame over ``cap`` bytes raises :class:`FrameTooLarge`."""
    hdr = _read_exact(fd, 4)
    if hdr is None:
        return None
    n = _LEN.unpack(hdr)[0]
    if n > cap:  # read it away unkept, so the next frame starts where it should
        left = n
        while left:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
        raise FrameTooLarge(n)
    return _read_exact(fd, n)


class FrameTooLarge(Exception):
    pass


def dumps(msg) -> bytes:
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8", "surrogatepass")


def loads(data: bytes):
    return json.loads(data.decode("utf-8", "surrogatepass"))


# ---------------------------------------------------------------------------------------------- codec
class Codec:
    """Tagged-JSON encoding with an object table; one instance per message direction and call."""

    def __init__(self, side):
        self.side = side
        self.objs: list = []
        self.index: dict[int, int] = {}
        self.keep: list = []     # keeps encoded objects alive, so their id()s stay unique
        self.queue: list = []

    def seed(self, insts: list) -> None:
        """Objects already known to the peer by position (the call's arguments): refs, not re-sent."""
        for k, obj in enumerate(insts):
            if obj is not None and not isinstance(obj, Opaque):
                self.index[id(obj)] = k
            self.objs.append(None)
            self.keep.append(obj)

    def _fallback(self, v):
        if self.side.is_struct(v):
            k = self.index.get(id(v))
            if k is None:
                k = self.index[id(v)] = len(self.objs)
                self.objs.append(None)
                self.keep.append(v)
                self.queue.append(k)
            return {"$r": k}
        return self.side.other(v)

    def encode(self, value, resend=()):
        """(tree, objs) for ``value``; ``resend`` are seeded positions to encode again (mutation copy-back)."""
        self.queue.extend(resend)
        tree = _tree(value, 0, None, self._fallback)
        while self.queue:
            k = self.queue.pop()
            obj = self.keep[k]
            try:
                attrs = dict(object.__getattribute__(obj, "__dict__"))
            except Exception:  # noqa: BLE001
                attrs = {}
            self.objs[k] = [self.side.class_name(obj), _tree(attrs, 0, None, self._fallback)]
        return tree, self.objs


def _tag_hook(side, insts: list):
    """Decoder for the RPC tags: ``$r`` (object table entry), ``$h`` (handle), ``$cb`` (judge callback)."""
    def hook(tag, x):
        if tag == "$r":
            try:
                return insts[int(x)]
            except (TypeError, ValueError, IndexError):
                return Opaque("bad-ref")
        if tag == "$h":
            return side.from_handle(x)
        if tag == "$cb" and hasattr(side, "callback"):
            return side.callback(x)
        if tag == "$ty" and hasattr(side, "resolve_type"):
            return side.resolve_type(x)
        raise ValueError(f"unknown tag {tag!r}")
    return hook


def decode(side, tree, objs, known: list | None = None):
    """Inverse of :meth:`Codec.encode`.  ``known`` are this side's objects for the seeded positions; entries
    of ``objs`` that are not None update their attributes (copy-back) or create new instances."""
    known = list(known or [])
    objs = objs if isinstance(objs, list) else []
    insts = []
    for k, entry in enumerate(objs):
        if k < len(known) and known[k] is not None:
            insts.append(known[k])
        elif entry is None:
            insts.append(Opaque("missing-object"))
        else:
            insts.append(side.new_struct(str(entry[0]) if isinstance(entry, list) and entry else "?"))

    hook = _tag_hook(side, insts)
    for inst, entry in zip(insts, objs):
        if entry is None or isinstance(inst, Opaque) or not isinstance(entry, list) or len(entry) != 2:
            continue
        attrs = _untree(entry[1], hook)
        if isinstance(attrs, dict):
            d = object.__getattribute__(inst, "__dict__")
            d.clear()
            d.update({k: v for k, v in attrs.items() if isinstance(k, str)})
    return _untree(tree, hook), insts


# ---------------------------------------------------------------------------------------------- judge side
_EXIT_LIKE = {"SystemExit", "KeyboardInterrupt", "GeneratorExit"}


def _builtin_exception(name: str):
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException) and name not in _EXIT_LIKE:
        return cls
    return None


class Client:
    """The judge's end of the pipe pair; one per judge process."""

    def __init__(self, rfd: int, wfd: int, cap: int):
        self.rfd, self.wfd, self.cap = rfd, wfd, cap
        self.classes: dict[str, type] = {}     # the judge's structural classes (preamble / test code)
        self.exc_classes: dict[str, type] = {}
        self.modules_ok = True
        self.entry_name: str | None = None   # a builtin name the program may shadow: its entry point only
        self.callbacks: list = []
        self.epoch = 0                          # requests that may have run program code (snapshots expire)
        self.refs: dict[int, "RemoteRef"] = {}  # handle number -> its one proxy

    # -- side interface for the codec (judge objects -> wire, wire -> judge objects)
    def is_struct(self, v) -> bool:
        t = type(v)
        return (getattr(t, "__module__", None) == JUDGE_MODULE and not isinstance(v, type)
                and hasattr(v, "__dict__") and t.__name__ in self.classes)

    @staticmethod
    def class_name(obj) -> str:
        return type(obj).__name__

    def other(self, v):
        if type(v) is RemoteRef:
            return {"$h": [object.__getattribute__(v, "_h")]}
        if isinstance(v, type):   # a class as an argument (isinstance(x, int)): by name, resolved on the other side
            return {"$ty": [str(getattr(v, "__module__", "")), str(getattr(v, "__qualname__", ""))]}
        if callable(v):  # a judge function passed to the program: called back here
            self.callbacks.append(v)
            return {"$cb": len(self.callbacks) - 1}
        return {"$o": type(v).__name__[:80]}

    def new_struct(self, name: str):
        cls = self.classes.get(name)
        if cls is None:
            return Opaque(name)
        try:
            return object.__new__(cls)
        except TypeError:
            return Opaque(name)

    def from_handle(self, x):
        try:
            n, what = int(x[0]), str(x[1])
            extra = x[2] if len(x) > 2 else None
        except (TypeError, ValueError, IndexError):
            return Opaque("bad-handle")
        if what == "module" and isinstance(extra, str):
            mod = self._import(extra)
            if mod is not None:
                return mod
        if what == "class" and isinstance(extra, list) and "BaseException" in extra and extra:
            return self.exception_class([str(e) for e in extra])
        if what == "import" and isinstance(extra, list) and len(extra) == 2:
            mod = self._import(str(extra[0]))   # the judge's own module: never the program's object
            found = getattr(mod, str(extra[1]), None) if mod is not None and str(extra[1]).isidentifier() else None
            if found is not None:
                return found
        ref = self.refs.get(n)
        if ref is None:
            ref = self.refs[n] = RemoteRef(self, n)   # one proxy per program object: identity holds
        return ref

    @staticmethod
    def _import(name: str):
        """The judge's own copy of a module the program imported (never the program's object)."""
        import sys
        if not all(part.isidentifier() for part in name.split(".")):
            return None
        mod = sys.modules.get(name)
        if mod is not None:
            return mod
        PROGRAM_DRIVEN_IMPORTS[0] += 1   # a kept judge retires after a program chose what it imports
        try:
            from importlib import import_module
            return import_module(name)
        except BaseException:  # noqa: BLE001
            return None

    def exception_class(self, mro: list[str]):
        name = mro[0]
        found = _builtin_exception(name)
        if found is not None:
            return found
        if name in _EXIT_LIKE:
            return CandidateExit
        cls = self.exc_classes.get(name)
        if cls is None:
            base = next((b for b in (_builtin_exception(m) for m in mro[1:]) if b is not None), Exception)
            if base is BaseException:
                base = Exception
            cls = self.exc_classes[name] = type(name if name.isidentifier() else "ProgramError", (base,),
                                                {"__module__": PROGRAM_MODULE})
        return cls

    # -- transport
    def request(self, msg: dict, known: list | None = None, args=None):
        if msg.get("op") != "snapshot":
            self.epoch += 1
        try:
            write_frame(self.wfd, dumps(msg))
            while True:
                data = read_frame(self.rfd, self.cap)
                if data is None or not data.startswith(b'{"cb":'):
                    break
                write_frame(self.wfd, dumps(self._callback(data)))   # the program calls a judge function
        except FrameTooLarge:
            raise OutputTooLarge("returned value too large") from None
        except OSError:
            data = None
        if data is None:
            raise CandidateGone("candidate exited")
        try:
            reply = loads(data)
            if not isinstance(reply, dict):
                raise ValueError
        except (ValueError, RecursionError, MemoryError, UnicodeDecodeError):
            raise CandidateProtocolError("undecodable reply from the program") from None
        out = reply.get("out")
        if out and type(out) is str:  # what the program printed during the call: capsys / redirect_stdout see it
            try:
                import sys
                sys.stdout.write(out)
            except Exception:  # noqa: BLE001
                pass
        if not reply.get("ok"):
            exc = reply.get("exc") if isinstance(reply.get("exc"), dict) else {}
            mro = exc.get("mro") if isinstance(exc.get("mro"), list) else [str(exc.get("type", "Exception"))]
            cls = self.exception_class([str(m) for m in mro] or ["Exception"])
            text = str(exc.get("msg", ""))[:2000]
            try:
                err = cls(text)
            except Exception:  # noqa: BLE001
                err = RuntimeError(text)
            raise err
        return reply

    def _callback(self, data: bytes) -> dict:
        try:
            req = loads(data)
            fn = self.callbacks[int(req["cb"])]
            (args, kwargs), _ = decode(self, req.get("x"), req.get("objs"))
            value = fn(*args, **{str(k): v for k, v in dict(kwargs).items()})
            tree, objs = Codec(self).encode(value)
            return {"ok": True, "v": tree, "objs": objs}
        except CandidateGone:
            raise
        except Exception as e:  # noqa: BLE001
            return {"ok": False, "exc": exception_info(e)}

    def value(self, reply: dict, known: list | None = None):
        try:
            value, insts = decode(self, reply.get("v"), reply.get("objs"), known)
        except (RecursionError, MemoryError, ValueError, TypeError, KeyError):
            return Opaque("undecodable"), []
        return value, insts

    def op(self, name: str, h, *args):
        return self.value(self.request({"op": name, "h": h, "a": list(args)}))[0]

    def op_value(self, op: str, h, value, **fields):
        """An operation on handle ``h`` that carries a judge value (a key, an item, an attribute's value)."""
        tree, objs = Codec(self).encode(value)
        return self.value(self.request({"op": op, "h": h, "x": tree, "objs": objs, **fields}))[0]

    def call(self, h, args: tuple, kwargs: dict, copy_back: bool = True):
        codec = Codec(self)
        tree, objs = codec.encode([list(args), kwargs])
        reply = self.request({"op": "call", "h": h, "x": tree, "objs": objs, "m": copy_back})
        value, insts = self.value(reply, known=codec.keep)
        if copy_back and isinstance(reply.get("mut"), dict):
            _apply_copy_back(self, reply["mut"], args, kwargs, insts)
        return value

    def lookup(self, name: str):
        return self.value(self.request({"op": "get", "name": name}))[0]

    def entry(self, expr: str):
        return self.value(self.request({"op": "entry", "expr": expr}))[0]


class OutputTooLarge(Exception):
    pass


class CandidateProtocolError(Exception):
    pass


def _apply_copy_back(client, mut: dict, args, kwargs, insts) -> None:
    hook = _tag_hook(client, insts)

    targets = [(args[int(k)] if str(k).isdigit() and int(k) < len(args) else kwargs.get(str(k)[1:]), t)
               for k, t in mut.items() if isinstance(k, str)]
    for target, tree in targets:
        try:
            new = _untree(tree, hook)
        except (ValueError, RecursionError, TypeError, KeyError, MemoryError):
            continue
        try:
            if type(target) is list and isinstance(new, list):
                target[:] = new
            elif type(target) is dict and isinstance(new, dict):
                target.clear()
                target.update(new)
            elif type(target) is set and isinstance(new, (set, frozenset)):
                target.clear()
                target.update(new)
            elif type(target) is bytearray and isinstance(new, (bytes, bytearray)):
                target[:] = new
        except TypeError:
            continue


class RemoteRef:
    """An object that lives in the candidate.  Its operators are never trusted: ``==`` is identity."""
    __slots__ = ("_c", "_h", "_snap")

    def __init__(self, client: Client, h: int):
        object.__setattr__(self, "_c", client)
        object.__setattr__(self, "_h", h)
        object.__setattr__(self, "_snap", None)   # (client epoch, plain value) of the last snapshot

    def _op(self, name, *args):
        return object.__getattribute__(self, "_c").op(name, object.__getattribute__(self, "_h"), *args)

    def __call__(self, *args, **kwargs):
        c = object.__getattribute__(self, "_c")
        return c.call(object.__getattribute__(self, "_h"), args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._op("getattr", name)

    def _op_value(self, op, value, **fields):
        return object.__getattribute__(self, "_c").op_value(op, object.__getattribute__(self, "_h"), value,
                                                            **fields)

    def __setattr__(self, name, value):
        self._op_value("setattr", value, name=name)

    def _snapshot(self):
        """The object's plain value as the candidate last sent it, taken again after program code ran."""
        c = object.__getattribute__(self, "_c")
        cached = object.__getattribute__(self, "_snap")
        if cached is None or cached[0] != c.epoch:
            cached = (c.epoch, c.op("snapshot", object.__getattribute__(self, "_h")))
            object.__setattr__(self, "_snap", cached)
        return cached[1]

    def _plain(self, what: str):
        """The object's plain value (see the module docstring); TypeError where it has none."""
        value = self._snapshot()
        if isinstance(value, Opaque) or type(value) is RemoteRef:
            raise TypeError(f"{what}: the program returned an object with no plain value "
                            f"({getattr(value, 'type_name', 'object')}); return plain data (list, dict, str, ...)")
        return value

    def _is_stream(self) -> bool:
        value = self._snapshot()
        return isinstance(value, Opaque) and value.type_name == "iterator"

    def __iter__(self):
        if self._is_stream():
            return self
        return iter(self._plain("iter()"))

    def __next__(self):
        return self._op("next")

    def __len__(self):
        return len(self._plain("len()"))

    def __getitem__(self, key):
        return self._plain("[]")[key]

    def __contains__(self, item):
        if self._is_stream():
            return any(x is item or x == item for x in self)
        return item in self._plain("in")

    def __bool__(self):
        # true, as any Python object is by default: the program's own __bool__/__len__ is never asked, so a
        # rigged one decides nothing (`if node:` in tree helpers works; a falsy program container reads true)
        return True

    def __repr__(self):
        try:
            return repr(self._plain("repr()"))
        except TypeError:
            return "<program object>"

    def __str__(self):
        try:
            return str(self._plain("str()"))
        except TypeError:
            return "<program object>"

    def __or__(self, other):
        """``ProgramClass | None`` in a test's annotation: a judge-side stand-in (typing.Any), nothing asked of
        the program."""
        import typing
        return typing.Any

    __ror__ = __or__

    def __instancecheck__(self, obj):
        if type(obj) is not RemoteRef:
            return False
        return self._op("isinstance", object.__getattribute__(obj, "_h")) is True

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __hash__(self):
        return id(self)


class JudgeNamespace(dict):
    """Globals of the test code: the judge's own names first; a name the program defines (its functions,
    classes, constants, imported modules) is fetched from the candidate on first use."""

    def __init__(self, client: Client, *args):
        super().__init__(*args)
        self.client = client

    def __missing__(self, name):
        c = self.client
        if name in builtins.__dict__ and name != c.entry_name:
            raise KeyError(name)   # the judge's own builtin, even where the program rebinds the name
        if name != c.entry_name and _judge_module(name):
            mod = c._import(name)   # a module name the test uses unimported (`sys.getsizeof`): the judge's own,
            if mod is not None:     # never a `sys` the program defines
                self[name] = mod
                return mod
        value = c.lookup(name)
        if isinstance(value, Opaque) and value.type_name == "missing-name":
            raise KeyError(name)
        if type(value) is RemoteRef or isinstance(value, type) or type(value).__name__ == "module":
            self[name] = value   # one lookup per name (a module is the judge's own import)
        return value


def _judge_module(name: str) -> bool:
    """Whether ``name`` is a top-level module the judge itself can import."""
    import sys
    if not name.isidentifier():
        return False
    if name in sys.modules:
        return True
    try:
        from importlib.util import find_spec
        return find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


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

    @staticmethod
    def class_name(obj) -> str:
        return type(obj).__name__

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
        server = self

        def judge_function(*args, **kwargs):
            tree, objs = Codec(server).encode([list(args), kwargs])
            write_frame(server.wfd, dumps({"cb": n, "x": tree, "objs": objs}))
            data = read_frame(server.rfd, 1 << 30)
            if data is None:
                raise SystemExit(0)
            reply = loads(data)
            if not reply.get("ok"):
                exc = reply.get("exc") or {}
                raise RuntimeError(f"{exc.get('type')}: {exc.get('msg')}")
            return decode(server, reply.get("v"), reply.get("objs"))[0]
        return judge_function

    def new_struct(self, name: str):
        cls = self.ns.get(name)
        if isinstance(cls, type):
            try:
                return object.__new__(cls)
            except TypeError:
                pass
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
            classes = [v for k, v in list(self.ns.items()) if isinstance(v, type) and expr in getattr(v, "__dict__", {})]
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
        reply = self._reply(value, codec, resend=[k for k, o in enumerate(insts) if not isinstance(o, (Opaque, _Plain))])
        mut = {}
        for pos, arg in list(enumerate(args)) + [("k" + k, v) for k, v in kwargs.items()]:
            if type(arg) in (list, dict, set, bytearray):
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


def exception_info(e: BaseException) -> dict:
    try:
        mro = [c.__name__ for c in type(e).__mro__]
    except BaseException:  # noqa: BLE001
        mro = ["Exception"]
    try:
        msg = str(e)[:2000]
    except BaseException:  # noqa: BLE001
        msg = "<unprintable>"
    return {"type": mro[0] if mro else "Exception", "mro": mro, "msg": msg}


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


__all__ = ["Client", "Server", "RemoteRef", "JudgeNamespace", "CandidateGone", "CandidateExit", "serve",
           "write_frame", "read_frame", "dumps", "loads", "exception_info", "Codec", "decode",
           "OutputTooLarge", "CandidateProtocolError", "JUDGE_MODULE", "PROGRAM_MODULE"]
