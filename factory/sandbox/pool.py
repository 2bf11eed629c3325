"""Worker pool (trusted parent): warm zygote processes fed from a queue; :func:`run_jobs`."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import uuid
from typing import Iterable, Iterator

from . import zygote as zproto
from .isolate import SAFE_ENV
from .types import SANDBOX_VERSION, Job, Limits, Verdict
from .verdicts import SubJob, build_verdicts, split_job

_PKG_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BOOT = ("import sys; sys.path.insert(0, {root!r}); "
         "from factory.sandbox.zygote import main; main()")


class Worker:
    """One zygote process and its control pipes."""

    def __init__(self, limits: Limits, name: str, preload: tuple = ()):
        self.limits, self.name, self.preload = limits, name, tuple(preload)
        self.proc = None
        self.meta_json = "{}"

    def start(self) -> None:
        r_in, self.w = os.pipe()
        self.r, w_out = os.pipe()
        env = dict(SAFE_ENV)
        debug = os.environ.get("FACTORY_SANDBOX_DEBUG")
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT.format(root=_PKG_ROOT), str(r_in), str(w_out)],
            pass_fds=(r_in, w_out), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=None if debug else subprocess.DEVNULL, env=env, cwd="/", close_fds=True)
        os.close(r_in)
        os.close(w_out)
        zproto.send(self.w, ("init", self.limits.as_dict(), self.name, self.preload))
        msg = zproto.recv(self.r)
        if not msg or msg[0] != "ready":
            self.stop()
            raise RuntimeError(f"sandbox zygote failed to start: {msg!r}")
        meta = dict(msg[1], sandbox_version=SANDBOX_VERSION)
        self.meta_json = json.dumps(meta, sort_keys=True)

    def run(self, payload: dict) -> list[dict]:
        """Run one sub-job; restarts the zygote (once) if it died.  Raises RuntimeError on failure."""
        for attempt in range(2):
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self.start()
                zproto.send(self.w, ("job", payload))
                msg = zproto.recv(self.r)
            except (OSError, RuntimeError, EOFError) as exc:
                msg = ("error", repr(exc))
            if msg and msg[0] == "done":
                return msg[1]
            self.stop()
            if attempt == 1:
                raise RuntimeError(f"zygote failure: {msg!r}"[:2000])
        raise AssertionError("unreachable")

    def run_many(self, payloads: list[dict]) -> list[list[dict] | Exception]:
        """Run several sub-jobs in one round trip; an entry is the raw results or the exception for it.

        Falls back to :meth:`run` (restart + one retry each) for entries the batch could not finish."""
        if len(payloads) == 1:
            try:
                return [self.run(payloads[0])]
            except RuntimeError as exc:
                return [exc]
        replies = None
        try:
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            zproto.send(self.w, ("jobs", payloads))
            msg = zproto.recv(self.r)
            if msg and msg[0] == "done_many" and len(msg[1]) == len(payloads):
                replies = msg[1]
        except (OSError, RuntimeError, EOFError):
            pass
        if replies is None:
            self.stop()
            replies = [None] * len(payloads)
        out: list = []
        for payload, reply in zip(payloads, replies):
            if reply and reply[0] == "done":
                out.append(reply[1])
                continue
            try:
                out.append(self.run(payload))
            except RuntimeError as exc:
                out.append(exc)
        return out

    def stop(self) -> None:
        if self.proc is None:
            return
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


class SandboxPool:
    """A reusable pool of warm zygotes.  Use as a context manager; :meth:`run` yields Verdicts.

    ``preload``: extra modules imported once in every zygote (e.g. ``("numpy",)``); the default
    warm set is a stdlib list (see :data:`.zygote.WARM_MODULES`).  ``max_batch``: sub-jobs a worker takes
    per round trip when the queue is long (each program still gets its own fresh sandboxed process).
    """

    def __init__(self, limits: Limits = Limits(), workers: int | None = None, preload: tuple = (),
                 max_batch: int = 16):
        self.limits, self.max_batch = limits, max(1, max_batch)
        self.limits_json = json.dumps(limits.as_dict(), sort_keys=True)
        n = workers or os.cpu_count() or 1
        tag = uuid.uuid4().hex[:8]
        self.workers = [Worker(limits, f"factory-sbx-{os.getpid()}-{tag}-{k}", preload) for k in range(n)]
        errors = []

        def boot(w):
            try:
                w.start()
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)
        threads = [threading.Thread(target=boot, args=(w,)) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.close()
            raise errors[0]

    @property
    def meta_json(self) -> str:
        return self.workers[0].meta_json

    def run(self, jobs: Iterable[Job], progress: bool = False) -> Iterator[Verdict]:
        tasks: queue.Queue = queue.Queue(maxsize=4 * self.max_batch * len(self.workers))
        results: queue.Queue = queue.Queue()
        stop = threading.Event()
        meta = self.meta_json

        def feed():
            try:
                for job in jobs:
                    if stop.is_set():
                        break
                    subs, early = split_job(job, meta, self.limits_json)
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
                    raws = w.run_many([sub.payload() for sub in batch])
                    verdicts = []
                    for sub, raw in zip(batch, raws):
                        try:
                            if isinstance(raw, Exception):
                                raise raw
                            verdicts += build_verdicts(sub, raw, self.limits, w.meta_json, self.limits_json)
                        except Exception as exc:  # noqa: BLE001
                            verdicts += [Verdict(sub.job.program_id, s.test_id, "infra_error",
                                                 error_type="InfraError", error_message=str(exc)[:2000],
                                                 sandbox_meta=w.meta_json, limits=self.limits_json)
                                         for s in sub.specs]
                    results.put(verdicts)
                if last:
                    results.put(None)
                    return

        threads = [threading.Thread(target=feed, daemon=True)]
        threads += [threading.Thread(target=work, args=(w,), daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        bar = None
        if progress:
            from tqdm import tqdm
            total = sum(len(j.tests) or 1 for j in jobs) if hasattr(jobs, "__len__") else None
            bar = tqdm(total=total, unit="test", desc="sandbox")
        finished = 0
        try:
            while finished < len(self.workers):
                item = results.get()
                if item is None:
                    finished += 1
                    continue
                if isinstance(item, BaseException):
                    raise item
                for v in item:
                    if bar is not None:
                        bar.update(1)
                    yield v
        finally:
            stop.set()
            while finished < len(self.workers):  # let workers finish their current sub-job
                try:
                    tasks.get_nowait()
                except queue.Empty:
                    pass
                try:
                    if results.get(timeout=0.05) is None:
                        finished += 1
                except queue.Empty:
                    pass
            if bar is not None:
                bar.close()

    def close(self) -> None:
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
