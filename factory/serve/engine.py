"""The verifier engine behind `factory serve`: warm sandbox pools fed by one endless job stream each.

Each program of a request is a :class:`Ticket`. Each distinct :class:`Limits` gets a :class:`StreamingPool` (a
:class:`SandboxPool` running ``pool.run(<endless generator>)`` in a pump thread): jobs of different requests
interleave on the same warm workers. Waiting programs stay in the engine (a priority queue, oldest first) and go
to the pool only when it has room (``prefetch`` x workers started or about to start), so a program whose client
has gone (:meth:`VerifierEngine.cancel`) or whose start deadline passed (:meth:`VerifierEngine.take_back_waiting`)
is removed before it runs; a started one runs out and its verdicts are dropped. Admission is bounded
(``max_queue``): beyond it :class:`Overloaded` carries a Retry-After estimate. A program with an infrastructure
failure is re-run up to ``infra_retries`` times (counted on the ticket) before its ``infra_error`` is reported.
:meth:`VerifierEngine.drain` stops admission, lets in-flight programs finish within a timeout and fails the rest
explicitly (``ServerShutdown``): no verdict is silently dropped.

Importable without DuckDB (sandbox boundary); the HTTP layer is :mod:`factory.serve.app`.
"""
from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable

from factory.sandbox import Job, Limits, SandboxPool, Verdict
from factory.sandbox.pool import JobDone

from .metrics import Metrics

# infra_error verdicts that describe the request, not the infrastructure: re-running cannot change them
NOT_RETRYABLE = {"InvalidTest", "InvalidJob", "NoTestsCollected"}


SHUT_DOWN = "server shut down before this program finished"

# ticket states
QUEUED, STARTED, DONE, CANCELLED = "queued", "started", "done", "cancelled"


class Overloaded(Exception):
    """Admission refused: the queue is full (HTTP 429) or the server is draining (HTTP 503)."""

    def __init__(self, message: str, retry_after: float, draining: bool = False):
        super().__init__(message)
        self.retry_after, self.draining = max(1, int(retry_after + 0.999)), draining


class TooLarge(ValueError):
    """A request bigger than the queue bound (HTTP 413): split it."""


class ServerShutdown(Exception):
    """In-flight work the server could not finish before shutting down."""


@dataclass
class Ticket:
    """One program of one request: its verdicts, retries and completion callback."""
    job: Job
    limits: Limits
    on_done: Callable[["Ticket"], None]
    verdicts: list[Verdict] = field(default_factory=list)
    infra_retries: int = 0
    error: str | None = None          # set when the server failed the ticket (shutdown, pool crash)
    submitted: float = field(default_factory=time.monotonic)
    finished: float | None = None
    priority: float | None = None     # lower runs first; default: submission time (FIFO)
    state: str = QUEUED               # queued -> started -> done; queued -> cancelled; started: abandoned=True
    abandoned: bool = False           # its client went away after it started: it runs out, nobody reads it
    started: float | None = None
    pool: "StreamingPool | None" = field(default=None, repr=False)


