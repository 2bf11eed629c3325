"""Judge side of the RPC: :class:`Client` (the judge's end of the pipe pair), :class:`RemoteRef`, the proxy
for an object that stays in the candidate (its operators are computed on a plain-value snapshot, never
answered by the program's object), and :class:`JudgeNamespace`, the test code's globals."""
from __future__ import annotations

import builtins
import contextlib
import sys

from ..serialize import Opaque, _untree
from .codec import (JUDGE_MODULE, PROGRAM_DRIVEN_IMPORTS, PROGRAM_MODULE, CandidateExit, CandidateGone, Codec,
                    FrameTooLarge, decode, dumps, exception_info, loads, read_frame, tag_hook, write_frame)


# ---------------------------------------------------------------------------------------------- judge side
_EXIT_LIKE = {"SystemExit", "KeyboardInterrupt", "GeneratorExit"}


def _builtin_exception(name: str):
    cls = getattr(builtins, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) and name not in _EXIT_LIKE else None


class Client:
    """The judge's end of the pipe pair; one per judge process."""

    def __init__(self, rfd: int, wfd: int, cap: int):
        self.rfd, self.wfd, self.cap = rfd, wfd, cap
        self.classes: dict[str, type] = {}     # the judge's structural classes (preamble / test code)
        self.exc_classes: dict[str, type] = {}
        self.entry_name: str | None = None   # a builtin name the program may shadow: its entry point only
        self.callbacks: list = []
        self.epoch = 0                          # requests that may have run program code (snapshots expire)
        self.refs: dict[int, "RemoteRef"] = {}  # handle number -> its one proxy

    # -- side interface for the codec (judge objects -> wire, wire -> judge objects)
    def is_struct(self, v) -> bool:
        t = type(v)
        return (getattr(t, "__module__", None) == JUDGE_MODULE and not isinstance(v, type)
                and hasattr(v, "__dict__") and t.__name__ in self.classes)

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
        try:
            return Opaque(name) if cls is None else object.__new__(cls)
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
    def request(self, msg: dict):
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
            with contextlib.suppress(Exception):
                sys.stdout.write(out)
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
            return decode(self, reply.get("v"), reply.get("objs"), known)
        except (RecursionError, MemoryError, ValueError, TypeError, KeyError):
            return Opaque("undecodable"), []

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
    hook = tag_hook(client, insts)
    targets = [(args[int(k)] if str(k).isdigit() and int(k) < len(args) else kwargs.get(str(k)[1:]), t)
               for k, t in mut.items() if isinstance(k, str)]
    for target, tree in targets:
        with contextlib.suppress(ValueError, RecursionError, TypeError, KeyError, MemoryError):
            _copy_into(target, _untree(tree, hook))


def _copy_into(target, new) -> None:
    """``new`` (rebuilt by trusted code from the program's data) written into the judge's argument ``target`` in
    place: a list / bytearray by slice, a dict / set / deque / Counter / OrderedDict / defaultdict cleared and
    refilled, a numpy array of the same shape overwritten element by element (a view writes through to its base,
    as in-place code does); anything else, or a value of another kind, is left as it is."""
    import collections
    np = sys.modules.get("numpy")
    t = type(target)
    refill = {dict: dict, set: (set, frozenset), collections.deque: collections.deque, collections.Counter: dict,
              collections.OrderedDict: dict, collections.defaultdict: dict}
    if t in (list, bytearray) and isinstance(new, list if t is list else (bytes, bytearray)):
        target[:] = new
    elif t in refill and isinstance(new, refill[t]):
        target.clear()
        (target.extend if t is collections.deque else target.update)(new)
    elif np is not None and isinstance(target, np.ndarray) and type(new) is np.ndarray and target.shape == new.shape:
        target[...] = new


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
        return object.__getattribute__(self, "_c").call(object.__getattribute__(self, "_h"), args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._op("getattr", name)

    def __setattr__(self, name, value):
        object.__getattribute__(self, "_c").op_value("setattr", object.__getattribute__(self, "_h"), value, name=name)

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
        return self if self._is_stream() else iter(self._plain("iter()"))

    def __next__(self):
        return self._op("next")

    def __len__(self):
        return len(self._plain("len()"))

    def __getitem__(self, key):
        return self._plain("[]")[key]

    def __contains__(self, item):
        return any(x is item or x == item for x in self) if self._is_stream() else item in self._plain("in")

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
        return type(obj) is RemoteRef and self._op("isinstance", object.__getattribute__(obj, "_h")) is True

    def __eq__(self, other):   # != is its inverse (object.__ne__)
        return self is other

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
    if not name.isidentifier():
        return False
    if name in sys.modules:
        return True
    try:
        from importlib.util import find_spec
        return find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False
