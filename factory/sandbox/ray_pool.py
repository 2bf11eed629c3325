"""The sandbox pool fanned out over a Ray cluster: one actor per node, each holding warm :class:`SandboxPool` s
sized to that node's CPUs; the same ``run(jobs) -> Verdicts`` interface as :class:`SandboxPool`.

An actor takes many batches at once (a threaded actor): every batch joins the node's one endless job stream
(:class:`~factory.sandbox.stream.JobStream`, one per limit set), so batches interleave on the node's warm workers. The
driver keeps up to ``inflight`` x (batch size) jobs in flight per node, in batches of up to
``max(batch_jobs, 2 x the node's CPUs)``; jobs that arrive one by one (the verifier service's endless stream) go out at
once in small batches. A batch's verdicts count only when the whole batch comes back, so a node lost mid-run costs its
unfinished batches, which are re-run on the surviving actors (and on actors started on nodes that joined): no duplicate
and no missing verdict. One pool may serve several limit sets at once (``run(jobs, limits=...)`` from several threads).
Ray is imported lazily; ``pip install 'ray>=2.40'`` (the ``scale`` extra) or any Ray the cluster runs.
"""
from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections import defaultdict, deque
from typing import Iterable, Iterator

from .pool import JobDone
from .types import Job, Limits, Verdict

_END = object()


def _lost_actor_errors() -> tuple:
    """The exceptions Ray raises for a call to an actor whose node or process is gone."""
    from ray import exceptions as rex

    return tuple(getattr(rex, n) for n in ("RayActorError", "ActorDiedError", "ActorUnavailableError")
                 if hasattr(rex, n))


def _actor_class():
    import ray

    @ray.remote(max_restarts=0, max_task_retries=0, max_concurrency=256)
    class SandboxNode:
        """One node's sandbox: a warm pool (a zygote per CPU of the node) and its job stream per limit set."""

        def __init__(self, limits: Limits, workers: int):
            self.default, self.workers = limits, workers
            self.streams: dict = {}
            self.lock = threading.Lock()
            self.stream(limits)

        def stream(self, limits: Limits):
            from factory.sandbox.pool import SandboxPool
            from factory.sandbox.stream import JobStream

            with self.lock:
                if limits not in self.streams:
                    self.streams[limits] = JobStream(SandboxPool(limits, workers=self.workers))
                return self.streams[limits]

        def meta(self) -> tuple[str, str, int]:
            import socket
            return self.stream(self.default).pool.meta_json, socket.gethostname(), os.getpid()

        def run(self, jobs: list[Job], limits: Limits | None = None) -> list[Verdict]:
            return self.stream(limits or self.default).run_batch(jobs)

        def close(self) -> None:
            for s in list(self.streams.values()):
                s.close()

    return SandboxNode


