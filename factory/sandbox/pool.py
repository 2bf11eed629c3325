"""Worker pool (trusted parent): warm zygote processes fed from a queue; :func:`run_jobs`."""
from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import uuid
from dataclasses import dataclass
from typing import Iterable, Iterator

from . import zygote_io as zproto
from .isolate import start_python
from .checker import PENDING, apply_checker_verdicts, checker_jobs
from .types import SANDBOX_VERSION, Job, Limits, Verdict
from .verdicts import SubJob, build_verdicts_safe, split_job


@dataclass(frozen=True)
class JobDone:
    """Marker from :meth:`SandboxPool.run` (``yield_done=True``): every verdict of this job was yielded."""
    program_id: str


class Worker:
    """One zygote process and its control pipes."""

    def __init__(self, limits: Limits, name: str, preload: tuple = (), cpu: int | None = None):
        self.limits, self.name, self.preload, self.cpu = limits, name, tuple(preload), cpu
        self.proc = None
        self.meta_json = "{}"
        self.aborted = False

    def start(self) -> None:
        r_in, self.w = os.pipe()
        self.r, w_out = os.pipe()
        self.proc = start_python("zygote.main", [r_in, w_out])
        os.close(r_in)
        os.close(w_out)
        zproto.send(self.w, ("init", self.limits.as_dict(), self.name, self.preload, self.cpu))
        msg = zproto.recv(self.r)
        if not msg or msg[0] != "ready":
            self.stop()
            raise RuntimeError(f"sandbox zygote failed to start: {msg!r}")
        self.meta_json = json.dumps(dict(msg[1], sandbox_version=SANDBOX_VERSION), sort_keys=True)

    def _exchange(self, payloads: list) -> list:
        """Send a batch (headers, then the raw body the zygote moves into a memfd unread) and collect one
        result per job: ``(infos, segments)`` or an Exception."""
        hdrs, base = [], 0
        for hdr, blob in payloads:
            shifted = dict(hdr, inputs=[(o + base, n) for o, n in hdr.get("inputs", [])],
                           **{key: (hdr[key][0] + base, hdr[key][1]) for key in ("cand", "judge")})
            if hdr.get("files"):
                shifted["files"] = [(p, o + base, n) for p, o, n in hdr["files"]]
            hdrs.append(shifted)
            base += len(blob)
        body = b"".join(blob for _, blob in payloads)
        zproto.send(self.w, ("jobs", hdrs, len(body)))
        zproto.write_all(self.w, body)
        out: list = [None] * len(payloads)
        segs: list[dict] = [{} for _ in payloads]
        while True:
            msg = zproto.recv(self.r)
            if msg is None:
                raise RuntimeError("zygote exited mid-batch")
            if msg[0] == "seg":
                _, idx, i, stream, n = msg
                data = zproto.read_exact(self.r, n)
                if data is None:
                    raise RuntimeError("zygote exited mid-segment")
                segs[idx].setdefault((i, stream), bytearray()).extend(data)
            elif msg[0] == "done":
                out[msg[1]] = (msg[2], segs[msg[1]])
            elif msg[0] == "error":
                out[msg[1]] = RuntimeError(f"zygote failure: {msg[2]}"[:2000])
            elif msg[0] == "batch_done":
                return [o if o is not None else RuntimeError("no result from the zygote") for o in out]
            else:
                raise RuntimeError(f"zygote protocol: {msg[0]!r}")

    def run_many(self, payloads: list) -> list:
        """Run several sub-jobs in one round trip; an entry is ``(infos, segments)`` or the exception for it.
        If the zygote dies, it is restarted and each job of the batch retried once on its own (not after
        :meth:`abort`: then every job of the batch reports the abort)."""
        try:
            self._ensure()
            return self._exchange(payloads)
        except (OSError, RuntimeError, EOFError):
            self.stop()
        out: list = []
        for p in payloads:
            try:
                self._ensure()   # after abort(): raises "sandbox run aborted"
                out += self._exchange([p])
            except (OSError, RuntimeError, EOFError) as exc:
                self.stop()
                out.append(exc)
        return out

    def _ensure(self) -> None:
        if self.aborted:
            raise RuntimeError("sandbox run aborted")
        if self.proc is not None and self.proc.poll() is not None:
            self.stop()   # a dead zygote: close its pipes before starting a new one
        if self.proc is None:
            self.start()

    def abort(self) -> None:
        """Stop now (an interrupted run): kill the zygote, so a batch in flight ends at once instead of after
        its programs' time limits; the reading thread sees the pipe close. The next run starts a fresh one."""
        self.aborted = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(timeout=10)
            from . import cgroup
            with contextlib.suppress(OSError):
                cgroup.remove_slot(self.name)

    def stop(self) -> None:
        if self.proc is None:
            return
        for fd in (self.w, self.r):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


