"""The zygote: a long-lived, warm worker process (one per pool slot).

Started as ``python -s`` by the pool (pinned to one core when the pool pins); imports common modules once,
enters its own namespaces (:func:`.isolate.setup_worker_mounts`; it becomes pid 1 there, the original process
waits outside), joins its cgroup slot, probes that a sandboxed child can start, and records what is active
or degraded.  Per program it mounts a fresh ``/tmp``/``/dev/shm`` and forks the *candidate* (the program,
alone); function-style tests are judged by a *judge* process -- with root, one kept across programs
(:class:`_KeptJudge`, its own uid, so everything the program leaves behind is killed by uid and the judge
survives); otherwise one forked per program.  The zygote never holds a job's bytes (the batch lies in a
memfd the children read their part of), supervises per-test CPU (cgroup ``cpuacct``) with a wall-clock
backstop, forwards output and judge reports with ``splice``, and on timeout/crash kills everything
(``kill(-1)`` as pid 1); a fresh pair continues with the next test.  Messages to and from the pool are
length-prefixed pickles on two private pipes (trusted side only).
"""
from __future__ import annotations

import errno
import gc
import os
import pickle
import select
import signal
import struct
import sys
import time
import traceback

# What HumanEval/MBPP/LeetCode programs and their preambles import.  Every module held here is page-table work on
# each fork and exit (~0.1 ms per MB), so heavier, rarer ones (unittest, decimal, statistics, hashlib, numpy) are
# imported by the programs that use them, or opted in with SandboxPool(preload=...).
WARM_MODULES = ("array bisect collections copy datetime enum functools heapq io itertools json math operator random "
                "re string typing").split()

_HDR = struct.Struct("!I")


def read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def recv(fd: int):
    hdr = read_exact(fd, 4)
    if hdr is None:
        return None
    body = read_exact(fd, _HDR.unpack(hdr)[0])
    return None if body is None else pickle.loads(body)


