"""Data-parallel generation on one node: N copies of a local engine (vLLM or transformers), one process each.

Each replica is a spawned process that owns its own slice of GPUs (``CUDA_VISIBLE_DEVICES``; a vLLM replica
runs ``tensor_parallel_size`` = its slice size) or, on a CPU-only machine, its share of the cores. This is the
layout vLLM recommends for dense models (independent replicas, one per GPU group). The driver cuts the
requests into chunks and hands the next chunk to whichever replica is free, so long and short answers balance
out. A replica that dies mid-run gives its chunk back to the others; results are cached per request, so a
re-run after a crash only pays for what was not answered.

The pool is a :class:`Backend` with the inner engine's name and model, so its request hashes (and cached
answers in ``silver.llm_calls``) are the same as a single engine's.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
import traceback

from factory.errors import FactoryError

from .base import Backend, Gate
from .types import ChatRequest, GenerationResult, SamplingParams

LOCAL_ENGINES = ("vllm", "transformers")


def visible_gpus() -> list[str]:
    """GPU ids this process may use: ``CUDA_VISIBLE_DEVICES`` when set, else every GPU torch can see."""
    if (env := os.environ.get("CUDA_VISIBLE_DEVICES")) is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import torch
    except ImportError:
        return []
    return [str(i) for i in range(torch.cuda.device_count())]


def _core_list(cores: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"`` (the form of ``VLLM_CPU_OMP_THREADS_BIND``)."""
    runs = [[c for _, c in run] for _, run in itertools.groupby(enumerate(cores), lambda ic: ic[1] - ic[0])]
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def plan_replicas(engine: str, replicas: int, devices_per_replica: int = 1,
                  gpus: list[str] | None = None, cpus: int | None = None) -> list[dict[str, str]]:
    """The environment of each replica: its GPUs, or on a CPU-only node its share of the cores."""
    if engine not in LOCAL_ENGINES:
        raise FactoryError(f"--replicas runs copies of a local engine ({' or '.join(LOCAL_ENGINES)}); for "
                           f"{engine!r} list several servers with --base-url instead")
    if replicas < 1 or devices_per_replica < 1:
        raise FactoryError(f"--replicas and --devices-per-replica must be >= 1 (got {replicas}, "
                           f"{devices_per_replica})")
    gpus = visible_gpus() if gpus is None else list(gpus)
    if not gpus:  # a CPU-only node: each replica gets its own cores (vLLM's CPU build binds its threads to them)
        cores = list(range(cpus)) if cpus else sorted(os.sched_getaffinity(0))
        if replicas > len(cores):
            raise FactoryError(f"--replicas {replicas} on a CPU-only node with {len(cores)} cores: at most one "
                               "replica per core")
        threads = len(cores) // replicas
        return [{"CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": str(threads), "FACTORY_REPLICA_THREADS": str(threads),
                 "VLLM_CPU_OMP_THREADS_BIND": _core_list(cores[r * threads:(r + 1) * threads])}
                for r in range(replicas)]
    if (need := replicas * devices_per_replica) > len(gpus):
        raise FactoryError(f"--replicas {replicas} x --devices-per-replica {devices_per_replica} needs {need} "
                           f"GPUs; {len(gpus)} visible ({','.join(gpus)})")
    return [{"CUDA_VISIBLE_DEVICES": ",".join(gpus[r * devices_per_replica:(r + 1) * devices_per_replica])}
            for r in range(replicas)]


def _replica_main(rank: int, engine: str, model, engine_kw: dict, env: dict, conn) -> None:
    """Body of one replica process: build the engine, then answer chunks until told to stop."""
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C reaches the whole process group: the driver decides
    if env.get("FACTORY_REPLICA_THREADS"):
        import torch
        torch.set_num_threads(int(env["FACTORY_REPLICA_THREADS"]))
    from .engines import local_engine

    try:
        backend = local_engine(engine, model, **engine_kw)
        backend.warm()  # "ready" means the engine is built: a bad model or GPU fails here, named by replica
    except BaseException:  # noqa: BLE001 - reported to the driver, which names the replica
        conn.send(("failed", traceback.format_exc()))
        return
    conn.send(("ready", (str(backend.model), backend.parallel_requests)))
    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):  # the driver is gone
            break
        if kind == "stop":
            break
        try:
            requests = [ChatRequest(d["messages"], SamplingParams(**d["params"])) for d in payload]
            conn.send(("ok", [r.to_dict() for r in backend.generate(requests)]))
        except Exception:  # noqa: BLE001
            conn.send(("error", traceback.format_exc()))
    try:
        backend.close()
    finally:
        _reap_descendants()


