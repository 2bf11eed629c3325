"""The zygote's private channel to the pool and its output router.

Messages between pool and zygote are length-prefixed pickles on two private pipes (trusted side only).  The
:class:`Router` moves program output and judge reports to the pool with ``splice(2)``, so their bytes never
enter the zygote's memory.  :data:`JHDR` is the header of a frame the judge (or a probe child) writes on its
result pipe.
"""
from __future__ import annotations

import os
import pickle
import select
import struct

_HDR = struct.Struct("!I")


def read_exact(fd: int, n: int) -> bytes | bytearray | None:
    """Exactly ``n`` bytes from ``fd`` (None at EOF before them). A frame a pipe delivers in pieces is read into
    one buffer of its final size (``readv``): no ``n``-byte allocation per piece, no joining copy at the end."""
    first = os.read(fd, n)
    if len(first) == n:
        return first
    if not first:
        return None
    buf = bytearray(n)
    view = memoryview(buf)
    view[:len(first)] = first
    got = len(first)
    del first
    while got < n:
        k = os.readv(fd, [view[got:]])
        if not k:
            return None
        got += k
    return buf


def recv(fd: int, loads=pickle.loads):
    hdr = read_exact(fd, 4)
    if hdr is None:
        return None
    body = read_exact(fd, _HDR.unpack(hdr)[0])
    return None if body is None else loads(body)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    write_all(fd, _HDR.pack(len(data)) + data)


def splice_exactly(src: int, dst: int, n: int, eof: str) -> None:
    """Move exactly ``n`` bytes from ``src`` to ``dst`` in the kernel (``splice``); ``EOFError(eof)`` when ``src``
    ends first.  A non-blocking ``src`` is waited for."""
    while n:
        try:
            moved = os.splice(src, dst, min(n, 1 << 20))
        except BlockingIOError:
            select.select([src], [], [], 1.0)
            continue
        if not moved:
            raise EOFError(eof)
        n -= moved


def set_nonblock(fd: int) -> None:
    os.set_blocking(fd, False)


class Router:
    """Moves program output and judge reports to the pool with ``splice(2)``: framed by a small pickled
    header, the bytes themselves never enter this process's memory (so no later program forked from the
    zygote can find an earlier program's output, source or tests in its own address space)."""

    def __init__(self, ctl_out: int):
        self.ctl_out = ctl_out
        self.tmp_r, self.tmp_w = os.pipe()
        self.null = os.open("/dev/null", os.O_WRONLY)

    def frame(self, idx: int, i: int, stream: str, src: int, n: int) -> None:
        """Forward exactly ``n`` bytes that ``src`` is about to deliver (a judge frame's payload)."""
        send(self.ctl_out, ("seg", idx, i, stream, n))
        splice_exactly(src, self.ctl_out, n, "stream ended inside a frame")

    def pump(self, src: int, idx: int, i: int, stream: str, st: dict) -> bool:
        """Forward what ``src`` has now, keeping at most ``st['keep']`` bytes per stream and test (the rest is
        counted and discarded).  Returns True at EOF."""
        while True:
            room = st["keep"] - st["kept"].get(stream, 0)
            try:
                dst, size = (self.tmp_w, min(room, 1 << 16)) if room > 0 else (self.null, 1 << 16)
                n = os.splice(src, dst, size, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                return False
            except OSError:   # (os.splice retries EINTR itself)
                return True
            if not n:
                return True
            st["total"] += n
            if room > 0:
                st["kept"][stream] = st["kept"].get(stream, 0) + n
                self.frame(idx, i, stream, self.tmp_r, n)
            if st["total"] > st["limit"]:
                return False


def router_of(z) -> Router:
    r = getattr(z, "_router_obj", None)
    if r is None:
        r = z._router_obj = Router(z.ctl_out)
    return r


JHDR = struct.Struct("!cII")
