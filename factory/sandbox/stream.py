"""One warm :class:`SandboxPool` shared by many concurrent callers: ``JobStream(pool).run_batch(jobs)``.

The pool runs a single endless ``pool.run(<queue>, yield_done=True)``; every caller's jobs join that stream,
so batches from different threads interleave on the same warm workers (a slow program holds one worker, not a
caller's whole batch). Program ids are made unique inside the stream and restored on the verdicts, so two
callers may send the same program id. Used by the Ray sandbox actor (one per node, called concurrently).
"""
from __future__ import annotations

import itertools
import queue
import threading
from dataclasses import replace

from .pool import JobDone, SandboxPool
from .types import Job, Verdict


class _Call:
    def __init__(self, n: int):
        self.left = n
        self.verdicts: list[Verdict] = []
        self.error: str | None = None
        self.done = threading.Event()


class JobStream:
    """Thread-safe front of one pool: ``run_batch(jobs) -> verdicts`` blocks until every job is done."""

    def __init__(self, pool: SandboxPool):
        self.pool = pool
        self._inbox: queue.Queue = queue.Queue()
        self._calls: dict[str, tuple[_Call, str]] = {}   # internal program id -> (call, caller's program id)
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._failed: str | None = None
        self._thread = threading.Thread(target=self._pump, daemon=True, name="sandbox-job-stream")
        self._thread.start()

    @property
    def failed(self) -> str | None:
        """Why this stream stopped (its pool failed or it was closed); None while it serves."""
        return self._failed

    def run_batch(self, jobs: list[Job]) -> list[Verdict]:
        call = _Call(len(jobs))
        internal = []
        with self._lock:
            if self._failed:
                raise RuntimeError(self._failed)
            for job in jobs:
                pid = f"{job.program_id}#stream{next(self._ids)}"
                self._calls[pid] = (call, job.program_id)
                internal.append(replace(job, program_id=pid))
        for job in internal:
            self._inbox.put(job)
        if jobs:
            call.done.wait()
        if call.error:
            raise RuntimeError(call.error)
        return call.verdicts

    def _pump(self) -> None:
        try:
            # the inbox's jobs until a None arrives: an endless job stream
            for item in self.pool.run(iter(self._inbox.get, None), yield_done=True):
                with self._lock:
                    entry = self._calls.get(item.program_id)
                    if entry is None:
                        continue
                    call, original = entry
                    if isinstance(item, JobDone):
                        del self._calls[item.program_id]
                        call.left -= 1
                        if call.left == 0:
                            call.done.set()
                    else:
                        call.verdicts.append(replace(item, program_id=original))
        except BaseException as exc:  # noqa: BLE001 - every waiting caller hears of it
            self._fail(f"sandbox pool failed: {type(exc).__name__}: {exc}")
            return
        self._fail("sandbox job stream closed")

    def _fail(self, why: str) -> None:
        with self._lock:
            self._failed = why
            calls, self._calls = {c for c, _ in self._calls.values()}, {}
        for call in calls:
            call.error = why
            call.done.set()

    def close(self, wait: float = 10.0) -> None:
        self._inbox.put(None)
        self._thread.join(timeout=wait)
        if self._thread.is_alive():
            for w in self.pool.workers:
                w.abort()
            self._thread.join(timeout=10)
        self._fail("sandbox job stream closed")
        self.pool.close()
