"""Per-worker-slot cgroups (v2 when the unified hierarchy has the controllers, else v1).

A slot is created once per zygote, nested under the zygote's own cgroup, reused for every program
(it is empty between programs) and removed at exit.  Provides memory/pids/CPU limits, CPU-time
accounting of the whole process tree, peak memory, OOM-kill detection and kill-everything.
"""
from __future__ import annotations

import contextlib
import os
import signal
import time

ROOT = "/sys/fs/cgroup"


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, value) -> None:
    with open(path, "w") as f:
        f.write(str(value))


_FDS: dict[tuple[str, int], int] = {}


def _fd(path: str, flags: int) -> int:
    """A cached descriptor for a cgroup file polled per test (a forked child closes every descriptor above 5)."""
    fd = _FDS.get((path, flags))
    if fd is None:
        fd = _FDS[(path, flags)] = os.open(path, flags | os.O_CLOEXEC)
    return fd


def _pread(path: str) -> str:
    return os.pread(_fd(path, os.O_RDONLY), 4096, 0).decode()


def _pwrite(path: str, value) -> None:
    os.write(_fd(path, os.O_WRONLY), str(value).encode())


def _field(path: str, key: str) -> int | None:
    """The number after ``key`` in a flat-keyed cgroup file (``memory.events``, ``cpu.stat``), None without it."""
    return next((int(line.split()[1]) for line in _pread(path).splitlines() if line.startswith(key + " ")), None)


def _forget_fds(prefix: str) -> None:
    for key in [k for k in _FDS if k[0].startswith(prefix)]:
        with contextlib.suppress(OSError):
            os.close(_FDS.pop(key))


def _own_paths() -> dict[str, str]:
    lines = [line.split(":", 2) for line in _read("/proc/self/cgroup").splitlines()]
    return {c: path for _, ctrls, path in lines for c in (ctrls.split(",") if ctrls else [""])}


class Slot:
    """Base of :class:`V1Slot` and :class:`V2Slot`, which provide ``procs`` (the cgroup.procs files a process joins),
    reset_peak(), cpu_ns(), peak_bytes(), oom_kills(), pids() and remove()."""
    version = None
    controllers: tuple = ()
    procs: list[str] = []
    self_inside = False  # the zygote itself lives in the slot (children are born in it)

    def adopt_self(self) -> None: ...

    def attach(self, pid: int) -> None:
        if not self.self_inside:
            for path in self.procs:
                _pwrite(path, pid)

    def attach_fd(self) -> None:
        for path in self.procs:
            _fd(path, os.O_WRONLY)

    def kill_all(self) -> None:
        me = os.getpid()
        for _ in range(50):
            pids = [p for p in self.pids() if p != me]
            if not pids:
                return
            for p in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
            time.sleep(0.002)

    def prepare(self) -> None:
        """Open the descriptors of every file polled per test (the zygote then loses /sys from its view)."""
        for fn in (self.cpu_ns, self.peak_bytes, self.oom_kills, self.pids, self.reset_peak, self.attach_fd):
            with contextlib.suppress(OSError, ValueError):
                fn()


class V1Slot(Slot):
    version = "v1"

    def __init__(self, name: str, limits: dict):
        own = _own_paths()
        self.dirs = {}
        for ctrl in ("memory", "pids", "cpuacct", "cpu"):
            base = os.path.join(ROOT, ctrl)
            if not os.path.isdir(base) or ctrl not in own:
                continue
            d = os.path.join(base, own[ctrl].lstrip("/"), name)
            os.makedirs(d, exist_ok=True)
            self.dirs[ctrl] = d
        if not {"memory", "pids", "cpuacct"} <= self.dirs.keys():
            self.remove()
            raise OSError("cgroup v1: memory/pids/cpuacct not all available")
        self.procs = [self._p(ctrl, "cgroup.procs") for ctrl in self.dirs]
        mem = limits["memory_mb"] << 20
        _write(self._p("memory", "memory.limit_in_bytes"), mem)
        with contextlib.suppress(OSError):
            _write(self._p("memory", "memory.memsw.limit_in_bytes"), mem)
        if os.path.exists(self._p("memory", "memory.swappiness")):
            _write(self._p("memory", "memory.swappiness"), 0)
        _write(self._p("pids", "pids.max"), limits["max_procs"] + 2)  # +2: the zygote, the kept judge
        if "cpu" in self.dirs:  # at most one core per slot
            _write(self._p("cpu", "cpu.cfs_period_us"), 100000)
            _write(self._p("cpu", "cpu.cfs_quota_us"), 100000)
        self.controllers = tuple(sorted(self.dirs))

    def adopt_self(self) -> None:
        """Move the calling zygote in once (v1 migrations cost ~ms, so not per program); pages it
        already owns stay charged to its old cgroup."""
        with contextlib.suppress(OSError):   # the OOM killer must pick the sandboxed child (adj 1000), never the zygote
            _write("/proc/self/oom_score_adj", "-1000")
        for path in self.procs:
            _write(path, os.getpid())
        self.self_inside = True

    def _p(self, ctrl, fname):
        return os.path.join(self.dirs[ctrl], fname)

    def reset_peak(self):
        with contextlib.suppress(OSError):
            _pwrite(self._p("memory", "memory.max_usage_in_bytes"), 0)

    def cpu_ns(self):
        return int(_pread(self._p("cpuacct", "cpuacct.usage")))

    def peak_bytes(self):
        return int(_pread(self._p("memory", "memory.max_usage_in_bytes")))

    def oom_kills(self):
        kills = _field(self._p("memory", "memory.oom_control"), "oom_kill")
        return int(_pread(self._p("memory", "memory.failcnt"))) if kills is None else kills

    def pids(self):
        return [int(x) for x in _pread(self._p("pids", "cgroup.procs")).split()]

    def remove(self):
        for d in self.dirs.values():
            _forget_fds(d)
            if self.self_inside:  # move back out before rmdir
                with contextlib.suppress(OSError):
                    _write(os.path.join(os.path.dirname(d), "cgroup.procs"), os.getpid())
            with contextlib.suppress(OSError):
                os.rmdir(d)