class StreamingPool:
    """A SandboxPool that runs one endless stream of jobs; verdicts are routed to tickets as they finish.

    The stream is fed from ``waiting`` (a heap by priority) only while fewer than ``window`` programs have been
    handed to the pool and not finished: what waits here can still be cancelled; what the pool holds cannot."""

    def __init__(self, limits: Limits, engine: "VerifierEngine"):
        self.limits, self.engine = limits, engine
        # local workers, or one limit set's view of the Ray cluster's nodes
        self.pool = (SandboxPool(limits, workers=engine.workers) if engine.cluster is None
                     else _ClusterLimits(engine.cluster, limits))
        self.window = engine.window
        self.waiting: list = []                  # heap of (priority, seq, ticket)
        self.seq = itertools.count()
        self.fed = 0                             # handed to the pool, JobDone not seen yet
        self.tickets: dict[str, Ticket] = {}
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.last_used = time.monotonic()
        self.closed = False
        self.thread = threading.Thread(target=self._pump, daemon=True, name=f"verifier-pump-{limits.hash()}")
        self.thread.start()

    def submit(self, ticket: Ticket) -> None:
        with self.lock:
            if self.closed:
                raise ServerShutdown("sandbox pool is closed")
            self.tickets[ticket.job.program_id] = ticket
            self.last_used = time.monotonic()
            ticket.pool = self
            self._push(ticket)

    def _push(self, ticket: Ticket) -> None:   # under the lock
        ticket.state = QUEUED
        prio = ticket.priority if ticket.priority is not None else ticket.submitted
        heapq.heappush(self.waiting, (prio, next(self.seq), ticket))
        self.wake.notify()

    def cancel(self, ticket: Ticket, running: bool = True) -> str | None:
        """Take a ticket back: ``"queued"`` if it was removed before it started, ``"started"`` if it is running
        (it runs out; nobody is told; ``running=False`` leaves it to deliver its result), None otherwise."""
        with self.lock:
            if ticket.state == QUEUED:
                ticket.state = CANCELLED        # left in the heap; the feeder skips it
                self.tickets.pop(ticket.job.program_id, None)
                self.wake.notify()
                return QUEUED
            if ticket.state == STARTED and running:
                ticket.abandoned = True
                return STARTED
            return None

    def _jobs(self):
        """The endless job stream the pool consumes: the oldest waiting ticket whenever the pool has room."""
        while True:
            with self.lock:
                while True:
                    while self.waiting and self.waiting[0][2].state != QUEUED:   # cancelled ones
                        heapq.heappop(self.waiting)
                    if self.closed:
                        return
                    if self.waiting and self.fed < self.window:
                        break
                    self.wake.wait()
                ticket = heapq.heappop(self.waiting)[2]
                ticket.state, ticket.started = STARTED, time.monotonic()
                self.fed += 1
            yield ticket.job

    def _pump(self) -> None:
        try:
            for item in self.pool.run(self._jobs(), yield_done=True):
                if isinstance(item, JobDone):
                    with self.lock:
                        self.fed -= 1
                        self.wake.notify()
                    self._job_done(item.program_id)
                else:
                    ticket = self.tickets.get(item.program_id)
                    if ticket is not None:
                        ticket.verdicts.append(item)
        except BaseException as exc:  # noqa: BLE001 - a crashed pool fails its tickets explicitly, never silently
            self.fail_all(f"sandbox pool failed: {type(exc).__name__}: {exc}")
            self.engine._pool_crashed(self)

    def _job_done(self, program_id: str) -> None:
        ticket = self.tickets.get(program_id)
        if ticket is None:
            return
        retry = any(v.status == "infra_error" and v.error_type not in NOT_RETRYABLE for v in ticket.verdicts)
        if retry and ticket.infra_retries < self.engine.infra_retries and not self.closed and not ticket.abandoned:
            ticket.infra_retries += 1
            self.engine.metrics.count("infra_retries")
            ticket.verdicts = []
            with self.lock:
                ticket.priority = float("-inf")   # a re-run goes first: its request has waited once already
                self._push(ticket)
            return
        if retry and self.closed:
            ticket.error = SHUT_DOWN
        with self.lock:
            self.tickets.pop(program_id, None)
            self.last_used = time.monotonic()
            ticket.state = DONE
        self.engine._finish(ticket)

    def fail_all(self, why: str) -> None:
        with self.lock:
            tickets, self.tickets = list(self.tickets.values()), {}
            for ticket in tickets:
                ticket.state = DONE
        for ticket in tickets:
            ticket.error = why
            self.engine._finish(ticket)

    def close(self, wait: float = 10.0) -> None:
        """Start nothing more; programs already started get ``wait`` seconds; the rest fail explicitly."""
        with self.lock:
            self.closed = True
            self.wake.notify_all()
        self.thread.join(timeout=wait)
        if self.thread.is_alive():   # programs still running past the wait: stop the workers now
            for w in getattr(self.pool, "workers", ()):
                w.abort()
            self.thread.join(timeout=10)
        self.fail_all(SHUT_DOWN)
        self.pool.close()


