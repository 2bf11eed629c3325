"""RPC wire format between judge and candidate: length-prefixed frames of UTF-8 JSON, the tagged-JSON codec
with its object table (:class:`Codec` / :func:`decode`), the shared constants and exceptions."""
from __future__ import annotations

import json
import os
import struct

from ..serialize import Opaque, _tree, _untree
from ..zygote_io import read_exact, write_all

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
    write_all(fd, _LEN.pack(len(data)) + data)


def read_frame(fd: int, cap: int) -> bytes | None:
    """One frame, or None at EOF.  A frame over ``cap`` bytes raises :class:`FrameTooLarge`."""
    hdr = read_exact(fd, 4)
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
    return read_exact(fd, n)


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
            self.objs[k] = [type(obj).__name__, _tree(attrs, 0, None, self._fallback)]
        return tree, self.objs


def tag_hook(side, insts: list):
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

    hook = tag_hook(side, insts)
    for inst, entry in zip(insts, objs):
        if entry is None or isinstance(inst, Opaque) or not isinstance(entry, list) or len(entry) != 2:
            continue
        attrs = _untree(entry[1], hook)
        if isinstance(attrs, dict):
            d = object.__getattribute__(inst, "__dict__")
            d.clear()
            d.update({k: v for k, v in attrs.items() if isinstance(k, str)})
    return _untree(tree, hook), insts


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