def _reap_descendants() -> None:
    """Kill what this replica started and left running (an engine's worker processes): a spawned process ends
    with ``os._exit``, so nothing else would stop them. Linux ``/proc``; elsewhere a no-op."""
    try:
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
    except OSError:
        return
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier and pid not in mine}
        mine |= frontier
    for pid in mine:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


class _Replica:
    def __init__(self, rank: int, process, conn, env: dict):
        self.rank, self.process, self.conn, self.env = rank, process, conn, env
        self.alive = True

    def describe(self) -> str:
        where = self.env.get("CUDA_VISIBLE_DEVICES") or f"CPU x{self.env.get('FACTORY_REPLICA_THREADS', '?')}"
        return f"replica {self.rank} (pid {self.process.pid}, devices {where})"


class ReplicaPool(Backend):
    """``replicas`` copies of a local engine, one spawned process each; see the module docstring.

    ``engine_kw`` go to each replica's engine constructor (for vLLM: ``LLM(**engine_kw)``, e.g.
    ``gpu_memory_utilization``, ``max_model_len``, ``distributed_executor_backend="ray"``).
    """

    def __init__(self, engine: str, model=None, *, replicas: int = 2, devices_per_replica: int = 1,
                 gpus: list[str] | None = None, chunk_size: int | None = None, start_timeout_s: float = 900,
                 cache=None, budget=None, **engine_kw):
        engine = "transformers" if engine == "hf" else engine
        envs = plan_replicas(engine, replicas, devices_per_replica, gpus)
        super().__init__(model, cache=cache, budget=budget)
        self.name = engine  # same request hashes as one engine of this kind
        if engine == "vllm" and devices_per_replica > 1:
            engine_kw.setdefault("tensor_parallel_size", devices_per_replica)
        self.chunk_size = chunk_size
        self.stats = {"chunks": 0, "requeued_chunks": 0, "per_replica_requests": [0] * len(envs)}
        ctx = mp.get_context("spawn")  # CUDA and vLLM do not survive fork
        self._replicas: list[_Replica] = []
        try:
            for rank, env in enumerate(envs):
                parent, child = ctx.Pipe()
                # not a daemon: a vLLM replica starts worker processes of its own
                proc = ctx.Process(target=_replica_main, args=(rank, engine, model, engine_kw, env, child),
                                   name=f"factory-replica-{rank}", daemon=False)
                proc.start()
                child.close()
                self._replicas.append(_Replica(rank, proc, parent, env))
            ready = [self._await_ready(r, start_timeout_s) for r in self._replicas]
        except BaseException:
            self.close()
            raise
        names = sorted({name for name, _ in ready})
        self.model = names[0] if len(names) == 1 else (model or names[0])
        self._widths = [width for _, width in ready]

    @property
    def parallel_requests(self) -> int:
        return sum(w for w, rep in zip(self._widths, self._replicas) if rep.alive)

    @property
    def replicas(self) -> int:
        return len(self._replicas)

    def _await_ready(self, rep: _Replica, timeout_s: float) -> tuple[str, int]:
        deadline = time.monotonic() + timeout_s
        while not rep.conn.poll(1.0):
            if not rep.process.is_alive():
                raise FactoryError(f"{rep.describe()} exited with code {rep.process.exitcode} before its engine "
                                   "was ready")
            if time.monotonic() > deadline:
                raise FactoryError(f"{rep.describe()} did not load its engine within {timeout_s:.0f} s")
        try:
            kind, payload = rep.conn.recv()
        except EOFError:
            raise FactoryError(f"{rep.describe()} exited before its engine was ready") from None
        if kind != "ready":
            raise FactoryError(f"{rep.describe()} could not build its engine:\n{payload}")
        return payload

    def _chunks(self, n: int) -> list[list[int]]:
        live = [w for w, rep in zip(self._widths, self._replicas) if rep.alive] or [1]
        # an engine that batches (vLLM) gets its share in one chunk, up to what it schedules at once; one that
        # works a request at a time gets 4 chunks per replica, room to balance long and short answers
        size = self.chunk_size or max(math.ceil(n / (len(live) * 4)), min(min(live), math.ceil(n / len(live))))
        return [list(range(i, min(n, i + size))) for i in range(0, n, size)]

    def _serve(self, rep: _Replica, todo: "queue.Queue", done: "queue.Queue", stop: threading.Event,
               requests: list[ChatRequest]) -> None:
        """Thread body: feed one replica chunks until the driver says stop or the replica dies."""
        while not stop.is_set():
            try:
                chunk = todo.get(timeout=0.2)
            except queue.Empty:
                continue  # a chunk given back by a dying replica may still arrive
            try:
                rep.conn.send(("generate", [requests[i].to_dict() for i in chunk]))
                kind, payload = rep.conn.recv()
            except (EOFError, OSError):
                rep.alive = False
                todo.put(chunk)  # another replica takes it
                done.put(("lost", rep, chunk, None))
                return
            except BaseException:  # noqa: BLE001 - the driver must hear of it, or it waits forever
                done.put(("error", rep, chunk, traceback.format_exc()))
                return
            done.put((kind, rep, chunk, payload))
            if kind != "ok":
                return

    def _run_many(self, requests: list[ChatRequest], gate: Gate) -> list[GenerationResult | None]:
        out: list[GenerationResult | None] = [None] * len(requests)
        admitted = sum(1 for _ in itertools.takewhile(lambda r: gate.start(), requests))
        if not admitted:
            return out
        live = [rep for rep in self._replicas if rep.alive]
        if not live:
            raise FactoryError("every generation replica has exited; nothing can answer the requests")
        todo: queue.Queue = queue.Queue()
        for chunk in self._chunks(admitted):
            todo.put(chunk)
        done: queue.Queue = queue.Queue()
        stop = threading.Event()
        threads = [threading.Thread(target=self._serve, args=(rep, todo, done, stop, requests), daemon=True)
                   for rep in live]
        for t in threads:
            t.start()
        remaining, running, failure = admitted, len(threads), None
        try:
            while remaining and running and failure is None:
                kind, rep, chunk, payload = done.get()
                if kind == "ok":
                    for i, d in zip(chunk, payload):
                        out[i] = GenerationResult.from_dict(d)
                        gate.done(requests[i], out[i])
                    remaining -= len(chunk)
                    self.stats["chunks"] += 1
                    self.stats["per_replica_requests"][rep.rank] += len(chunk)
                elif kind == "lost":
                    running -= 1
                    self.stats["requeued_chunks"] += 1
                else:
                    running -= 1
                    failure = f"{rep.describe()} failed on a chunk of {len(chunk)} request(s):\n{payload}"
        finally:
            stop.set()
        for t in threads:
            t.join()
        if failure:
            raise FactoryError(failure)
        if remaining:
            codes = ", ".join(f"{r.rank}: {r.process.exitcode}" for r in self._replicas)
            raise FactoryError(f"every generation replica exited mid-run (exit codes {codes}) with {remaining} "
                               "request(s) unanswered; answered requests are cached, so a re-run resumes")
        return out

    def close(self) -> None:
        for rep in self._replicas:
            with contextlib.suppress(OSError, BrokenPipeError):
                rep.conn.send(("stop", None))
        for rep in self._replicas:
            rep.process.join(timeout=30)
            if rep.process.is_alive():
                rep.process.terminate()
                rep.process.join(timeout=10)
            if rep.process.is_alive():
                rep.process.kill()
            rep.conn.close()
        self._replicas = []

