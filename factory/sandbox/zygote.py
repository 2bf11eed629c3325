"""The zygote: a long-lived, warm worker process (one per pool slot).

Started as ``python -I`` by the pool; imports common modules once, enters its own namespaces
(:func:`.isolate.setup_worker_mounts`; it becomes pid 1 there, the original process waits
outside), joins its cgroup slot, probes that a sandboxed child can start, and records what is
active or degraded.  Per program it mounts a fresh ``/tmp``/``/dev/shm`` and forks ``G``, which
finishes isolation (:func:`.isolate.setup_program`) and runs :mod:`.child`.  The zygote supervises
``G`` with a per-test CPU budget (cgroup ``cpuacct``) and a wall-clock backstop, drains stdout and
stderr concurrently with a cap, and on timeout/crash kills everything (``kill(-1)`` as pid 1, plus
the cgroup); a fresh ``G`` continues with the next test.  Messages to and from the pool are
length-prefixed pickles on two private pipes (trusted side only).
"""
from __future__ import annotations

import errno
import gc
import json
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
        self.root = os.geteuid() == 0
        isolate.prctl(isolate.PR_SET_CHILD_SUBREAPER, 1)
        self.slot, cg_notes = cgroup.make_slot(slot_name, limits) if self.root else (None, ["not root"])
        self.outer_euid, self.outer_pid = os.geteuid(), os.getpid()
        self.worker_ns = self._enter_worker_ns()
        if self.slot:
            self.slot.adopt_self()
        self.plan, self.meta = self._probe(cg_notes)

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
            os._exit(os.waitstatus_to_exitcode(st) & 0x7F)
        iso.prctl(iso.PR_SET_PDEATHSIG, signal.SIGKILL)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_IGN)
        try:
            __import__("socket").sethostname("sandbox")
            iso.setup_worker_mounts(self._blocked_plan())
        except OSError as exc:
            self.ns_error = f"worker mounts: {exc}"
            return False
        iso.prctl(iso.PR_SET_DUMPABLE, 0)
        return True

    def _blocked_plan(self) -> dict:
        keep = {"tmp_keep": self.isolate.tmp_keep_paths(self._needed_paths())}
        if not self.root:
            return keep
        if self.slot:
            return {"blocked": self._blocked(), "cgroup_rw": True, **keep}
        return {"blocked": self._blocked(), **keep}

    @staticmethod
    def _needed_paths() -> list[str]:
        need = [sys.prefix, sys.base_prefix, sys.exec_prefix] + [p for p in sys.path if p]
        need.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        return need

    def _blocked(self) -> dict:
        return self.isolate.blocked_roots(self._needed_paths(), self._uid())

    def _uid(self):
        return 100000 + self.outer_pid if self.root else None

    # ------------------------------------------------------------------ isolation probe
    def _full_plan(self) -> dict:
        plan = dict(worker_ns=self.worker_ns, drop_caps=not self.root, nproc_rlimit=True,
                    as_rlimit=self.slot is None, env_is_safe=dict(os.environ) == self.isolate.SAFE_ENV)
        if self.root:
            plan["sandbox_uid"] = self._uid()
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
        ns = bool(plan.get("worker_ns"))
        meta = {
            "sandbox_version": None, "euid": self.outer_euid,
            "userns": ns and not self.root, "pidns": ns, "netns": ns, "mntns": ns, "utsns": ns,
            "ipcns": ns, "ns_scope": ("pid/net/mnt/uts per worker (no process survives a program); ipc ns per "
                                      "program; /tmp,/dev/shm tmpfs per program (kept only while no program "
                                      "leaves an inode, block or mode change in them)") if ns else None,
            "fs": "read-only tree + private tmpfs /tmp,/dev/shm" if ns else "private-workdir-only",
            "uid_drop": bool(plan.get("sandbox_uid")),
            "caps_dropped": bool(plan.get("drop_caps") or plan.get("sandbox_uid")),
            "no_new_privs": bool(plan.get("worker_ns") or plan.get("sandbox_uid")), "seccomp": False,
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
        job = {"mode": "probe", "program": "", "tests": [], "limits": self.limits}
        try:
            run = _Run(self, job, 0, plan)
            ok = run.start() and run.wait_ready()
            err = run.err_text()
            run.finish_kill()
            return ok, err[-300:]
        except OSError as exc:
            return False, str(exc)

    # ------------------------------------------------------------------ jobs
    def run_job(self, job: dict) -> list[dict]:
        job["limits"] = self.limits
        results: dict[int, dict] = {}
        pos, n = 0, len(job["tests"])
        while pos < n:
            pos = _Run(self, job, pos, self.plan).supervise(results)
        return [results[t["i"]] for t in job["tests"]]

    def _run_one(self, job: dict) -> tuple:
        try:
            return ("done", self.run_job(job))
        except Exception:  # noqa: BLE001
            return ("error", traceback.format_exc()[-3000:])

    def serve(self) -> None:
        try:
            send(self.ctl_out, ("ready", self.meta))
            while True:
                msg = recv(self.ctl_in)
                if msg is None or msg[0] == "quit":
                    break
                if msg[0] == "jobs":  # a batch: one round trip for several programs
                    send(self.ctl_out, ("done_many", [self._run_one(p) for p in msg[1]]))
                else:
                    send(self.ctl_out, self._run_one(msg[1]))
        except OSError:
            pass  # pool went away
        finally:
            if self.slot:
                self.slot.kill_all()
                self.slot.remove()


def _set_nonblock(fd: int) -> None:
    os.set_blocking(fd, False)


class _Run:
    """One sandboxed child G running tests ``start..`` of a job."""

    def __init__(self, z: Zygote, job: dict, start: int, plan: dict):
        self.z, self.job, self.start_pos, self.plan = z, job, start, plan
        self.lim = z.limits
        self.g = None
        self.workdir = None
        self.err_buf = bytearray()

    # -- process creation ---------------------------------------------------------------
    def start(self) -> bool:
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.res_r, res_w = os.pipe()
        self.ack_r, self.ack_w = os.pipe()
        ns = bool(self.plan.get("worker_ns"))
        if ns:
            self.z.isolate.program_scratch(self.lim["tmpfs_mb"], True)
        else:
            import tempfile  # only without namespaces (kept out of the zygote otherwise)
            self.workdir = tempfile.mkdtemp(prefix="sbx-")
            if self.plan.get("sandbox_uid"):
                os.chown(self.workdir, self.plan["sandbox_uid"], self.plan["sandbox_uid"])
        n_tests = len(self.job["tests"]) - self.start_pos
        g = os.fork()
        if g == 0:  # ---- G: the sandboxed runner
            code = 111
            try:
                os.setsid()
                hi = [os.dup(fd) for fd in (out_w, err_w, res_w, self.ack_r)]
                null = os.open("/dev/null", os.O_RDWR)
                os.dup2(null, 0)
                for tgt, src in zip((1, 2, 3, 5), hi):
                    os.dup2(src, tgt)
                os.closerange(6, 1 << 16)
                try:
                    os.close(4)
                except OSError:
                    pass
                if self.z.slot:
                    self.z.slot.attach(os.getpid())
                adj = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
                os.write(adj, b"1000")  # first choice of the OOM killer, never the zygote
                os.close(adj)
                self.z.isolate.setup_program(self.plan, self.lim, n_tests, self.workdir)
                os.write(3, b'{"t": "I"}\n')
                from . import child
                if self.job["mode"] != "probe":
                    child.main(self.job, self.start_pos, self.plan)
                code = 0
            except BaseException:  # noqa: BLE001
                try:
                    os.write(2, traceback.format_exc()[-2000:].encode())
                except OSError:
                    pass
            finally:
                os._exit(code)
        for fd in (out_w, err_w, res_w, self.ack_r):
            os.close(fd)
        self.ack_r = None
        for fd in (self.out_r, self.err_r, self.res_r):
            _set_nonblock(fd)
        self.g = g
        try:
            self.pidfd = os.pidfd_open(self.g)
        except OSError:
            self.pidfd = None
        return True

    def err_text(self) -> str:
        return self.err_buf.decode("utf-8", "replace")

    def wait_ready(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        buf = bytearray()
        while time.monotonic() < deadline:
            select.select([self.res_r, self.err_r], [], [], 0.05)
            self._drain(self.err_r, self.err_buf, 1 << 16)
            if self._drain(self.res_r, buf, 1 << 20) and not buf:
                return False
            if b'{"t": "I"}' in buf:
                return True
            if self._exited():
                self._drain(self.res_r, buf, 1 << 20)
                return b'{"t": "I"}' in buf
        return False

    def _exited(self) -> bool:
        try:
            pid, _ = os.waitpid(self.g, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid:
            self.g_status = _
            self.g_reaped = True
        return bool(pid)

    @staticmethod
    def _drain(fd: int, buf: bytearray, cap: int, counter: list | None = None) -> bool:
        """Read everything available; keep up to ``cap`` bytes.  Returns True on EOF."""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return False
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                return True
            if not chunk:
                return True
            if counter is not None:
                counter[0] += len(chunk)
            room = cap - len(buf)
            if room > 0:
                buf += chunk[:room]

    def _kill_all(self) -> None:
        if self.plan.get("worker_ns"):
            try:
                os.kill(-1, signal.SIGKILL)  # pid 1 of the namespace: everything but ourselves
            except ProcessLookupError:
                pass
        elif self.g is not None:
            for target in (-self.g, self.g):
                try:
                    os.kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if self.z.slot and not self.plan.get("worker_ns"):  # in a pid ns kill(-1) + reaping is complete
            self.z.slot.kill_all()

    def kill(self) -> None:
        self._kill_all()

    def finish_kill(self) -> int | None:
        """Kill everything left, reap G (and orphans), release fds; returns G's wait status."""
        self._kill_all()
        status = getattr(self, "g_status", None)
        if self.g is not None and not getattr(self, "g_reaped", False):
            try:
                _, status = os.waitpid(self.g, 0)
            except ChildProcessError:
                pass
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # reap reparented orphans (we are pid 1 / subreaper)
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    if not self.plan.get("worker_ns"):
                        break
                    time.sleep(0.0005)
            except ChildProcessError:
                break
        self.close()
        if self.plan.get("worker_ns"):  # root: the sandbox uid owns nothing on /tmp, so untouched = clean
            self.z.isolate.program_scratch(0, False, reuse=bool(self.plan.get("sandbox_uid")))
        return status

    def close(self) -> None:
        for name in ("out_r", "err_r", "res_r", "pidfd", "ack_w"):
            fd = getattr(self, name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, None)
        if self.workdir:
            import shutil
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    # -- accounting ---------------------------------------------------------------------
    def cpu_s(self) -> float:
        if self.z.slot:
            return self.z.slot.cpu_ns() / 1e9
        try:
            with open(f"/proc/{self.g}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def peak_kb(self) -> int | None:
        if self.z.slot:
            v = self.z.slot.peak_bytes()
            return None if v is None else v // 1024
        try:
            with open(f"/proc/{self.g}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    # -- supervision --------------------------------------------------------------------
    def supervise(self, results: dict) -> int:
        tests = self.job["tests"]
        idx_of = {t["i"]: k for k, t in enumerate(tests)}
        remaining = [t["i"] for t in tests[self.start_pos:]]
        if not self.start():
            for i in remaining:
                results[i] = {"outcome": "infra", "emsg": "sandbox setup failed: " + self.err_text()[-1500:]}
            return len(tests)
        lim = self.lim
        stdio = self.job["mode"] == "stdio"
        keep = lim["max_output_bytes"] if stdio else lim["capture_bytes"]
        cpu_budget, wall_budget = lim["cpu_s"], max(lim["wall_factor"] * lim["cpu_s"], lim["wall_min_s"])
        speed = 1.0 if (self.z.slot and "cpu" in self.z.slot.controllers) else float(os.cpu_count() or 1)
        phase, cur = "init", None
        out, err, totals = bytearray(), bytearray(), [0]
        linebuf = bytearray()
        t0, c0 = time.monotonic(), self.cpu_s()
        oom0 = self.z.slot.oom_kills() if self.z.slot else 0
        reason = None

        def reset(clear_output: bool = True):
            nonlocal t0, c0, out, err
            t0, c0 = time.monotonic(), self.cpu_s()
            if clear_output:  # not on S: bytes read in the same batch already belong to the test
                out, err = bytearray(), bytearray()
                totals[0] = 0
            if self.z.slot:
                self.z.slot.reset_peak()

        def record(i, **kw):
            kw.setdefault("cpu_ms", (self.cpu_s() - c0) * 1000)
            kw.setdefault("wall_ms", (time.monotonic() - t0) * 1000)
            kw.setdefault("peak_kb", self.peak_kb())
            kw["stdout"], kw["stderr"], kw["out_total"] = bytes(out), bytes(err), totals[0]
            results[i] = kw

        state = {"done": False, "reason": None}

        def process() -> None:
            nonlocal phase, cur, linebuf, oom0
            while b"\n" in linebuf and not state["done"] and not state["reason"]:
                line, _, rest = bytes(linebuf).partition(b"\n")
                linebuf = bytearray(rest)
                try:
                    msg = json.loads(line)
                    kind = msg["t"]
                except (ValueError, KeyError, TypeError):
                    state["reason"] = "protocol"
                    return
                if kind == "I" and phase == "init":
                    phase = "load"
                    reset(clear_output=False)
                elif kind == "L" and phase == "load":
                    phase = "gap"
                    reset(clear_output=False)
                elif kind == "X" and phase == "load":
                    for i in list(remaining):
                        record(i, outcome="load_error", etype=msg.get("etype"), emsg=msg.get("emsg"),
                               where=msg.get("where"), mem=bool(msg.get("mem")))
                    remaining.clear()
                    state["done"] = True
                elif kind == "S" and phase == "gap" and msg.get("i") in remaining:
                    phase, cur = "test", msg["i"]
                    reset(clear_output=False)
                    oom0 = self.z.slot.oom_kills() if self.z.slot else 0
                elif kind == "R" and phase == "test" and msg.get("i") == cur:
                    self._drain(self.out_r, out, keep, totals)
                    self._drain(self.err_r, err, keep, totals)
                    msg["oom"] = bool(self.z.slot and self.z.slot.oom_kills() > oom0)
                    cpu_ms, wall_ms = (self.cpu_s() - c0) * 1000, (time.monotonic() - t0) * 1000
                    try:
                        cpu_ms = max(cpu_ms, float(msg.get("cpu") or 0) * 1000)
                        wall_ms = max(wall_ms, float(msg.get("wall") or 0) * 1000)
                    except (TypeError, ValueError):
                        pass
                    record(cur, outcome="msg", msg=msg, cpu_ms=cpu_ms, wall_ms=wall_ms)
                    remaining.remove(cur)
                    if stdio:  # G waits for this before the next test: exact stdout attribution
                        try:
                            os.write(self.ack_w, b"k")
                        except OSError:
                            pass
                    phase, cur = "gap", None
                    reset()
                elif kind == "E" and not remaining:
                    state["done"] = True
                else:
                    state["reason"] = "protocol"

        eof = False
        while not state["done"] and not state["reason"]:
            used_cpu, used_wall = self.cpu_s() - c0, time.monotonic() - t0
            if used_cpu > cpu_budget or used_wall > wall_budget:
                state["reason"] = "timeout"
                break
            if totals[0] > lim["max_output_bytes"]:
                state["reason"] = "output"
                break
            wait = max(0.002, min(wall_budget - used_wall, (cpu_budget - used_cpu) / speed, 1.0))
            rd = [fd for fd in (self.out_r, self.err_r, self.pidfd, self.z.ctl_in) if fd is not None]
            if not eof:
                rd.append(self.res_r)
            ready, _, _ = select.select(rd, [], [], wait)
            if self.z.ctl_in in ready:  # pool went away
                state["reason"] = "parent"
                break
            if self.out_r in ready:
                self._drain(self.out_r, out, keep, totals)
            if self.err_r in ready:
                self._drain(self.err_r, err, keep, totals)
            if self.res_r in ready and not eof:
                eof = self._drain(self.res_r, linebuf, 1 << 62)
                process()
            if state["done"] or state["reason"]:
                break
            if eof or (self.pidfd is not None and self.pidfd in ready) or (self.pidfd is None and self._exited()):
                if not eof:
                    self._drain(self.res_r, linebuf, 1 << 62)
                    process()
                if not state["done"] and not state["reason"]:
                    state["reason"] = "died"
        done, reason = state["done"], state["reason"]
        # ---- wind down
        self._drain(self.out_r, out, keep, totals)
        self._drain(self.err_r, err, keep, totals)
        status = self.finish_kill()
        if done or not remaining:
            return len(tests)
        oom = bool(self.z.slot and self.z.slot.oom_kills() > oom0)
        sig = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None
        if reason == "died" and (oom and sig == signal.SIGKILL):
            reason = "memory"
        if reason == "died" and sig in (signal.SIGXCPU,):
            reason = "timeout"
        info = {"outcome": reason if reason in ("timeout", "output", "memory", "protocol") else "crash",
                "exit_status": status, "signal": sig}
        if reason == "parent":
            info = {"outcome": "infra", "emsg": "pool closed"}
        if info["outcome"] == "crash":
            code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
            info["emsg"] = (f"process exited with code {code} before the test finished" if code is not None
                            else f"process killed by signal {sig}")
        if phase == "init":
            info = {"outcome": "infra", "emsg": "sandbox init failed: " + bytes(err).decode("utf-8", "replace")[-1500:]}
        if phase in ("init", "load") or reason == "parent":
            for i in remaining:
                record(i, load_phase=True, **info)
            return len(tests)
        target = cur if cur is not None else remaining[0]
        record(target, **info)
        return idx_of[target] + 1


def main() -> None:
    ctl_in, ctl_out = int(sys.argv[1]), int(sys.argv[2])
    for name in WARM_MODULES:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001
            pass
    from . import child, serialize  # noqa: F401  (warm; transform runs in the trusted parent only)
    init = recv(ctl_in)
    if init is None:
        return
    _, limits, slot_name, preload = init
    for name in preload:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001
            pass
    z = Zygote(ctl_in, ctl_out, limits, slot_name)
    gc.collect()
    gc.freeze()  # warm objects move to the permanent generation: a child's GC never touches (copies) them
    z.serve()