class V2Slot(Slot):
    version = "v2"

    def __init__(self, name: str, limits: dict):
        base = os.path.join(ROOT, "unified") if os.path.exists(os.path.join(ROOT, "unified",
                                                                            "cgroup.controllers")) else ROOT
        own = _own_paths().get("", "/")
        parent = os.path.join(base, own.lstrip("/"))
        avail = set(_read(os.path.join(parent, "cgroup.subtree_control")).split())
        if not {"memory", "pids"} <= avail:
            raise OSError("cgroup v2: memory/pids not delegated to our subtree")
        self.dir = os.path.join(parent, name)
        os.makedirs(self.dir, exist_ok=True)
        self.procs = [self._p("cgroup.procs")]
        _write(self._p("memory.max"), limits["memory_mb"] << 20)
        if os.path.exists(self._p("memory.swap.max")):
            _write(self._p("memory.swap.max"), 0)
        _write(self._p("pids.max"), limits["max_procs"] + 1)  # +1: the kept judge
        if os.path.exists(self._p("cpu.max")):
            _write(self._p("cpu.max"), "100000 100000")
        self.controllers = tuple(sorted(avail))

    def _p(self, fname):
        return os.path.join(self.dir, fname)

    def reset_peak(self):
        with contextlib.suppress(OSError):
            _pwrite(self._p("memory.peak"), "reset")

    def cpu_ns(self):
        usec = _field(self._p("cpu.stat"), "usage_usec")
        return None if usec is None else usec * 1000

    def peak_bytes(self):
        try:
            return int(_pread(self._p("memory.peak")))
        except FileNotFoundError:
            return None

    def oom_kills(self):
        return _field(self._p("memory.events"), "oom_kill") or 0

    def pids(self):
        return [int(x) for x in _pread(self.procs[0]).split()]

    def kill_all(self):
        if os.path.exists(self._p("cgroup.kill")):
            _write(self._p("cgroup.kill"), 1)
        super().kill_all()

    def remove(self):
        _forget_fds(self.dir)
        with contextlib.suppress(OSError):
            os.rmdir(self.dir)


def _alive(pid: int) -> bool:
    try:
        with contextlib.suppress(PermissionError):   # another user's process: alive
            os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _slot_bases() -> list[str]:
    own = _own_paths()
    return [os.path.join(ROOT, ctrl or "unified", own.get(ctrl, "/").lstrip("/"))
            for ctrl in ("memory", "pids", "cpuacct", "cpu", "")]


def _kill_and_remove(d: str) -> bool:
    try:
        for p in _read(os.path.join(d, "cgroup.procs")).split():
            os.kill(int(p), signal.SIGKILL)
        time.sleep(0.01)
        os.rmdir(d)
        return True
    except OSError:
        return False


def remove_stale(prefix: str = "factory-sbx-") -> int:
    """Remove slots left behind by dead pools (name ``factory-sbx-<pool pid>-...``)."""
    n = 0
    for base in _slot_bases():
        try:
            names = [x for x in os.listdir(base) if x.startswith(prefix)]
        except OSError:
            continue
        for x in names:
            try:
                pid = int(x[len(prefix):].split("-")[0])
            except ValueError:
                continue
            if not _alive(pid):
                n += _kill_and_remove(os.path.join(base, x))
    return n


def remove_slot(name: str) -> int:
    """Remove one worker's slot (its zygote was killed, so nobody else will): kill what is left in it first."""
    return sum(_kill_and_remove(os.path.join(base, name)) for base in _slot_bases()
               if os.path.isdir(os.path.join(base, name)))


def make_slot(name: str, limits: dict) -> tuple[Slot | None, list[str]]:
    """Best cgroup slot available (v2, then v1), plus notes on what was tried and failed."""
    notes = []
    with contextlib.suppress(OSError):
        remove_stale()
    for cls in (V2Slot, V1Slot):
        try:
            return cls(name, limits), notes
        except (OSError, ValueError, KeyError) as exc:
            notes.append(f"{cls.version}: {exc}")
    return None, notes