class VerifierEngine:
    """Warm pools keyed by limits, bounded admission, infra retries, metrics and a graceful drain."""

    def __init__(self, workers: int | None = None, *, base_limits: Limits | None = None, max_queue: int = 4096,
                 infra_retries: int = 2, max_pools: int = 4, metrics: Metrics | None = None,
                 ray_address: str | None = None, prefetch: int = 1):
        self.workers = workers or os.cpu_count() or 1
        self.base_limits = base_limits or Limits(cpu_s=10.0, wall_factor=2.5, wall_min_s=5.0, capture_bytes=1 << 16)
        # with a Ray address the sandboxes run on the cluster's nodes (one actor per node, all its CPUs)
        self.cluster = None
        if ray_address is not None:
            from factory.sandbox.ray_pool import RaySandboxPool
            self.cluster = RaySandboxPool(self.base_limits, ray_address)
            self.workers = sum(self.cluster.cpus.values())
        # programs handed to the sandboxes at once (started or next in line): the rest wait here, cancellable.
        # The Ray pool keeps `inflight` batches of max(batch_jobs, 2 x CPUs) per node busy.
        self.prefetch = max(1, prefetch)
        if self.cluster is None:
            self.window = self.prefetch * self.workers
        else:
            self.window = sum(self.cluster.inflight * max(self.cluster.batch_jobs, 2 * c)
                              for c in self.cluster.cpus.values())
            self.prefetch = max(1, -(-self.window // max(1, self.workers)))
        self.max_queue, self.infra_retries, self.max_pools = max_queue, infra_retries, max_pools
        self.metrics = metrics or Metrics()
        self.pools: dict[Limits, StreamingPool] = {}
        self.lock = threading.Lock()
        self.draining = False
        self.ids = itertools.count()
        self.in_flight = 0
        self.idle = threading.Condition(self.lock)

    # ---- admission -------------------------------------------------------------------------------------
    def admit(self, n: int) -> None:
        """Reserve room for n programs or raise :class:`Overloaded`."""
        with self.lock:
            if self.draining:
                raise Overloaded("server is shutting down; retry against another replica or later",
                                 5.0, draining=True)
            if n > self.max_queue:
                raise TooLarge(f"request has {n} programs; this server admits at most {self.max_queue} at once "
                                 f"(split the batch)")
            if self.in_flight + n > self.max_queue:
                self.metrics.count("rejected")
                raise Overloaded(f"queue full ({self.in_flight} programs in flight, bound {self.max_queue})",
                                 (self.in_flight + n) / max(self.metrics.programs_per_s() or self.workers, 1e-3))
            self.in_flight += n

    def release(self, n: int) -> None:
        with self.lock:
            self.in_flight -= n
            if self.in_flight <= 0:
                self.in_flight = 0
                self.idle.notify_all()

    # ---- submission --------------------------------------------------------------------------------------
    def limits_for(self, cpu_s=None, memory_mb=None, max_output_bytes=None) -> Limits:
        change = {k: v for k, v in (("cpu_s", cpu_s), ("memory_mb", memory_mb),
                                    ("max_output_bytes", max_output_bytes)) if v is not None}
        return replace(self.base_limits, **change) if change else self.base_limits

    def _pool(self, limits: Limits) -> StreamingPool:
        with self.lock:
            pool = self.pools.get(limits)
            if pool is not None:
                return pool
            if len(self.pools) >= self.max_pools:
                idle = [p for p in self.pools.values() if not p.tickets]   # nothing queued or running
                if not idle:
                    raise Overloaded(f"{self.max_pools} distinct limit sets busy; retry with the server's default "
                                     f"limits or later", 2.0)
                victim = min(idle, key=lambda p: p.last_used)
                del self.pools[victim.limits]
                threading.Thread(target=victim.close, daemon=True).start()
            pool = self.pools[limits] = StreamingPool(limits, self)
            return pool

    def warm(self) -> None:
        """Start the default pool now (readiness waits for it)."""
        self._pool(self.base_limits)

    def submit(self, jobs: list[Job], limits: Limits, on_done: Callable[[Ticket], None],
               priority: float | None = None) -> list[Ticket]:
        """Queue already-admitted jobs; ``on_done(ticket)`` runs (in a pump thread) when each finishes.
        Program ids are made unique per server, so requests never collide. If queuing fails part-way, the
        admission of the jobs not queued is released here (queued ones release when they finish).
        ``priority``: lower starts first (default: now, i.e. first come first served)."""
        tickets: list[Ticket] = []
        try:
            pool = self._pool(limits)
            for job in jobs:
                internal = replace(job, program_id=f"{job.program_id}#{next(self.ids)}")
                ticket = Ticket(internal, limits, on_done, priority=priority)
                pool.submit(ticket)
                tickets.append(ticket)
        except BaseException:
            self.release(len(jobs) - len(tickets))
            raise
        return tickets

    def _finish(self, ticket: Ticket) -> None:
        ticket.finished = time.monotonic()
        self.metrics.program_done(ticket)
        self.release(1)
        if ticket.abandoned:
            self.metrics.count("abandoned_finished")
            return
        try:
            ticket.on_done(ticket)
        except Exception:  # noqa: BLE001 - a handler that went away must not stop the pump
            pass

    def cancel(self, tickets: list[Ticket], reason: str = "client_gone") -> dict[str, int]:
        """Take back the tickets of a request nobody waits for any more (its client disconnected or timed out:
        ``reason`` "client_gone"; its start deadline passed: "expired"). Programs not started yet are removed
        from the queue and their admission released; started ones run out (their verdicts are dropped).
        Counted in the metrics as ``<reason>_queued`` and ``<reason>_running``."""
        states = Counter(ticket.pool.cancel(ticket) for ticket in tickets if ticket.pool is not None)
        removed, running = states[QUEUED], states[STARTED]
        self._taken_back(removed, reason)
        if running:
            self.metrics.count(f"{reason}_running", running)
        return {"queued": removed, "running": running}

    def take_back_waiting(self, tickets: list[Ticket], reason: str = "expired") -> list[Ticket]:
        """Remove the tickets that have not started (a start deadline passed); started ones are left to
        finish and their results still delivered. Returns the removed tickets."""
        removed = [t for t in tickets if t.pool is not None and t.pool.cancel(t, running=False) == QUEUED]
        self._taken_back(len(removed), reason)
        return removed

    def _taken_back(self, n: int, reason: str) -> None:
        """n admitted programs left the queue before they started: their admission is released."""
        if n:
            self.release(n)
            self.metrics.count(f"{reason}_queued", n)

    def _pool_crashed(self, pool: StreamingPool) -> None:
        with self.lock:
            if self.pools.get(pool.limits) is pool:
                del self.pools[pool.limits]
        self.metrics.count("pool_crashes")

    # ---- lifecycle ----------------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return not self.draining and self.base_limits in self.pools

    def waiting(self) -> int:
        """Programs admitted and not started yet (the part of the queue a departed client can take back)."""
        return sum(sum(1 for t in list(p.tickets.values()) if t.state == QUEUED) for p in list(self.pools.values()))

    def drain(self, timeout: float = 30.0) -> int:
        """Stop admitting, wait up to ``timeout`` s for in-flight programs, fail the rest explicitly and close
        the pools. Returns how many programs were failed."""
        with self.lock:
            self.draining = True
            deadline = time.monotonic() + timeout
            while self.in_flight > 0 and time.monotonic() < deadline:
                self.idle.wait(timeout=max(0.05, deadline - time.monotonic()))
            left = self.in_flight
            pools, self.pools = list(self.pools.values()), {}
        for pool in pools:
            pool.close(wait=0.5 if left else 10.0)
        if self.cluster is not None:
            self.cluster.close()
        return left


class _ClusterLimits:
    """One limit set's view of the shared Ray sandbox pool (the cluster's actors serve every limit set)."""

    workers = ()

    def __init__(self, cluster, limits: Limits):
        self.cluster, self.limits = cluster, limits

    def run(self, jobs, yield_done: bool = False):
        return self.cluster.run(jobs, yield_done=yield_done, limits=self.limits)

    def close(self) -> None:
        """The cluster pool outlives one limit set; the engine closes it at drain."""