class RaySandboxPool:
    """``RaySandboxPool(limits, address="auto")``: ``run(jobs)`` yields Verdicts computed on the cluster."""

    def __init__(self, limits: Limits = Limits(), address: str | None = "auto", *, batch_jobs: int = 16,
                 inflight: int = 2, init_kwargs: dict | None = None):
        import ray

        self.limits, self.batch_jobs, self.inflight = limits, max(1, batch_jobs), max(1, inflight)
        if not ray.is_initialized():
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, **(init_kwargs or {}))
        self.ray = ray
        self.cls = _actor_class()
        self.actors: dict[str, object] = {}     # node id -> actor
        self.cpus: dict[str, int] = {}          # node id -> CPUs (its pool's workers)
        self.retried_batches = 0
        self.lost_nodes: list[str] = []
        self._lock = threading.RLock()          # actors/lost_nodes: several run() calls may share this pool
        self._discover()
        self.meta_json = self._first_meta()

    def _discover(self) -> None:
        """An actor on every alive node with CPUs that has none yet."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        with self._lock:
            for node in self.ray.nodes():
                node_id = node["NodeID"]
                cpus = int(node.get("Resources", {}).get("CPU", 0))
                if not node.get("Alive") or cpus < 1 or node_id in self.actors or node_id in self.lost_nodes:
                    continue
                self.cpus[node_id] = cpus
                self.actors[node_id] = self.cls.options(
                    num_cpus=cpus, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
                ).remote(self.limits, cpus)

    def _first_meta(self) -> str:
        """The sandbox metadata of the first actor that answers; a node lost while its actor starts is skipped."""
        lost = _lost_actor_errors()
        while True:
            with self._lock:
                if not self.actors:
                    raise RuntimeError("no Ray node with CPUs is alive")
                node_id, actor = next(iter(self.actors.items()))
            try:
                return self.ray.get(actor.meta.remote())[0]
            except lost:
                self._lose(node_id)

    @property
    def nodes(self) -> int:
        return len(self.actors)

    def run(self, jobs: Iterable[Job], progress: bool = False, yield_done: bool = False,
            limits: Limits | None = None) -> Iterator[Verdict]:
        """Verdicts as batches come back. ``jobs`` is consumed lazily (an endless generator makes a long-lived
        stream); ``yield_done=True`` also yields :class:`JobDone` after the last verdict of each job."""
        lost = _lost_actor_errors()
        inbox: queue.Queue = queue.Queue()

        def feed():
            try:
                for job in jobs:
                    inbox.put(job)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                inbox.put(exc)
            inbox.put(_END)

        threading.Thread(target=feed, daemon=True, name="ray-sandbox-feed").start()
        fresh: deque = deque()
        pending: list[list[Job]] = []   # batches of a lost node, re-run first
        running: dict = {}              # object ref -> (node id, batch)
        in_flight: dict = defaultdict(int)
        ended = False
        while True:
            block = not (fresh or pending or running or ended)
            while True:
                try:
                    item = inbox.get(block)
                except queue.Empty:
                    break
                block = False
                if item is _END:
                    ended = True
                    break
                if isinstance(item, BaseException):   # feed's error (a job is never an exception)
                    raise item
                fresh.append(item)
            if ended and not (fresh or pending or running):
                return
            with self._lock:
                actors = dict(self.actors)
            for node_id, actor in actors.items():
                cap = max(self.batch_jobs, 2 * self.cpus.get(node_id, 1))   # jobs per batch
                while (fresh or pending) and in_flight[node_id] < self.inflight * cap:
                    if pending:
                        batch = pending.pop()
                    else:
                        take = min(cap, self.inflight * cap - in_flight[node_id], len(fresh))
                        batch = [fresh.popleft() for _ in range(take)]
                    ref = actor.run.remote(batch, limits)
                    running[ref] = (node_id, batch)
                    in_flight[node_id] += len(batch)
            if not running:
                if fresh or pending:
                    self._discover()
                    if not self.actors:
                        raise RuntimeError(f"every Ray node running the sandbox was lost; {len(pending)} batches "
                                           f"and {len(fresh)} more jobs left")
                continue
            done, _ = self.ray.wait(list(running), num_returns=1, timeout=None if ended else 0.05)
            for ref in done:
                node_id, batch = running.pop(ref)
                in_flight[node_id] -= len(batch)
                try:
                    verdicts = self.ray.get(ref)
                except lost:
                    self._lose(node_id)
                    pending.append(batch)          # re-run elsewhere; nothing of it was yielded
                    self.retried_batches += 1
                    continue
                yield from verdicts
                if yield_done:
                    yield from (JobDone(job.program_id) for job in batch)

    def _lose(self, node_id: str) -> None:
        with self._lock:
            if self.actors.pop(node_id, None) is not None:
                self.lost_nodes.append(node_id)
        self._discover()

    def close(self) -> None:
        with self._lock:
            actors, self.actors = list(self.actors.values()), {}
        for actor in actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
