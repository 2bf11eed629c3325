"""Stateful Python interpreter sessions for multi-turn code-interpreter RL (one per trajectory).

>>> with InterpreterSession(cpu_s_per_call=5) as s:
...     s.run("x = 20")
...     s.run("x * 2 + 2").result
'42'

:meth:`InterpreterSession.run` runs one cell and returns a :class:`CellResult`: ``stdout``/``stderr`` (each capped at
``output_bytes``, with a note when cut), ``result`` (repr of the last expression, like a notebook; None when there is
none or it is None), ``error`` (the traceback text of an exception), ``status`` and the cell's CPU/wall seconds.
Variables and imports persist across cells.

Status: ``ok``; ``error`` (the cell raised; the session goes on, state kept); ``timeout`` (over its per-call CPU or wall
limit); ``killed`` (the interpreter died: over the session's memory limit, ``os._exit``, a crash); ``closed`` (the
session was closed, reaped after ``idle_timeout_s`` without a call, or its host failed). **After a timeout or kill the
session survives**: every process of the session is killed and the next call starts a fresh interpreter in the same
sandbox (variables and imports are gone, files in its ``/tmp`` stay); the result's ``error`` says so. Processes a cell
starts end with the cell.

Isolation is the sandbox's (:mod:`.session_host`): per session a cgroup slot (memory, pids, CPU), its own
mount/pid/net/ipc/uts namespaces, the minimal read-only root with a private ``/tmp``, a uid of its own, no capabilities,
``no_new_privs``, seccomp, rlimits; no network, nothing of the host, the project, the tests or other sessions is
reachable. :class:`SessionPool` holds the service's sessions.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import threading
import time
from dataclasses import dataclass

from . import session_host as proto
from .isolate import start_python

START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class CellResult:
    stdout: str
    stderr: str
    result: str | None
    error: str | None
    status: str
    cpu_s: float
    wall_s: float
    # rich display data of the cell, Jupyter style: one {mime type: data} per item (a matplotlib figure:
    # text/plain + image/png base64; a value with _repr_html_: text/plain + text/html; display(obj))
    display: tuple = ()

    def as_dict(self) -> dict:
        out = {"stdout": self.stdout, "stderr": self.stderr, "result": self.result, "error": self.error,
               "status": self.status, "cpu_s": self.cpu_s, "wall_s": self.wall_s}
        if any(set(d) - {"text/plain"} for d in self.display):   # rich data (a value alone is `result`)
            out["display"] = list(self.display)
        return out


class SessionError(RuntimeError):
    """A session could not be started (the sandbox host failed)."""


class SessionLimit(SessionError):
    """The pool holds its maximum number of live sessions."""


def _closed(why: str) -> CellResult:
    return CellResult("", "", None, why, "closed", 0.0, 0.0)


class _ForkServer:
    """The process-wide parent of session hosts (:func:`.session_host.forkserver_main`), started on first use
    with the sandbox's scrubbed environment; restarted if it died."""

    def __init__(self):
        self.lock = threading.Lock()
        self.proc = self.sock = None
        self.owner = os.getpid()

    def _ensure(self) -> None:
        if self.owner != os.getpid():   # a forked copy of this process starts a fork server of its own
            self.proc, self.sock, self.owner = None, None, os.getpid()
        if self.proc is not None and self.proc.poll() is None:
            return
        if self.sock is not None:
            self.sock.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = start_python("session_host.forkserver_main", [theirs.fileno()])
        finally:
            theirs.close()
        self.sock = ours
        self.sock.settimeout(START_TIMEOUT_S)

    def spawn(self, ctl_in: int, ctl_out: int) -> int:
        """Fork one session host reading ``ctl_in`` and writing ``ctl_out``; its pid."""
        with self.lock:
            for attempt in range(2):
                self._ensure()
                try:
                    socket.send_fds(self.sock, [b"host"], [ctl_in, ctl_out])
                    head = self._read(proto.HDR.size)
                    return int(json.loads(self._read(proto.HDR.unpack(head)[0]))["pid"])
                except (OSError, ValueError, KeyError) as exc:
                    if self.proc is not None:
                        self.proc.kill()
                        self.proc.wait()
                    self.proc = None
                    if attempt:
                        raise SessionError(f"session fork server failed: {exc}") from None
        raise AssertionError("unreachable")

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise OSError("session fork server exited")
            buf += chunk
        return buf


_FORKSERVER = _ForkServer()


