"""The zygote: a long-lived, warm worker process (one per pool slot).

Started as ``python -s`` by the pool (pinned to one core when the pool pins); imports common modules once, enters its
own namespaces (:func:`.isolate.setup_worker_mounts`; it becomes pid 1 there, the original process waits outside), joins
its cgroup slot, probes that a sandboxed child can start, and records what is active or degraded.  Per program it mounts
a fresh ``/tmp``/``/dev/shm`` and forks the *candidate* (the program, alone); function-style tests are judged by a
*judge* process -- with root, one kept across programs (:class:`.spawn.KeptJudge`), otherwise one forked per program.
The zygote never holds a job's bytes (the batch lies in a memfd the children read their part of), supervises per-test
CPU (cgroup ``cpuacct``) with a wall-clock backstop, forwards output and judge reports with ``splice``
(:mod:`.zygote_io`: also the framing to the pool), and on timeout/crash kills everything (``kill(-1)`` as pid 1); a
fresh pair continues with the next test.
"""
from __future__ import annotations

import contextlib
import gc
import os
import select
import traceback

from . import compiled, languages
from .spawn import kill_everything, reap, spawn
from .supervise import Run, run_stdio_test
from .zygote_io import JHDR, recv, send, splice_exactly

# What HumanEval/MBPP/LeetCode programs and their preambles import.  Every module held here is page-table work on
# each fork and exit, so heavier, rarer ones (unittest, decimal, statistics, hashlib, numpy) are imported by the
# programs that use them, or opted in with SandboxPool(preload=...).
WARM_MODULES = ("array bisect collections copy datetime enum functools heapq io itertools json math operator random "
                "re string typing").split()