def send(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HDR.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


class Zygote:
    def __init__(self, ctl_in: int, ctl_out: int, limits: dict, slot_name: str):
        from . import cgroup, isolate
        self.isolate = isolate
        self.ctl_in, self.ctl_out, self.limits = ctl_in, ctl_out, limits
        self.kept = None   # the kept judge (_KeptJudge), when one is running
        self.root = os.geteuid() == 0
        isolate.prctl(isolate.PR_SET_CHILD_SUBREAPER, 1)
        self.slot, cg_notes = cgroup.make_slot(slot_name, limits) if self.root else (None, ["not root"])
        self.outer_euid, self.outer_pid = os.geteuid(), os.getpid()
        self.worker_ns = self._enter_worker_ns()
        if self.slot and not self.slot.self_inside:
            self.slot.adopt_self()
            self.slot.prepare()
        self.plan, self.meta = self._probe(cg_notes)
        self.keep_judge = bool(self.plan.get("worker_ns") and self.plan.get("sandbox_uid")
                               and self.plan.get("judge_uid"))
        self.meta["judge_kept"] = self.keep_judge

    def _enter_worker_ns(self) -> bool:
        """Put the zygote itself into fresh mount/pid/net/ipc/uts (+user when not root) namespaces.

        The original process stays outside as a waiter; the zygote continues as pid 1 of the new
        pid namespace with a read-only filesystem and a fresh /proc.  Per program only a fork, a
        fresh tmpfs /tmp and /dev/shm and a new IPC namespace are needed, and ``kill(-1)`` from
        pid 1 removes every process the program left behind.  Degrades (recorded) on failure."""
        iso = self.isolate
        self.ns_error = None
        try:
            iso.enter_namespaces(dict(mntns=True, pidns=True, netns=True, ipcns=True, utsns=True,
                                      userns=not self.root))
        except OSError as exc:
            self.ns_error = f"unshare: {exc}"
            return False
        pid = os.fork()
        if pid:  # outer waiter: mirror the zygote's exit status
            os.close(self.ctl_in)
            os.close(self.ctl_out)
            while True:
                try:
                    _, st = os.waitpid(pid, 0)
                    break
                except InterruptedError:
                    continue
            if self.slot:  # the zygote's own view has no /sys: the slot is removed from out here
                try:
                    self.slot.kill_all()
                    self.slot.remove()
                except OSError:
                    pass
            os._exit(os.waitstatus_to_exitcode(st) & 0x7F)
        iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_IGN)
        if self.slot:  # join the slot and open every cgroup file we poll, before /sys leaves our view
            self.slot.adopt_self()
            self.slot.prepare()
        try:
            __import__("socket").sethostname("sandbox")
            iso.setup_worker_mounts({"needed": self._needed_paths()})
        except OSError as exc:
            self.ns_error = f"worker mounts: {exc}"
            return False
        iso.prctl(iso.PR_SET_DUMPABLE, 0)
        return True

    @staticmethod
    def _needed_paths() -> list[str]:
        """The interpreter and its package paths, bound into the minimal root.  Never the project checkout (it
        may hold ./lake, exports, data): the sandbox modules are imported before the zygote pivots."""
        project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return [sys.prefix, sys.base_prefix, sys.exec_prefix] + [
            p for p in sys.path if p and os.path.realpath(p) != os.path.realpath(project)]

    def _uid(self):
        return 100000 + self.outer_pid if self.root else None

    # ------------------------------------------------------------------ isolation probe
    def _full_plan(self) -> dict:
        plan = dict(worker_ns=self.worker_ns, drop_caps=not self.root, nproc_rlimit=True,
                    as_rlimit=self.slot is None, env_is_safe=dict(os.environ) == self.isolate.SAFE_ENV,
                    seccomp=True)
        if self.root:
            plan["sandbox_uid"] = self._uid()
            plan["judge_uid"] = 5_000_000 + self.outer_pid
        else:
            plan["nproc_base"] = 4096
        return plan

    def _probe(self, cg_notes: list[str]):
        degraded = []
        if self.slot is None:
            degraded.append("no cgroup (" + "; ".join(cg_notes) + "): memory via RLIMIT_AS, procs via RLIMIT_NPROC")
        if not self.worker_ns:
            degraded.append(f"no namespaces ({self.ns_error}): no netns/pidns/mntns; private workdir only")
        plan = self._full_plan()
        ok, err = self._probe_one(plan)
        if not ok:
            degraded.append(f"sandbox setup failed ({err}); running with rlimits only")
            plan = {"nproc_rlimit": False, "as_rlimit": self.slot is None}
            ok, err2 = self._probe_one(plan)
            if not ok:
                raise RuntimeError(f"sandbox cannot start a child: {err} / {err2}")
        ns = bool(plan.get("worker_ns"))
        meta = {
            "sandbox_version": None, "euid": self.outer_euid,
            "userns": ns and not self.root, "pidns": ns, "netns": ns, "mntns": ns, "utsns": ns,
            "ipcns": ns, "ns_scope": ("pid/net/mnt/uts per worker (no process survives a program); ipc ns per "
                                      "program; /tmp,/dev/shm tmpfs per program (kept only while no program "
                                      "leaves an inode, block or mode change in them)") if ns else None,
            "fs": ("minimal read-only root (system dirs, interpreter, packages) + private tmpfs /tmp,/dev/shm" if ns else "private-workdir-only"),
            "uid_drop": bool(plan.get("sandbox_uid")),
            "caps_dropped": bool(plan.get("drop_caps") or plan.get("sandbox_uid")),
            "no_new_privs": bool(plan.get("worker_ns") or plan.get("sandbox_uid")),
            "seccomp": bool(plan.get("seccomp")),
            "judge_split": "test code runs in a separate judge process; the program is reached over RPC "
                           "with plain data only (kind 'unittest' is judged in-process and marked so)",
            "judge_uid": plan.get("judge_uid"),
            "minimal_root": bool(ns and self.isolate.MINIMAL_ROOT.get("on")),
            "proc_hidepid": bool(ns and self.isolate.MINIMAL_ROOT.get("hidepid")),
            "zygote_holds_job_data": False,
            "bwrap": False, "cgroup": self.slot.version if self.slot else None,
            "cgroup_controllers": list(self.slot.controllers) if self.slot else [],
            "cpu_accounting": "cgroup" if self.slot else "proc-stat",
            "rlimits": ["CORE", "NOFILE", "FSIZE", "CPU"] + (["NPROC"] if plan.get("nproc_rlimit") else [])
                       + (["AS"] if plan.get("as_rlimit") else []),
            "kill": "kill(-1) from pid-1 zygote" if ns else ("cgroup" if self.slot else "process-group"),
            "degraded": degraded,
        }
        return plan, meta

    def _probe_one(self, plan: dict):
        """Start one sandboxed child with the full plan; it must report ``I`` on fd 3."""
        r, w = os.pipe()
        er, ew = os.pipe()
        try:
            pid = _spawn(self, "probe", {2: ew, 3: w}, None, -1, None, plan, 1)
        except OSError as exc:
            return False, str(exc)
        os.close(w)
        os.close(ew)
        got = bytearray()
        deadline = time.monotonic() + 10
        while len(got) < _JHDR.size and time.monotonic() < deadline:
            ready, _, _ = select.select([r], [], [], 0.1)
            if r in ready:
                chunk = os.read(r, _JHDR.size)
                if not chunk:
                    break
                got += chunk
        os.set_blocking(er, False)
        try:
            err = os.read(er, 4096).decode("utf-8", "replace")
        except BlockingIOError:
            err = ""
        _kill_everything(self, plan, [pid])
        _reap(plan, {pid: None})
        os.close(r)
        os.close(er)
        return bytes(got[:1]) == b"I", err[-300:]

    # ------------------------------------------------------------------ jobs
    def run_job(self, idx: int, hdr: dict, memfd: int) -> list[dict]:
        results: dict[int, dict] = {}
        pos, n = 0, len(hdr["tests"])
        base = self.limits
        cpu_s = hdr.get("cpu_s")
        if isinstance(cpu_s, (int, float)) and not isinstance(cpu_s, bool) and 0 < cpu_s <= MAX_JOB_CPU_S:
            self.limits = dict(base, cpu_s=float(cpu_s))   # this job's calibrated time limit
        try:
            while pos < n:
                if hdr["mode"] == "stdio":
                    pos = _run_stdio_test(self, idx, hdr, memfd, pos, results)
                else:
                    pos = _Run(self, idx, hdr, memfd, pos, self.plan).supervise(results)
                if pos < n and not hdr.get("run_all") and any(r.get("outcome") == "timeout" for r in results.values()):
                    for t in hdr["tests"]:   # one CPU budget per looping program, not one per test
                        results.setdefault(t["i"], {"outcome": "not_run", "cpu_ms": 0.0, "wall_ms": 0.0,
                                                    "peak_kb": None})
                    break
        finally:
            self.limits = base
        return [results[t["i"]] for t in hdr["tests"]]

    def serve(self) -> None:
        try:
            send(self.ctl_out, ("ready", self.meta))
            while True:
                msg = recv(self.ctl_in)
                if msg is None or msg[0] == "quit":
                    break
                _, hdrs, body_len = msg
                memfd = os.memfd_create("job", os.MFD_CLOEXEC)
                try:  # the job's bytes go pipe -> memfd in the kernel: never into this process's heap
                    left = body_len
                    while left:
                        moved = os.splice(self.ctl_in, memfd, min(left, 1 << 20))
                        if not moved:
                            raise EOFError("pool closed mid-job")
                        left -= moved
                    for idx, hdr in enumerate(hdrs):
                        try:
                            send(self.ctl_out, ("done", idx, self.run_job(idx, hdr, memfd)))
                        except Exception:  # noqa: BLE001
                            send(self.ctl_out, ("error", idx, traceback.format_exc()[-3000:]))
                finally:
                    os.close(memfd)
                send(self.ctl_out, ("batch_done",))
        except (OSError, EOFError):
            pass  # pool went away
        finally:
            if self.slot and not self.worker_ns:
                try:
                    self.slot.kill_all()
                    self.slot.remove()
                except OSError:
                    pass


