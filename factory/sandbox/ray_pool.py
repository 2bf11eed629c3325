"""The sandbox pool fanned out over a Ray cluster: one actor per node, each holding a local :class:`SandboxPool`
sized to that node's CPUs; the same ``run(jobs) -> Verdicts`` interface as :class:`SandboxPool`.

Jobs go out in batches of ``max(batch_jobs, 2 x the node's CPUs)`` (a batch runs on the node's whole pool, so a
64-core node gets batches that fill its 64 workers), at most ``inflight`` batches per actor. A batch's verdicts count only
when the whole batch comes back, so a node lost mid-run costs its unfinished batches, which are re-run on the
surviving actors (and on actors started on nodes that joined): no duplicate and no missing verdict. Ray is
imported lazily; ``pip install 'ray>=2.40'`` (the ``dev`` extra) or any Ray the cluster runs.
"""
from __future__ import annotations

import os
from collections import deque
from typing import Iterable, Iterator

from .types import Job, Limits, Verdict


def _lost_actor_errors() -> tuple:
    """The exceptions Ray raises for a call to an actor whose node or process is gone."""
    from ray import exceptions as rex

    return tuple(getattr(rex, n) for n in ("RayActorError", "ActorDiedError", "ActorUnavailableError")
                 if hasattr(rex, n))


def _actor_class():
    import ray

    @ray.remote(max_restarts=0, max_task_retries=0)
    class SandboxNode:
        """One node's sandbox pool (a warm zygote per CPU of the node)."""

        def __init__(self, limits: Limits, workers: int):
            from factory.sandbox.pool import SandboxPool

            self.pool = SandboxPool(limits, workers=workers)

        def meta(self) -> tuple[str, str, int]:
            import socket
            return self.pool.meta_json, socket.gethostname(), os.getpid()

        def run(self, jobs: list[Job]) -> list[Verdict]:
            return list(self.pool.run(jobs))

        def close(self) -> None:
            self.pool.close()

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
        self._discover()
        self.meta_json = self._first_meta()

    def _first_meta(self) -> str:
        """The sandbox metadata of the first actor that answers; a node lost while its actor starts is skipped."""
        lost = _lost_actor_errors()
        while self.actors:
            node_id, actor = next(iter(self.actors.items()))
            try:
                return self.ray.get(actor.meta.remote())[0]
            except lost:
                self._lose(node_id)
        raise RuntimeError("no Ray node with CPUs is alive")

    def _discover(self) -> None:
        """An actor on every alive node with CPUs that has none yet."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        for node in self.ray.nodes():
            node_id = node["NodeID"]
            cpus = int(node.get("Resources", {}).get("CPU", 0))
            if not node.get("Alive") or cpus < 1 or node_id in self.actors or node_id in self.lost_nodes:
                continue
            self.cpus[node_id] = cpus
            self.actors[node_id] = self.cls.options(
                num_cpus=cpus, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
            ).remote(self.limits, cpus)

    @property
    def nodes(self) -> int:
        return len(self.actors)

    def run(self, jobs: Iterable[Job], progress: bool = False) -> Iterator[Verdict]:
        lost = _lost_actor_errors()

        fresh = deque(jobs)
        pending: list[list[Job]] = []   # batches of a lost node, re-run first
        running: dict = {}          # object ref -> (node id, batch)
        load = {n: 0 for n in self.actors}

        def next_batch(node_id: str) -> list[Job]:
            if pending:
                return pending.pop()
            size = max(self.batch_jobs, 2 * self.cpus.get(node_id, 1))
            return [fresh.popleft() for _ in range(min(size, len(fresh)))]

        while fresh or pending or running:
            for node_id in list(self.actors):
                while (fresh or pending) and load.get(node_id, 0) < self.inflight:
                    batch = next_batch(node_id)
                    ref = self.actors[node_id].run.remote(batch)
                    running[ref] = (node_id, batch)
                    load[node_id] = load.get(node_id, 0) + 1
            if not running:
                self._discover()
                if not self.actors:
                    raise RuntimeError(f"every Ray node running the sandbox was lost; {len(pending)} batches and "
                                       f"{len(fresh)} more jobs left")
                continue
            done, _ = self.ray.wait(list(running), num_returns=1)
            for ref in done:
                node_id, batch = running.pop(ref)
                load[node_id] -= 1
                try:
                    verdicts = self.ray.get(ref)
                except lost:
                    self._lose(node_id)
                    pending.append(batch)          # re-run elsewhere; nothing of it was yielded
                    self.retried_batches += 1
                    continue
                yield from verdicts

    def _lose(self, node_id: str) -> None:
        if self.actors.pop(node_id, None) is not None:
            self.lost_nodes.append(node_id)
        self._discover()

    def close(self) -> None:
        for actor in self.actors.values():
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
