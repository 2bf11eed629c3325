"""Forking sandboxed children from the zygote and killing/reaping them.

:func:`spawn` forks one child (judge, candidate, stdio script, in-process unittest runner, probe) that reads
its part of the job from the memfd, closes every other descriptor and isolates itself
(:func:`.isolate.setup_program`) before the role's body runs.  :class:`KeptJudge` is the judge kept across
programs; :func:`kill_candidates` / :func:`kill_everything` / :func:`reap` end what a program left behind.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
import traceback

from .zygote_io import JHDR

def enter_child(slot, fds: dict[int, int]) -> None:
    """A fresh sandbox child's first steps: a session of its own, into cgroup ``slot``, exactly ``fds`` (target fd ->
    current fd; 0-2 on /dev/null unless given) open and every other descriptor closed, first for the OOM killer (the
    biggest sandboxed process, never the zygote or host)."""
    os.setsid()
    if slot:
        slot.attach(os.getpid())
    null = os.open("/dev/null", os.O_RDWR)
    mapping = {0: null, 1: null, 2: null, **fds}
    high = {tgt: os.dup(src) for tgt, src in mapping.items()}
    for tgt, src in high.items():
        os.dup2(src, tgt)
    os.closerange(max(mapping) + 1, 1 << 16)
    for fd in set(range(3, max(mapping) + 1)) - set(mapping):
        with contextlib.suppress(OSError):
            os.close(fd)
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")


def run_child(body, failure_code: int = 111):
    """The end of every forked sandbox child: run ``body()``; on any exception write the traceback's tail to fd 2
    (the parent reads it as the child's stderr); always ``os._exit`` (exit code 0, else ``failure_code``) - a forked
    child never returns into its parent's code or runs its atexit handlers."""
    code = failure_code
    try:
        body()
        code = 0
    except BaseException:  # noqa: BLE001
        with contextlib.suppress(OSError):
            os.write(2, traceback.format_exc()[-2000:].encode())
    finally:
        os._exit(code)


def spawn(z, role: str, fds: dict[int, int], blob: tuple | None, memfd: int, body, plan: dict, n_tests: int) -> int:
    """Fork one sandboxed child.  ``role``: 'judge' | 'candidate' | 'script' | 'inproc' | 'probe'.
    ``blob``: (offset, length) of this child's part of the job in ``memfd``; ``body(data)`` runs after
    isolation.  Never returns in the child."""
    pid = os.fork()
    if pid:
        return pid

    def child():   # its part of the job, its descriptors, its isolation, then ``body``
        data = os.pread(memfd, blob[1], blob[0]) if blob and memfd >= 0 else b""
        enter_child(z.slot, fds)   # closes the job memfd, the zygote's pipes and every other descriptor
        z.isolate.setup_program(plan, z.limits, n_tests, None, role)
        if role == "probe":
            os.write(3, JHDR.pack(b"I", 0, 0))
        else:
            body(data)
    run_child(child)


def judge_body(start: int | None, limits: dict):
    """A judge's body: :func:`.judge.main` on its part of the job; ``start`` None: a kept judge's loop."""
    def body(data: bytes):
        from . import judge
        if start is None:
            judge.serve_kept(limits)
        else:
            judge.main(data, start, limits)
    return body


KEPT_JUDGE_PROGRAMS = 500   # a kept judge is replaced after this many programs (bounds what test code can pile up)
KEPT_JUDGE_TESTS = 4096     # its RLIMIT_CPU budget in tests (a backstop; the zygote meters every test itself)


class KeptJudge:
    """The worker's judge for function-style tests, kept across programs (see :func:`.judge.serve_kept`).
    Only where the program runs under its own uid: then the zygote can kill everything the program left
    behind by uid (:func:`kill_candidates`) and spare the judge."""

    def __init__(self, z):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pid = spawn(z, "judge-files", {6: theirs.fileno()}, None, -1, judge_body(None, z.limits), z.plan,
                          KEPT_JUDGE_TESTS)
        theirs.close()
        self.pidfd = os.pidfd_open(self.pid)
        self.programs = 0

    def send(self, memfd: int, blob: tuple, start: int, chan: list[int]) -> None:
        from .judge import JOB_MSG
        socket.send_fds(self.sock, [JOB_MSG.pack(blob[0], blob[1], start)], [memfd, *chan])
        self.programs += 1

    def close(self) -> None:
        self.sock.close()
        os.close(self.pidfd)


def kept_judge(z):
    """The kept judge, started (or replaced after KEPT_JUDGE_PROGRAMS) when needed; None where not used."""
    if not z.keep_judge:
        return None
    if z.kept is not None and z.kept.programs >= KEPT_JUDGE_PROGRAMS:
        drop_kept_judge(z)   # z.kept is None then
    if z.kept is None:
        z.kept = KeptJudge(z)
    return z.kept


def drop_kept_judge(z) -> None:
    kj, z.kept = z.kept, None
    if kj is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(kj.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(kj.pid, 0)
    kj.close()


def _program_body(run):
    """A program process's body: its pickled part of the job, default signals, then ``run(candidate, job)``."""
    def body(data: bytes):
        from . import candidate
        import pickle
        job = pickle.loads(data)
        del data
        candidate.default_signals()
        run(candidate, job)
    return body


candidate_body = _program_body(lambda c, job: c.serve_program(job["program"]))
script_body = _program_body(lambda c, job: os._exit(c.run_script(job["program"])))


def inproc_body(start: int):
    def run(c, job):
        c.fresh_stdio()
        c.run_unittest_in_process(job, start)
    return _program_body(run)


def kill_candidates(z, plan: dict, statuses: dict) -> None:
    """Kill and reap every process under the program's uid (whatever it forked, daemonized or re-parented) and
    nothing else: ``kill(-1)`` with the real and effective uid switched to the program's; the kept judge (another
    uid) survives.  Without a kept judge this is :func:`kill_everything`."""
    uid = plan.get("sandbox_uid")
    if z.kept is None or not (plan.get("worker_ns") and uid):
        kill_everything(z, plan, list(statuses))
    else:
        os.setresuid(uid, uid, 0)
        try:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
        finally:
            os.setresuid(0, 0, 0)
    reap(plan, statuses, z)


def kill_everything(z, plan: dict, pids) -> None:
    if z.kept is not None:  # kill(-1) below takes the kept judge as well
        kj, z.kept = z.kept, None
        kj.close()
    kill_processes(bool(plan.get("worker_ns")), pids, z.slot)


def kill_processes(worker_ns: bool, pids, slot) -> None:
    """SIGKILL to every process of a sandbox: ``kill(-1)`` as pid 1 of its namespaces (everything but ourselves);
    without them each of ``pids`` and its process group, then whatever is left in the cgroup ``slot``."""
    if worker_ns:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        return
    for pid in pids:
        for target in (-pid, pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, signal.SIGKILL)
    if slot:
        slot.kill_all()


def reap(plan: dict, statuses: dict, z=None) -> None:
    """Reap everything (we are pid 1 / subreaper) but ``z``'s live kept judge, keeping the wait statuses of the
    pids in ``statuses``; with a kept judge alive, done when ``/proc`` shows no process but us and the judge."""
    deadline = time.monotonic() + 2.0
    for p in [p for p, st in statuses.items() if st is None]:
        with contextlib.suppress(ChildProcessError):
            statuses[p] = os.waitpid(p, 0)[1]
    while time.monotonic() < deadline:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        kj = z.kept if z is not None else None
        if pid == 0:
            if not plan.get("worker_ns"):
                break
            if kj is not None:
                left = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, kj.pid)]
                if not left:
                    break
                if _left_by_the_judge(left, plan):
                    # the tests' own code started them (a kept judge runs under its own uid, which the program-uid
                    # kill cannot reach): waiting would cost this and every later program the whole deadline
                    kill_everything(z, plan, [])
                    continue
            time.sleep(0.0005)
        elif kj is not None and pid == kj.pid:  # the kept judge exited on its own: a fresh one next time
            z.kept = None
            kj.close()
        elif pid in statuses and statuses[pid] is None:
            statuses[pid] = st


def _left_by_the_judge(pids: list[int], plan: dict) -> bool:
    """Whether a process other than the program's own (another uid: the judge's) is left in the namespace."""
    uid = plan.get("sandbox_uid")
    for pid in pids:
        with contextlib.suppress(OSError):   # gone meanwhile
            if os.stat(f"/proc/{pid}").st_uid != uid:
                return True
    return False


def has_exited(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def exit_status(pid: int, pidfd: int | None, ready: list) -> int | None:
    """``pid``'s wait status once it has exited (its pidfd among ``ready``; polled without a pidfd), else None."""
    if pidfd is not None and pidfd not in ready:
        return None
    try:
        got, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    return status if got else None