def _set_nonblock(fd: int) -> None:
    os.set_blocking(fd, False)


class Router:
    """Moves program output and judge reports to the pool with ``splice(2)``: framed by a small pickled
    header, the bytes themselves never enter this process's memory (so no later program forked from the
    zygote can find an earlier program's output, source or tests in its own address space)."""

    def __init__(self, ctl_out: int):
        self.ctl_out = ctl_out
        self.tmp_r, self.tmp_w = os.pipe()
        self.null = os.open("/dev/null", os.O_WRONLY)

    def _move(self, src: int, n: int) -> None:
        while n:
            try:
                moved = os.splice(src, self.ctl_out, n)
            except BlockingIOError:
                select.select([src], [], [], 1.0)
                continue
            if not moved:
                raise EOFError("stream ended inside a frame")
            n -= moved

    def frame(self, idx: int, i: int, stream: str, src: int, n: int) -> None:
        """Forward exactly ``n`` bytes that ``src`` is about to deliver (a judge frame's payload)."""
        send(self.ctl_out, ("seg", idx, i, stream, n))
        self._move(src, n)

    def pump(self, src: int, idx: int, i: int, stream: str, st: dict) -> bool:
        """Forward what ``src`` has now, keeping at most ``st['keep']`` bytes per stream and test (the rest is
        counted and discarded).  Returns True at EOF."""
        while True:
            room = st["keep"] - st["kept"].get(stream, 0)
            try:
                if room > 0:
                    n = os.splice(src, self.tmp_w, min(room, 1 << 16), flags=os.SPLICE_F_NONBLOCK)
                else:
                    n = os.splice(src, self.null, 1 << 16, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                return False
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                return True
            if not n:
                return True
            st["total"] += n
            if room > 0:
                st["kept"][stream] = st["kept"].get(stream, 0) + n
                send(self.ctl_out, ("seg", idx, i, stream, n))
                self._move(self.tmp_r, n)
            if st["total"] > st["limit"]:
                return False


def _router(z) -> Router:
    r = getattr(z, "_router_obj", None)
    if r is None:
        r = z._router_obj = Router(z.ctl_out)
    return r


_JHDR = struct.Struct("!cII")


def _arrange_fds(mapping: dict[int, int]) -> None:
    """In a fresh child: make exactly ``mapping`` (target fd -> current fd) open, close everything else."""
    high = {tgt: os.dup(src) for tgt, src in mapping.items()}
    for tgt, src in high.items():
        os.dup2(src, tgt)
    os.closerange(max(mapping) + 1 if mapping else 3, 1 << 16)
    for fd in range(3, max(mapping) + 1 if mapping else 3):
        if fd not in mapping:
            try:
                os.close(fd)
            except OSError:
                pass


def _spawn(z, role: str, fds: dict[int, int], blob: tuple | None, memfd: int, body, plan: dict, n_tests: int) -> int:
    """Fork one sandboxed child.  ``role``: 'judge' | 'candidate' | 'script' | 'inproc' | 'probe'.
    ``blob``: (offset, length) of this child's part of the job in ``memfd``; ``body(data)`` runs after
    isolation.  Never returns in the child."""
    pid = os.fork()
    if pid:
        return pid
    code = 111
    try:
        os.setsid()
        data = os.pread(memfd, blob[1], blob[0]) if blob and memfd >= 0 else b""
        if z.slot:
            z.slot.attach(os.getpid())
        null = os.open("/dev/null", os.O_RDWR)
        fds = {0: null, 1: null, 2: null, **fds}
        _arrange_fds(fds)   # closes the job memfd, the zygote's pipes and every other descriptor
        adj = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        os.write(adj, b"1000")  # the OOM killer takes the biggest sandboxed process, never the zygote
        os.close(adj)
        z.isolate.setup_program(plan, z.limits, n_tests, None, role)
        if role == "probe":
            os.write(3, _JHDR.pack(b"I", 0, 0))
        else:
            body(data)
        code = 0
    except BaseException:  # noqa: BLE001
        try:
            os.write(2, traceback.format_exc()[-2000:].encode())
        except OSError:
            pass
    finally:
        os._exit(code)


def _judge_body(start: int, limits: dict):
    def body(data: bytes):
        from . import judge
        judge.main(data, start, limits)
    return body


MAX_JOB_CPU_S = 3600.0      # a per-job CPU limit above this is ignored (the pool's limit applies)
KEPT_JUDGE_PROGRAMS = 500   # a kept judge is replaced after this many programs (bounds what test code can pile up)
KEPT_JUDGE_TESTS = 4096     # its RLIMIT_CPU budget in tests (a backstop; the zygote meters every test itself)


def _kept_judge_body(limits: dict):
    def body(_data: bytes):
        from . import judge
        judge.serve_kept(limits)
    return body


class _KeptJudge:
    """The worker's judge for function-style tests, kept across programs (see :func:`.judge.serve_kept`).
    Only where the program runs under its own uid: then the zygote can kill everything the program left
    behind by uid (:func:`_kill_candidates`) and spare the judge."""

    def __init__(self, z):
        import socket
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = ours
        self.pid = _spawn(z, "judge-files", {6: theirs.fileno()}, None, -1, _kept_judge_body(z.limits), z.plan,
                          KEPT_JUDGE_TESTS)
        theirs.close()
        self.pidfd = os.pidfd_open(self.pid)
        self.programs = 0

    def send(self, memfd: int, blob: tuple, start: int, chan: list[int]) -> None:
        import socket
        from .judge import JOB_MSG
        socket.send_fds(self.sock, [JOB_MSG.pack(blob[0], blob[1], start)], [memfd, *chan])
        self.programs += 1

    def close(self) -> None:
        self.sock.close()
        os.close(self.pidfd)


def _kept_judge(z):
    """The kept judge, started (or replaced after KEPT_JUDGE_PROGRAMS) when needed; None where not used."""
    if not z.keep_judge:
        return None
    kj = z.kept
    if kj is not None and kj.programs >= KEPT_JUDGE_PROGRAMS:
        _drop_kept_judge(z)
        kj = None
    if kj is None:
        kj = z.kept = _KeptJudge(z)
    return kj


def _drop_kept_judge(z) -> None:
    kj, z.kept = z.kept, None
    if kj is None:
        return
    try:
        os.kill(kj.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(kj.pid, 0)
    except ChildProcessError:
        pass
    kj.close()


def _candidate_body(data: bytes) -> None:
    from . import candidate
    import pickle
    job = pickle.loads(data)
    del data
    candidate.default_signals()
    candidate.serve_program(job["program"])


def _inproc_body(start: int):
    def body(data: bytes):
        from . import candidate
        import pickle
        job = pickle.loads(data)
        del data
        candidate.default_signals()
        candidate.fresh_stdio()
        candidate.run_unittest_in_process(job, start)
    return body


def _script_body(data: bytes) -> None:
    from . import candidate
    import pickle
    job = pickle.loads(data)
    del data
    candidate.default_signals()
    os._exit(candidate.run_script(job["program"]))


def _kill_candidates(z, plan: dict, statuses: dict) -> None:
    """Kill and reap every process running under the program's uid -- whatever it forked, daemonized or
    re-parented -- and nothing else: the kept judge (another uid) survives.  ``kill(-1)`` with the real and
    effective uid switched to the program's reaches exactly the processes of that uid.  Without a kept judge
    this is :func:`_kill_everything`."""
    uid = plan.get("sandbox_uid")
    if z.kept is None or not (plan.get("worker_ns") and uid):
        _kill_everything(z, plan, list(statuses))
    else:
        os.setresuid(uid, uid, 0)
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        finally:
            os.setresuid(0, 0, 0)
    _reap(plan, statuses, z)


def _kill_everything(z, plan: dict, pids) -> None:
    if z.kept is not None:  # kill(-1) below takes the kept judge as well
        kj, z.kept = z.kept, None
        kj.close()
    if plan.get("worker_ns"):
        try:
            os.kill(-1, signal.SIGKILL)  # pid 1 of the namespace: everything but ourselves
        except ProcessLookupError:
            pass
    else:
        for pid in pids:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if z.slot:
            z.slot.kill_all()


def _reap(plan: dict, statuses: dict, z=None) -> None:
    """Reap everything (we are pid 1 / subreaper) but ``z``'s live kept judge; wait statuses of the pids in
    ``statuses`` are kept.  Orphans were re-parented to us: with a kept judge alive, done when ``/proc``
    shows no process but ourselves and the judge."""
    deadline = time.monotonic() + 2.0
    pending = [p for p, st in statuses.items() if st is None]
    for p in pending:
        try:
            _, st = os.waitpid(p, 0)
            statuses[p] = st
        except ChildProcessError:
            pass
    while time.monotonic() < deadline:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        kj = z.kept if z is not None else None
        if pid == 0:
            if not plan.get("worker_ns"):
                break
            if kj is not None and not any(n.isdigit() and int(n) not in (1, kj.pid) for n in os.listdir("/proc")):
                break
            time.sleep(0.0005)
        elif kj is not None and pid == kj.pid:  # the kept judge exited on its own: a fresh one next time
            z.kept = None
            kj.close()
        elif pid in statuses and statuses[pid] is None:
            statuses[pid] = st


class _Meter:
    """CPU (cgroup or /proc), wall time and peak memory of the current test."""

    def __init__(self, z, pids):
        self.z, self.pids = z, pids
        self.reset()

    def cpu_s(self) -> float:
        if self.z.slot:
            return self.z.slot.cpu_ns() / 1e9
        total = 0.0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
        return total

    def peak_kb(self):
        if self.z.slot:
            v = self.z.slot.peak_bytes()
            return None if v is None else v // 1024
        return None

    def reset(self):
        self.t0, self.c0 = time.monotonic(), self.cpu_s()
        self.mark_t, self.mark_cpu = self.t0, 0.0   # when the test's processes last used CPU
        self.oom0 = self.z.slot.oom_kills() if self.z.slot else 0
        if self.z.slot:
            self.z.slot.reset_peak()

    def used(self):
        cpu, now = self.cpu_s() - self.c0, time.monotonic()
        if cpu > self.mark_cpu + IDLE_CPU_S:
            self.mark_t, self.mark_cpu = now, cpu
        return cpu, now - self.t0

    def idle_s(self) -> float:
        """Seconds since the test's processes last made progress (used CPU): a program that blocks, stops
        itself or its judge, or leaves the judge waiting on a half-written frame makes none."""
        return time.monotonic() - self.mark_t

    def oom(self) -> bool:
        return bool(self.z.slot and self.z.slot.oom_kills() > self.oom0)

    def numbers(self) -> dict:
        cpu, wall = self.used()
        return {"cpu_ms": cpu * 1000, "wall_ms": wall * 1000, "peak_kb": self.peak_kb()}


def _budgets(z):
    lim = z.limits
    speed = 1.0 if (z.slot and "cpu" in z.slot.controllers) else float(os.cpu_count() or 1)
    return lim["cpu_s"], max(lim["wall_factor"] * lim["cpu_s"], lim["wall_min_s"]), speed


IDLE_GRACE_S = 1.0    # a test whose processes use no CPU for its CPU budget + this is stalled: a timeout
IDLE_CPU_S = 0.001    # CPU that counts as progress


def _check_limits(meter, st: dict, lim: dict, cpu_budget: float, wall_budget: float, speed: float):
    """(reason, seconds to wait): 'timeout' past the CPU budget, the wall backstop, or when the test made no
    progress (no CPU used) for the CPU budget plus a grace -- so no wait on a program, whatever it writes or
    whatever it stops, outlasts its own budget by more than the grace; 'output' past the cap."""
    used_cpu, used_wall = meter.used()
    idle_left = cpu_budget + IDLE_GRACE_S - meter.idle_s()
    if used_cpu > cpu_budget or used_wall > wall_budget or idle_left <= 0:
        return "timeout", 0.0
    if st["total"] > lim["max_output_bytes"]:
        return "output", 0.0
    return None, max(0.002, min(wall_budget - used_wall, (cpu_budget - used_cpu) / speed, idle_left, 1.0))


def _run_stdio_test(z, idx: int, hdr: dict, memfd: int, pos: int, results: dict) -> int:
    """One stdin/stdout test: a fresh candidate process per test; the zygote itself reads its stdout and exit
    status (nothing in the sandbox reports anything)."""
    t = hdr["tests"][pos]
    i = t["i"]
    off, length = hdr["inputs"][pos]
    stdin = os.memfd_create("stdin")
    if length:
        copied = 0
        while copied < length:  # kernel to kernel: the input never passes through this process's memory
            got = os.copy_file_range(memfd, stdin, length - copied, off + copied)
            if not got:
                raise OSError("short copy of a test input")
            copied += got
        os.lseek(stdin, 0, 0)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    plan = z.plan
    if plan.get("worker_ns"):
        z.isolate.program_scratch(z.limits["tmpfs_mb"], True)
    pid = _spawn(z, "script", {0: stdin, 1: out_w, 2: err_w}, tuple(hdr["cand"]), memfd, _script_body, plan, 1)
    for fd in (stdin, out_w, err_w):
        os.close(fd)
    for fd in (out_r, err_r):
        _set_nonblock(fd)
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        pidfd = None
    router = _router(z)
    lim = z.limits
    st = {"keep": lim["max_output_bytes"], "kept": {}, "total": 0, "limit": lim["max_output_bytes"]}
    meter = _Meter(z, [pid])
    cpu_budget, wall_budget, speed = _budgets(z)
    reason, status, eofs = None, None, set()
    while True:
        reason, wait = _check_limits(meter, st, lim, cpu_budget, wall_budget, speed)
        if reason:
            break
        rd = [fd for fd in (out_r, err_r) if fd not in eofs] + [fd for fd in (pidfd, z.ctl_in) if fd is not None]
        ready, _, _ = select.select(rd, [], [], wait)
        if z.ctl_in in ready:
            reason = "parent"
            break
        for fd, stream in ((out_r, "out"), (err_r, "err")):
            if fd in ready and fd not in eofs and router.pump(fd, idx, i, stream, st):
                eofs.add(fd)
        exited = (pidfd in ready) if pidfd is not None else _exited(pid)
        if exited:
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
                if not got:
                    status = None
            except ChildProcessError:
                status = None
            if status is not None:
                break
    for fd, stream in ((out_r, "out"), (err_r, "err")):
        router.pump(fd, idx, i, stream, st)
    info = meter.numbers()
    oom = meter.oom()
    statuses = {pid: status}
    _kill_candidates(z, plan, statuses)
    for fd in (out_r, err_r, pidfd):
        if fd is not None:
            os.close(fd)
    if plan.get("worker_ns"):
        z.isolate.program_scratch(0, False, reuse=bool(plan.get("sandbox_uid")))
    if reason is None and st["total"] > lim["max_output_bytes"]:
        reason = "output"
    if reason == "parent":
        info.update(outcome="infra", emsg="pool closed")
    elif reason:
        info.update(outcome=reason)
    else:
        info.update(outcome="stdio", status=statuses[pid], oom=oom, out_total=st["total"])
    results[i] = info
    return pos + 1


def _exited(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


class _Run:
    """One judge (+ candidate) pair running tests ``start..`` of a job; a fresh pair continues after a test
    that timed out, crashed or killed the candidate."""

    def __init__(self, z, idx: int, hdr: dict, memfd: int, start: int, plan: dict):
        self.z, self.idx, self.hdr, self.memfd, self.start_pos, self.plan = z, idx, hdr, memfd, start, plan
        self.judge = self.cand = self.kept = None
        self.retire = False

    def start(self) -> None:
        z, hdr, plan = self.z, self.hdr, self.plan
        n_tests = len(hdr["tests"]) - self.start_pos
        self.res_r, res_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.jerr_r, jerr_w = os.pipe()
        if plan.get("worker_ns"):
            z.isolate.program_scratch(z.limits["tmpfs_mb"], True)
        if hdr["mode"] == "unittest":  # judged in-process: one process, program and tests together
            self.judge = _spawn(z, "inproc", {1: out_w, 2: err_w, 3: res_w}, tuple(hdr["judge"]), self.memfd,
                                _inproc_body(self.start_pos), plan, n_tests)
            opened = [res_w, out_w, err_w, jerr_w]
        else:
            req_r, req_w = os.pipe()
            rep_r, rep_w = os.pipe()
            kj = _kept_judge(z) if hdr["mode"] == "func" else None
            self.cand = _spawn(z, "candidate", {1: out_w, 2: err_w, 3: req_r, 4: rep_w}, tuple(hdr["cand"]),
                               self.memfd, _candidate_body, plan, n_tests)
            chan = [jerr_w, res_w, req_w, rep_r]
            if kj is not None:
                try:
                    kj.send(self.memfd, tuple(hdr["judge"]), self.start_pos, chan)
                except OSError:  # it went away between programs: a fresh one
                    _drop_kept_judge(z)
                    kj = _kept_judge(z)
                    kj.send(self.memfd, tuple(hdr["judge"]), self.start_pos, chan)
                self.kept, self.judge = kj, kj.pid
            else:
                self.judge = _spawn(z, "judge-files" if hdr["mode"] == "pytest" else "judge",
                                    dict(zip((2, 3, 4, 5), chan)), tuple(hdr["judge"]), self.memfd,
                                    _judge_body(self.start_pos, z.limits), plan, n_tests)
            opened = [res_w, out_w, err_w, jerr_w, req_r, req_w, rep_r, rep_w]
        for fd in opened:
            os.close(fd)
        for fd in (self.res_r, self.out_r, self.err_r, self.jerr_r):
            _set_nonblock(fd)
        if self.kept is not None:
            self.pidfd = self.kept.pidfd
            return
        try:
            self.pidfd = os.pidfd_open(self.judge)
        except OSError:
            self.pidfd = None

    def close(self) -> None:
        if self.kept is not None:
            self.pidfd = None  # the kept judge's own
        for name in ("res_r", "out_r", "err_r", "jerr_r", "pidfd"):
            fd = getattr(self, name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, None)

    def supervise(self, results: dict) -> int:
        z, hdr, lim = self.z, self.hdr, self.z.limits
        tests = hdr["tests"]
        idx_of = {t["i"]: k for k, t in enumerate(tests)}
        remaining = [t["i"] for t in tests[self.start_pos:]]
        self.start()
        router = _router(z)
        keep = lim["capture_bytes"]
        st = {"keep": keep, "kept": {}, "total": 0, "limit": lim["max_output_bytes"]}
        jst = {"keep": 8192, "kept": {}, "total": 0, "limit": 1 << 62}
        meter = _Meter(z, [p for p in (self.judge, self.cand) if p])
        cpu_budget, wall_budget, speed = _budgets(z)
        phase, cur = "init", None
        hbuf = bytearray()
        reason, died_in = None, None
        done = False

        def tag():  # output outside a test belongs to the next one
            return cur if cur is not None else (remaining[0] if remaining else -1)

        def record(i, **kw):
            kw.update({k: v for k, v in meter.numbers().items() if k not in kw})
            results[i] = kw

        def on_frame(kind: bytes, i: int, n: int) -> None:
            nonlocal phase, cur, reason, died_in, done
            if kind == b"I" and phase == "init":
                phase = "load"
                meter.reset()
            elif kind == b"L" and phase == "load":
                phase = "gap"
                meter.reset()
            elif kind == b"X" and phase == "load":
                self.retire = i == 1
                router.frame(self.idx, -1, "load", self.res_r, n)
                n = 0
                oom = meter.oom()   # a program killed by the OOM killer while loading: memory_limit
                for k in list(remaining):
                    record(k, outcome="memory" if oom else "load_error", load_phase=True)
                remaining.clear()
                done = True
            elif kind == b"S" and phase == "gap" and i in remaining:
                phase, cur = "test", i
                meter.reset()
            elif kind == b"R" and phase == "test" and i == cur:
                router.pump(self.out_r, self.idx, cur, "out", st)
                router.pump(self.err_r, self.idx, cur, "err", st)
                router.frame(self.idx, cur, "res", self.res_r, n)
                n = 0
                record(cur, outcome="msg", oom=meter.oom(), out_total=st["total"])
                remaining.remove(cur)
                phase, cur = "gap", None
                st["kept"], st["total"] = {}, 0
                meter.reset()
            elif kind == b"D" and phase == "test" and i == cur:
                reason, died_in = "candidate", cur
            elif kind == b"E" and not remaining:
                done = True
                self.retire = i == 1
            else:
                reason = "protocol"
            if n:  # a payload nobody expected: protocol error
                reason = "protocol"

        eof = False
        while not done and not reason:
            reason, wait = _check_limits(meter, st, lim, cpu_budget, wall_budget, speed)
            if reason:
                break
            rd = [fd for fd in (self.out_r, self.err_r, self.jerr_r, self.pidfd, z.ctl_in) if fd is not None]
            if not eof:
                rd.append(self.res_r)
            ready, _, _ = select.select(rd, [], [], wait)
            if z.ctl_in in ready:
                reason = "parent"
                break
            if self.out_r in ready:
                router.pump(self.out_r, self.idx, tag(), "out", st)
            if self.err_r in ready:
                router.pump(self.err_r, self.idx, tag(), "err", st)
            if self.jerr_r in ready:
                router.pump(self.jerr_r, self.idx, -1, "jerr", jst)
            if self.res_r in ready and not eof:
                while not done and not reason:
                    try:
                        chunk = os.read(self.res_r, _JHDR.size - len(hbuf))
                    except BlockingIOError:
                        break
                    if not chunk:
                        eof = True
                        break
                    hbuf += chunk
                    if len(hbuf) == _JHDR.size:
                        kind, i, n = _JHDR.unpack(bytes(hbuf))
                        hbuf.clear()
                        on_frame(kind, i, n)
            if done or reason:
                break
            if eof or (self.pidfd is not None and self.pidfd in ready) or (self.pidfd is None and _exited(self.judge)):
                reason = "died"
        # ---- wind down
        router.pump(self.out_r, self.idx, tag(), "out", st)
        router.pump(self.err_r, self.idx, tag(), "err", st)
        router.pump(self.jerr_r, self.idx, -1, "jerr", jst)
        oom = meter.oom()
        numbers = meter.numbers()
        statuses = {p: None for p in (self.judge, self.cand) if p}
        if reason == "candidate":  # give the candidate a moment to finish dying (its status tells why)
            deadline = time.monotonic() + 0.2
            while time.monotonic() < deadline:
                try:
                    got, stt = os.waitpid(self.cand, os.WNOHANG)
                except ChildProcessError:
                    break
                if got:
                    statuses[self.cand] = stt
                    break
                time.sleep(0.002)
        if hdr["mode"] == "unittest" or (self.kept is not None and self.kept is z.kept and done and not reason):
            if self.kept is not None:
                del statuses[self.judge]
            _kill_candidates(z, self.plan, statuses)   # a kept judge that finished cleanly serves the next program
            if self.retire and self.kept is z.kept:
                _drop_kept_judge(z)
        else:
            _kill_everything(z, self.plan, list(statuses))
            _reap(self.plan, statuses)
        self.close()
        if self.plan.get("worker_ns"):
            z.isolate.program_scratch(0, False, reuse=bool(self.plan.get("sandbox_uid")))
        if done or not remaining:
            return len(tests)
        who = self.cand if reason == "candidate" else self.judge
        status = statuses.get(who)
        sig = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None
        if reason in ("died", "candidate") and oom and sig == signal.SIGKILL:
            reason = "memory"
        if reason in ("died", "candidate") and sig == signal.SIGXCPU:
            reason = "timeout"
        info = {"outcome": reason if reason in ("timeout", "output", "memory", "protocol") else "crash",
                "exit_status": status, "signal": sig, **numbers}
        if reason == "candidate" and status is None:
            info["emsg"] = "the program stopped answering (closed its end of the call channel)"
        elif info["outcome"] == "crash":
            code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
            info["emsg"] = (f"process exited with code {code} before the test finished" if code is not None
                            else f"process killed by signal {sig}")
        if reason == "parent":
            info = {"outcome": "infra", "emsg": "pool closed", **numbers}
        if phase == "init":
            info = {"outcome": "infra", "emsg": "sandbox init failed (judge did not start)", **numbers}
        if phase in ("init", "load") or reason == "parent":
            for k in remaining:
                results[k] = dict(info, load_phase=True)
            return len(tests)
        target = died_in if died_in is not None else (cur if cur is not None else remaining[0])
        results[target] = info
        return idx_of[target] + 1


def main() -> None:
    ctl_in, ctl_out = int(sys.argv[1]), int(sys.argv[2])
    for name in WARM_MODULES:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001
            pass
    from . import candidate, judge, rpc, seccomp, serialize  # noqa: F401  (warm; transform runs in the parent)
    seccomp.prepare()
    init = recv(ctl_in)
    if init is None:
        return
    _, limits, slot_name, preload, cpu = init
    for name in preload:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001
            pass
    if cpu is not None:  # the worker (zygote, judge, program) on one core: judge <-> program calls stay on it
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            cpu = None
    z = Zygote(ctl_in, ctl_out, limits, slot_name)
    z.meta["cpu"] = cpu
    gc.collect()
    gc.freeze()  # warm objects move to the permanent generation: a child's GC never touches (copies) them
    z.serve()