class SandboxPool:
    """A reusable pool of warm zygotes.  Use as a context manager; :meth:`run` yields Verdicts.

    ``preload``: extra modules imported once in every zygote (e.g. ``("numpy",)``; the default warm set is
    :data:`.zygote.WARM_MODULES`).  ``max_batch``: sub-jobs a worker takes per round trip when the queue is long
    (each program still gets its own fresh sandboxed process).  ``pin_cpus``: each worker on one of this
    process's CPUs (round robin from a pid-derived offset, so several pools spread out): judge <-> program calls
    then cost no cross-core wake-ups."""

    def __init__(self, limits: Limits = Limits(), workers: int | None = None, preload: tuple = (),
                 max_batch: int = 16, pin_cpus: bool = True, wait: bool = True):
        self.limits, self.max_batch = limits, max(1, max_batch)
        self.limits_json = json.dumps(limits.as_dict(), sort_keys=True)
        n = workers or os.cpu_count() or 1
        tag = uuid.uuid4().hex[:8]
        cpus = sorted(os.sched_getaffinity(0)) if pin_cpus and hasattr(os, "sched_getaffinity") else []
        start = os.getpid() % len(cpus) if cpus else 0   # several pools on one host start on different cores
        self.workers = [Worker(limits, f"factory-sbx-{os.getpid()}-{tag}-{k}", preload,
                               cpus[(start + k) % len(cpus)] if cpus else None) for k in range(n)]
        errors = []

        def boot(w):
            try:
                w.start()
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)
        threads = [threading.Thread(target=boot, args=(w,), daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        self._booting, self._boot_errors = threads, errors
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Block until every worker has started (``wait=False`` returns from the constructor while they boot, so a
        caller's own start-up work overlaps theirs); a worker that failed to start raises here."""
        threads, self._booting = self._booting, []
        for t in threads:
            t.join()
        if self._boot_errors:
            error, self._boot_errors = self._boot_errors[0], []
            for w in self.workers:
                w.stop()
            raise error

    def _run_checkers(self, w: Worker, pending: list) -> None:
        """Second pass on the same worker: each problem checker decides its pending verdicts (in the sandbox)."""
        results, subs = [], []
        for job in checker_jobs(pending):
            s, early = split_job(job, w.meta_json, self.limits_json)
            subs += s
            results += early
        if subs:
            for s, raw in zip(subs, w.run_many([s.payload(self.limits) for s in subs])):
                results += build_verdicts_safe(s, raw, self.limits, w.meta_json, self.limits_json)
        apply_checker_verdicts(pending, results)

    def _limits_json(self, job: Job) -> str:
        """The limits a job ran under, as its verdicts record them (a calibrated ``Job.cpu_s`` included)."""
        if job.cpu_s is None:
            return self.limits_json
        return json.dumps(job.limits_for(self.limits).as_dict(), sort_keys=True)

    @property
    def meta_json(self) -> str:
        self.wait_ready()
        return self.workers[0].meta_json

    def run(self, jobs: Iterable[Job], progress: bool = False, yield_done: bool = False) -> Iterator[Verdict]:
        """Verdicts as they finish. ``jobs`` is consumed lazily (an endless generator makes a long-lived
        stream). ``yield_done=True`` also yields :class:`JobDone` after the last verdict of each job, so a
        caller routing verdicts of many concurrent requests knows when one job is complete."""
        self.wait_ready()
        tasks: queue.Queue = queue.Queue(maxsize=4 * self.max_batch * len(self.workers))
        results: queue.Queue = queue.Queue()
        stop = threading.Event()
        meta = self.meta_json
        left: dict[int, int] = {}   # id(job) -> sub-jobs not finished yet (yield_done)
        left_lock = threading.Lock()

        def feed():
            try:
                for job in jobs:
                    if stop.is_set():
                        break
                    subs, early = split_job(job, meta, self._limits_json(job))
                    if yield_done:
                        if subs:
                            with left_lock:
                                left[id(job)] = len(subs)
                        else:
                            early = early + [JobDone(job.program_id)]
                    if early:
                        results.put(early)
                    for sub in subs:
                        tasks.put(sub)
            except BaseException as exc:  # noqa: BLE001
                results.put(exc)
            finally:
                for _ in self.workers:
                    tasks.put(None)

        def take_batch() -> tuple[list[SubJob], bool]:
            """One sub-job (blocking) plus what is queued, up to a fair share: fewer round trips."""
            first = tasks.get()
            if first is None:
                return [], True
            batch, cap = [first], max(1, min(self.max_batch, tasks.qsize() // len(self.workers)))
            while len(batch) < cap:
                try:
                    nxt = tasks.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    return batch, True
                batch.append(nxt)
            return batch, False

        def work(w: Worker):
            while True:
                batch, last = take_batch()
                if batch and not stop.is_set():
                    raws = w.run_many([sub.payload(self.limits) for sub in batch])
                    verdicts, pending = [], []
                    for sub, raw in zip(batch, raws):
                        built = build_verdicts_safe(sub, raw, self.limits, w.meta_json, self._limits_json(sub.job))
                        verdicts += built
                        specs = {s.test_id: s for s in sub.specs}
                        pending += [(v, specs[v.test_id]) for v in built if v.status == PENDING]
                    if pending:   # checkers decide before anything of these jobs is reported
                        self._run_checkers(w, pending)
                    if yield_done:
                        with left_lock:
                            for sub in batch:
                                left[id(sub.job)] -= 1
                                if not left[id(sub.job)]:
                                    del left[id(sub.job)]
                                    verdicts.append(JobDone(sub.job.program_id))
                    results.put(verdicts)
                if last:
                    results.put(None)
                    return

        for w in self.workers:
            w.aborted = False
        threads = [threading.Thread(target=feed, daemon=True)]
        threads += [threading.Thread(target=work, args=(w,), daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        bar = None
        if progress:
            from tqdm import tqdm
            total = sum(len(j.tests) or 1 for j in jobs) if hasattr(jobs, "__len__") else None
            bar = tqdm(total=total, unit="test", desc="sandbox")
        finished, completed = 0, False
        try:
            while finished < len(self.workers):
                item = results.get()
                if item is None:
                    finished += 1
                    continue
                if isinstance(item, BaseException):
                    raise item
                for v in item:
                    if bar is not None and not isinstance(v, JobDone):
                        bar.update(1)
                    yield v
            completed = True
        finally:
            stop.set()
            if not completed:  # interrupted (Ctrl-C, an error, the consumer stopped): no waiting for time limits
                for w in self.workers:
                    w.abort()
            while finished < len(self.workers):  # let workers finish their current sub-job
                with contextlib.suppress(queue.Empty):
                    tasks.get_nowait()
                with contextlib.suppress(queue.Empty):
                    if results.get(timeout=0.05) is None:
                        finished += 1
            if bar is not None:
                bar.close()

    def close(self) -> None:
        threads, self._booting = self._booting, []
        for t in threads:   # a worker still booting is stopped once it has started
            t.join()
        for w in self.workers:
            w.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_jobs(jobs: Iterable[Job], limits: Limits = Limits(), workers: int | None = None,
             progress: bool = False) -> Iterator[Verdict]:
    """Run every job's tests in the sandbox; yields one Verdict per (job, test) as they finish."""
    with SandboxPool(limits, workers) as pool:
        yield from pool.run(jobs, progress=progress)
