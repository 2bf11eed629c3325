"""Running a job's tests in the zygote: :func:`run_stdio_test` (stdin/stdout tests) and :class:`Run` (a judge +
candidate pair for function-style, pytest and unittest tests, supervised frame by frame)."""
from __future__ import annotations

import contextlib
import os
import select
import signal
import time

from .compiled import _copy, copy_to_new
from .fetch import read_back
from .meter import Meter, watch
from .spawn import (candidate_body, drop_kept_judge, exit_status, has_exited, inproc_body, judge_body, kept_judge,
                    kill_candidates, kill_everything, open_pidfd, reap, script_body, spawn)
from .zygote_io import JHDR, router_of, set_nonblock

def run_stdio_test(z, idx: int, hdr: dict, memfd: int, pos: int, results: dict, prog=None) -> int:
    """One stdin/stdout test: a fresh candidate process per test; the zygote itself reads its stdout and exit
    status (nothing in the sandbox reports anything).  ``prog``: a built program of another language
    (:class:`.compiled.Program`), placed into the test's fresh /tmp and exec'd, instead of a Python script."""
    i, plan = hdr["tests"][pos]["i"], z.plan
    if hdr.get("files") and not plan.get("worker_ns"):
        results[i] = {"outcome": "infra", "emsg": "files need the sandbox's namespaces (a /tmp of the program's "
                                                  "own), which are not available here (degraded sandbox)",
                      "cpu_ms": 0.0, "wall_ms": 0.0, "peak_kb": None}
        return pos + 1
    off, length = hdr["inputs"][pos]
    stdin = os.memfd_create("stdin")
    _copy(memfd, stdin, length, off, "short copy of a test input")   # the input never enters this process
    os.lseek(stdin, 0, 0)
    (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
    if plan.get("worker_ns"):
        z.isolate.program_scratch(z.limits["tmpfs_mb"], True, mnt=bool(plan.get("own_net")))
    if prog is not None:
        prog.place()
    if hdr.get("files"):
        try:
            place_files(hdr["files"], memfd, plan.get("sandbox_uid"))
        except OSError as exc:   # nothing ran: the scratch is discarded, the test is the service's failure
            for fd in (stdin, out_r, out_w, err_r, err_w):
                os.close(fd)
            z.isolate.program_scratch(0, False)
            results[i] = {"outcome": "infra", "emsg": f"files could not be placed: {exc}"[:300],
                          "cpu_ms": 0.0, "wall_ms": 0.0, "peak_kb": None}
            return pos + 1
    blob, src, body = (tuple(hdr["cand"]), memfd, script_body) if prog is None else (None, -1, prog.body)
    pid = spawn(z, "script", {0: stdin, 1: out_w, 2: err_w}, blob, src, body, plan, 1)
    for fd in (stdin, out_w, err_w):
        os.close(fd)
    for fd in (out_r, err_r):
        set_nonblock(fd)
    lim = z.limits
    st = {"keep": lim["max_output_bytes"], "kept": {}, "total": 0, "limit": lim["max_output_bytes"]}
    reason, status, meter = watch(z, pid, [(out_r, idx, i, "out"), (err_r, idx, i, "err")], st, lim)
    info, oom, statuses = meter.numbers(), meter.oom(), {pid: status}
    kill_candidates(z, plan, statuses)
    for fd in (out_r, err_r):
        os.close(fd)
    fetched = read_back(router_of(z), idx, i, hdr["fetch"], bool(plan.get("worker_ns"))) if hdr.get("fetch") else {}
    if plan.get("worker_ns"):
        z.isolate.program_scratch(0, False, reuse=bool(plan.get("sandbox_uid")))
    if reason == "parent":
        info.update(outcome="infra", emsg="pool closed")
    elif reason:
        info.update(outcome=reason)
    else:
        info.update(outcome="stdio", status=statuses[pid], oom=oom, out_total=st["total"])
    results[i] = dict(info, **fetched)
    return pos + 1


def place_files(files: list, memfd: int, uid: int | None) -> None:
    """The job's files into the program's fresh /tmp (its working directory), before the program starts:
    ``(relative path, offset, length)`` in the job's memfd, copied kernel to kernel; files 0644 and directories
    0755, owned by the program's uid (it may read and change them, as in SandboxFusion's temp directory). The
    paths were checked by the service (relative, no ``..``); a path that still escapes or collides raises."""
    for path, off, length in files:
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if not parts or ".." in parts or path.startswith("/"):
            raise OSError(f"file path {path!r} is not a relative path inside the working directory")
        d = "/tmp"
        for name in parts[:-1]:
            d = os.path.join(d, name)
            if not os.path.lexists(d):
                os.mkdir(d, 0o755)
                if uid:
                    os.chown(d, uid, uid)
            elif os.path.islink(d) or not os.path.isdir(d):
                raise OSError(f"file path {path!r}: {name!r} is not a directory")
        copy_to_new(os.path.join(d, parts[-1]), memfd, length, off, 0o644, uid)


class Run:
    """One judge (+ candidate) pair running tests ``start..`` of a job; a fresh pair continues after a test
    that timed out, crashed or killed the candidate."""

    def __init__(self, z, idx: int, hdr: dict, memfd: int, start: int, plan: dict):
        self.z, self.idx, self.hdr, self.memfd, self.start_pos, self.plan = z, idx, hdr, memfd, start, plan
        self.judge = self.cand = self.kept = None
        self.retire = False

    def start(self) -> None:
        z, hdr, plan = self.z, self.hdr, self.plan
        n_tests = len(hdr["tests"]) - self.start_pos
        (self.res_r, res_w), (self.out_r, out_w), (self.err_r, err_w), (self.jerr_r, jerr_w) = (
            os.pipe() for _ in range(4))
        if plan.get("worker_ns"):
            z.isolate.program_scratch(z.limits["tmpfs_mb"], True, mnt=bool(plan.get("own_net")))
        if hdr["mode"] == "unittest":  # judged in-process: one process, program and tests together
            self.judge = spawn(z, "inproc", {1: out_w, 2: err_w, 3: res_w}, tuple(hdr["judge"]), self.memfd,
                                inproc_body(self.start_pos), plan, n_tests)
            opened = [res_w, out_w, err_w, jerr_w]
        else:
            (req_r, req_w), (rep_r, rep_w) = os.pipe(), os.pipe()
            kj = kept_judge(z) if hdr["mode"] == "func" else None
            self.cand = spawn(z, "candidate", {1: out_w, 2: err_w, 3: req_r, 4: rep_w}, tuple(hdr["cand"]),
                               self.memfd, candidate_body, plan, n_tests)
            chan = [jerr_w, res_w, req_w, rep_r]
            if kj is not None:
                try:
                    kj.send(self.memfd, tuple(hdr["judge"]), self.start_pos, chan)
                except OSError:  # it went away between programs: a fresh one
                    drop_kept_judge(z)
                    kj = kept_judge(z)
                    kj.send(self.memfd, tuple(hdr["judge"]), self.start_pos, chan)
                self.kept, self.judge = kj, kj.pid
            else:
                self.judge = spawn(z, "judge-files" if hdr["mode"] == "pytest" else "judge",
                                    dict(zip((2, 3, 4, 5), chan)), tuple(hdr["judge"]), self.memfd,
                                    judge_body(self.start_pos, z.limits), plan, n_tests)
            opened = [res_w, out_w, err_w, jerr_w, req_r, req_w, rep_r, rep_w]
        for fd in opened:
            os.close(fd)
        for fd in (self.res_r, self.out_r, self.err_r, self.jerr_r):
            set_nonblock(fd)
        self.pidfd = self.kept.pidfd if self.kept is not None else open_pidfd(self.judge)

    def close(self) -> None:
        if self.kept is not None:
            self.pidfd = None  # the kept judge's own
        for name in ("res_r", "out_r", "err_r", "jerr_r", "pidfd"):
            fd = getattr(self, name, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, None)

    def supervise(self, results: dict) -> int:
        z, hdr, lim = self.z, self.hdr, self.z.limits
        tests = hdr["tests"]
        idx_of = {t["i"]: k for k, t in enumerate(tests)}
        remaining = [t["i"] for t in tests[self.start_pos:]]
        self.start()
        router = router_of(z)
        st = {"keep": lim["capture_bytes"], "kept": {}, "total": 0, "limit": lim["max_output_bytes"]}
        jst = {"keep": 8192, "kept": {}, "total": 0, "limit": 1 << 62}
        meter = Meter(z, [p for p in (self.judge, self.cand) if p], lim)
        phase, cur, hbuf = "init", None, bytearray()
        reason = died_in = None
        done = False

        def tag():  # output outside a test belongs to the next one
            return cur if cur is not None else (remaining[0] if remaining else -1)

        def record(i, **kw):
            results[i] = {**meter.numbers(), **kw}

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
        streams = ((self.out_r, "out", st), (self.err_r, "err", st), (self.jerr_r, "jerr", jst))
        while not done and not reason:
            reason, wait = meter.check(st)
            if reason:
                break
            rd = [fd for fd in (self.out_r, self.err_r, self.jerr_r, self.pidfd, z.ctl_in) if fd is not None]
            if not eof:
                rd.append(self.res_r)
            ready, _, _ = select.select(rd, [], [], wait)
            if z.ctl_in in ready:
                reason = "parent"
                break
            for fd, stream, caps in streams:
                if fd in ready:
                    router.pump(fd, self.idx, -1 if stream == "jerr" else tag(), stream, caps)
            if self.res_r in ready and not eof:
                while not done and not reason:
                    try:
                        chunk = os.read(self.res_r, JHDR.size - len(hbuf))
                    except BlockingIOError:
                        break
                    if not chunk:
                        eof = True
                        break
                    hbuf += chunk
                    if len(hbuf) == JHDR.size:
                        kind, i, n = JHDR.unpack(bytes(hbuf))
                        hbuf.clear()
                        on_frame(kind, i, n)
            if done or reason:
                break
            if eof or (self.pidfd is not None and self.pidfd in ready) or (self.pidfd is None and has_exited(self.judge)):
                reason = "died"
        # ---- wind down
        for fd, stream, caps in streams:
            router.pump(fd, self.idx, -1 if stream == "jerr" else tag(), stream, caps)
        oom, numbers = meter.oom(), meter.numbers()
        statuses = {p: None for p in (self.judge, self.cand) if p}
        if reason == "candidate":  # give the candidate a moment to finish dying (its status tells why)
            deadline = time.monotonic() + 0.2
            while (stt := exit_status(self.cand, None, [])) is None and time.monotonic() < deadline:
                time.sleep(0.002)
            statuses[self.cand] = stt
        if hdr["mode"] == "unittest" or (self.kept is not None and self.kept is z.kept and done and not reason):
            if self.kept is not None:
                del statuses[self.judge]
            kill_candidates(z, self.plan, statuses)   # a kept judge that finished cleanly serves the next program
            if self.retire and self.kept is z.kept:
                drop_kept_judge(z)
        else:
            kill_everything(z, self.plan, list(statuses))
            reap(self.plan, statuses)
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