class Zygote:
    def __init__(self, ctl_in: int, ctl_out: int, limits: dict, slot_name: str):
        from . import cgroup, isolate
        self.isolate = isolate
        self.ctl_in, self.ctl_out, self.limits = ctl_in, ctl_out, limits
        self.kept = None   # the kept judge (KeptJudge), when one is running
        self.pytest_warm = False   # pytest imported here once, on the first pytest job
        self.root = os.geteuid() == 0
        isolate.prctl(isolate.PR_SET_CHILD_SUBREAPER, 1)
        self.slot, cg_notes = cgroup.make_slot(slot_name, limits) if self.root else (None, ["not root"])
        self.outer_euid, self.outer_pid = os.geteuid(), os.getpid()
        # into its own namespaces as pid 1 (kill(-1) removes whatever a program left behind); degrades on failure
        needed = isolate.interpreter_paths() + languages.toolchain_paths()
        self.ns_error = isolate.enter_worker_sandbox(self.root, self.slot, (ctl_in, ctl_out), needed)
        self.worker_ns = self.ns_error is None
        if self.slot and not self.slot.self_inside:
            self.slot.adopt_self()
            self.slot.prepare()
        self.plan, self.meta = self._probe(cg_notes)
        self.keep_judge = bool(self.plan.get("worker_ns") and self.plan.get("sandbox_uid")
                               and self.plan.get("judge_uid"))
        self.meta["judge_kept"] = self.keep_judge

    # ------------------------------------------------------------------ isolation probe
    def _full_plan(self) -> dict:
        plan = dict(worker_ns=self.worker_ns, drop_caps=not self.root, nproc_rlimit=True,
                    as_rlimit=self.slot is None, env_is_safe=dict(os.environ) == self.isolate.SAFE_ENV,
                    seccomp=True)
        if self.root:
            plan["sandbox_uid"] = 100000 + self.outer_pid
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
        return plan, {
            "sandbox_version": None, "euid": self.outer_euid,
            "userns": ns and not self.root, "pidns": ns, "netns": ns, "mntns": ns, "utsns": ns,
            "ipcns": ns, "ns_scope": ("pid/net/mnt/uts per worker (no process survives a program); ipc ns per "
                                      "program; /tmp,/dev/shm tmpfs per program (kept only while no program "
                                      "leaves an inode, block or mode change in them)") if ns else None,
            "fs": ("minimal read-only root (system dirs, interpreter, packages) + private tmpfs /tmp,/dev/shm" if ns
                   else "private-workdir-only"),
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

    def _probe_one(self, plan: dict):
        """Start one sandboxed child with the full plan; it must report ``I`` on fd 3."""
        (r, w), (er, ew) = os.pipe(), os.pipe()
        try:
            pid = spawn(self, "probe", {2: ew, 3: w}, None, -1, None, plan, 1)
        except OSError as exc:
            return False, str(exc)
        os.close(w)
        os.close(ew)
        ready = select.select([r], [], [], 10)[0]   # the report (or EOF when the child failed); one atomic write
        got = os.read(r, JHDR.size) if ready else b""
        os.set_blocking(er, False)
        try:
            err = os.read(er, 4096).decode("utf-8", "replace")
        except BlockingIOError:
            err = ""
        kill_everything(self, plan, [pid])
        reap(plan, {pid: None})
        os.close(r)
        os.close(er)
        return got[:1] == b"I", err[-300:]

    # ------------------------------------------------------------------ jobs
    def run_job(self, idx: int, hdr: dict, memfd: int) -> list[dict]:
        results: dict[int, dict] = {}
        pos, n = 0, len(hdr["tests"])
        base = self.limits
        cpu_s, wall_s = (_seconds(hdr.get(k)) for k in ("cpu_s", "wall_s"))
        if cpu_s:
            self.limits = dict(base, cpu_s=cpu_s)   # this job's calibrated time limit
        if wall_s:   # a wall-clock limit of its own (SandboxFusion's run_timeout): the wall budget is exactly it
            self.limits = dict(self.limits, wall_factor=0.0, wall_min_s=wall_s)
        plan = self.plan
        if hdr.get("own_net"):   # this job's program processes get a network namespace of their own (loopback)
            self.plan = dict(plan, own_net=True)
        prog = extra = None
        if hdr["mode"] == "pytest" and not self.pytest_warm:   # before any test's meter starts
            from .judge import warm_pytest
            self.pytest_warm = warm_pytest()
        try:
            if hdr.get("lang"):   # another language: compiled once (in the sandbox), run per test
                prog, extra = compiled.build(self, idx, hdr, memfd)
                if prog is None:
                    return [dict(extra) for _ in hdr["tests"]]
            while pos < n:
                if hdr["mode"] == "stdio":
                    pos = run_stdio_test(self, idx, hdr, memfd, pos, results, prog)
                else:
                    pos = Run(self, idx, hdr, memfd, pos, self.plan).supervise(results)
                if pos < n and not hdr.get("run_all") and any(r.get("outcome") == "timeout" for r in results.values()):
                    for t in hdr["tests"]:   # one CPU budget per looping program, not one per test
                        results.setdefault(t["i"], {"outcome": "not_run", "cpu_ms": 0.0, "wall_ms": 0.0,
                                                    "peak_kb": None})
                    break
        finally:
            self.limits = base
            self.plan = plan
            if prog is not None:
                prog.close()
        return [{**results[t["i"]], **(extra or {})} for t in hdr["tests"]]

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
                    splice_exactly(self.ctl_in, memfd, body_len, "pool closed mid-job")
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
                with contextlib.suppress(OSError):
                    self.slot.kill_all()
                    self.slot.remove()


MAX_JOB_CPU_S = 3600.0      # a per-job CPU limit above this is ignored (the pool's limit applies)


def _seconds(x) -> float | None:
    """A job's own time limit when it is a number of seconds in (0, MAX_JOB_CPU_S], else None."""
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= MAX_JOB_CPU_S
    return float(x) if ok else None


def main(ctl_in: int, ctl_out: int) -> None:
    for name in WARM_MODULES:
        with contextlib.suppress(Exception):
            __import__(name)
    from . import candidate, judge, rpc, seccomp, serialize  # noqa: F401  (warm; transform runs in the parent)
    seccomp.prepare()
    init = recv(ctl_in)
    if init is None:
        return
    _, limits, slot_name, preload, cpu = init
    for name in preload:
        with contextlib.suppress(Exception):
            __import__(name)
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