class InterpreterSession:
    """One sandboxed, stateful Python interpreter. Thread-safe (calls are serialized).

    ``cpu_s_per_call``/``wall_s_per_call``: limits of one :meth:`run` (wall defaults to max(3 x CPU, CPU + 5));
    ``memory_mb``: the whole session's memory (cgroup; RLIMIT_AS per process without one); ``idle_timeout_s``:
    the session closes itself after this long without a call; ``output_bytes``: cap per stream per cell;
    ``max_procs``: processes + threads; ``tmpfs_mb``: its private ``/tmp``."""

    def __init__(self, cpu_s_per_call: float = 10.0, wall_s_per_call: float | None = None, memory_mb: int = 1024,
                 idle_timeout_s: float = 600.0, *, output_bytes: int = 64 << 10, result_chars: int = 16 << 10,
                 max_procs: int = 32, tmpfs_mb: int = 64, max_code_bytes: int = 1 << 20,
                 interpreter_cpu_s: float | None = None):
        for name, v in (("cpu_s_per_call", cpu_s_per_call), ("memory_mb", memory_mb),
                        ("idle_timeout_s", idle_timeout_s), ("output_bytes", output_bytes)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"InterpreterSession: {name} must be a positive number, got {v!r}")
        self.cpu_s = float(cpu_s_per_call)
        self.wall_s = float(wall_s_per_call) if wall_s_per_call else max(3 * self.cpu_s, self.cpu_s + 5.0)
        self.idle_timeout_s = float(idle_timeout_s)
        self.max_code_bytes = max_code_bytes
        self.cfg = {"memory_mb": int(memory_mb), "max_procs": int(max_procs), "tmpfs_mb": int(tmpfs_mb),
                    "output_bytes": int(output_bytes), "result_chars": int(result_chars), "max_file_mb": 64,
                    "idle_timeout_s": self.idle_timeout_s, "cpu_s": self.cpu_s, "max_open_files": 256,
                    "interpreter_cpu_s": interpreter_cpu_s or max(600.0, 50 * self.cpu_s)}
        self.lock = threading.Lock()
        self.pid: int | None = None      # the session's host process (outer)
        self.pidfd: int | None = None
        self.w = self.r = None
        self.meta: dict = {}
        self.closed_why: str | None = None
        self.last_used = time.monotonic()
        self._start()

    def _start(self) -> None:
        r_in, self.w = os.pipe()
        self.r, w_out = os.pipe()
        try:
            self.pid = _FORKSERVER.spawn(r_in, w_out)
        finally:
            os.close(r_in)
            os.close(w_out)
        try:
            self.pidfd = os.pidfd_open(self.pid)
            proto.send(self.w, self.cfg)
            msg = proto.recv(self.r, timeout=START_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as exc:
            msg = repr(exc)
        if not isinstance(msg, dict) or "ready" not in msg:
            self._shutdown()
            raise SessionError(f"interpreter session failed to start: {msg!r}")
        self.meta = msg["ready"]

    @property
    def closed(self) -> bool:
        """Closed, or its host exited."""
        return self.closed_why is not None or self.pidfd is None or bool(select.select([self.pidfd], [], [], 0)[0])

    def run(self, code: str, *, cpu_s: float | None = None, wall_s: float | None = None) -> CellResult:
        """Run one cell in this session's interpreter (see the module docstring for the statuses).
        ``cpu_s``/``wall_s``: this call's limits, at most the session's (default: the session's)."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        cpu = self.cpu_s if cpu_s is None else min(float(cpu_s), self.cpu_s)
        wall = self.wall_s if wall_s is None else min(float(wall_s), self.wall_s)
        with self.lock:
            if self.closed:
                if self.closed_why is None:
                    self.closed_why = (f"session closed after {self.idle_timeout_s:g} s idle"
                                       if time.monotonic() - self.last_used >= self.idle_timeout_s
                                       else "session host exited")
                    self._shutdown()
                return _closed(self.closed_why)
            if len(code.encode("utf-8", "surrogatepass")) > self.max_code_bytes:
                return CellResult("", "", None, f"ValueError: cell of {len(code.encode('utf-8', 'surrogatepass'))} "
                                  f"bytes is over the {self.max_code_bytes}-byte limit", "error", 0.0, 0.0)
            code = code.encode("utf-8", "replace").decode("utf-8")   # lone surrogates cannot cross as JSON text
            try:
                proto.send(self.w, {"op": "run", "code": code, "cpu_s": cpu, "wall_s": wall})
                reply = proto.recv(self.r, timeout=wall + 30.0)
            except (OSError, TimeoutError, ValueError) as exc:
                reply = None
                why = f"session host failed: {type(exc).__name__}"
            else:
                why = "session host exited"
            self.last_used = time.monotonic()
            if not isinstance(reply, dict):
                self.closed_why = why
                self._shutdown()
                return _closed(why)
            return CellResult(reply["stdout"], reply["stderr"], reply["result"], reply["error"], reply["status"],
                              float(reply["cpu_s"]), float(reply["wall_s"]), tuple(reply.get("display") or ()))

    def close(self) -> None:
        with self.lock:
            self.closed_why = self.closed_why or "session closed"
            self._shutdown()

    def _shutdown(self) -> None:
        """Close the control pipes (the host then kills its processes and exits); a host that does not exit in
        10 s is killed and its cgroup slot removed."""
        for fd in (self.w, self.r):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.w = self.r = None
        if self.pidfd is None:
            return
        if not select.select([self.pidfd], [], [], 10.0)[0]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        if self.meta.get("cgroup"):   # the host's own view has no /sys after its pivot: removed from here
            from . import cgroup
            with contextlib.suppress(OSError):
                cgroup.remove_slot(f"factory-sbx-{self.pid}-session")
        os.close(self.pidfd)
        self.pidfd = None

    def __enter__(self) -> "InterpreterSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        with contextlib.suppress(Exception):
            self._shutdown()


class SessionPool:
    """Live sessions keyed by trajectory id, for the service. ``session(tid)`` returns the trajectory's session,
    starting one if needed (:class:`SessionLimit` when ``max_sessions`` are live); ``close(tid)`` frees it.
    A reaper thread closes sessions idle for ``idle_timeout_s`` (each session also closes itself then)."""

    def __init__(self, max_sessions: int = 64, **session_kwargs):
        if max_sessions < 1:
            raise ValueError("SessionPool: max_sessions must be >= 1")
        self.max_sessions = max_sessions
        self.kwargs = session_kwargs
        self.idle_timeout_s = float(session_kwargs.get("idle_timeout_s", 600.0))
        self.sessions: dict[str, InterpreterSession] = {}
        self.lock = threading.Lock()
        self.starting = 0
        self.counters = {"created": 0, "closed": 0, "reaped_idle": 0, "refused_full": 0}
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap_loop, name="session-reaper", daemon=True)
        self._reaper.start()

    def session(self, tid: str, create: bool = True) -> InterpreterSession | None:
        with self.lock:
            s = self.sessions.get(tid)
            if s is not None and not s.closed:
                return s
            if s is not None:   # closed itself (idle, host died): a new one takes its place
                self.sessions.pop(tid)
                self.counters["closed"] += 1
            if not create:
                return None
            if len(self.sessions) + self.starting >= self.max_sessions:
                self.counters["refused_full"] += 1
                raise SessionLimit(f"{self.max_sessions} interpreter sessions are live (this server's maximum): "
                                   "finish trajectories to free theirs, or retry later")
            self.starting += 1
        try:
            s = InterpreterSession(**self.kwargs)
        finally:
            with self.lock:
                self.starting -= 1
        with self.lock:
            old = self.sessions.get(tid)
            if old is not None and not old.closed:   # another thread started this trajectory's session first
                s.close()
                return old
            self.sessions[tid] = s
            self.counters["created"] += 1
            return s

    def run(self, tid: str, code: str, **limits) -> CellResult:
        return self.session(tid).run(code, **limits)

    def close(self, tid: str) -> bool:
        with self.lock:
            s = self.sessions.pop(tid, None)
            if s is not None:
                self.counters["closed"] += 1
        if s is not None:
            s.close()
        return s is not None

    def live(self) -> int:
        with self.lock:
            return sum(1 for s in self.sessions.values() if not s.closed)

    def stats(self) -> dict:
        return {"live": self.live(), "max_sessions": self.max_sessions, **self.counters}

    def _reap_loop(self) -> None:
        while not self._stop.wait(min(5.0, max(0.2, self.idle_timeout_s / 4))):
            self.reap()

    def reap(self) -> int:
        with self.lock:
            dead = [(t, s) for t, s in self.sessions.items()
                    if s.closed or (not s.lock.locked() and time.monotonic() - s.last_used >= self.idle_timeout_s)]
            for t, _ in dead:
                self.sessions.pop(t)
            self.counters["reaped_idle"] += len(dead)
        for _, s in dead:
            s.close()
        return len(dead)

    def close_all(self) -> None:
        self._stop.set()
        with self.lock:
            items, self.sessions = list(self.sessions.values()), {}
        for s in items:
            s.close()

    def __enter__(self) -> "SessionPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close_all()
