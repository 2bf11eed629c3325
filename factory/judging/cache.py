"""Verdict cache: an identical (program text, test suite, limits, judging rule, judge version) is run once.

The key is content hashes of every part a verdict depends on (what the sandbox is given), never a program id:

* ``program_sha``: the program's text, entry point, preamble and whether it stops at its first timeout;
* ``suite_sha``: every test field as the sandbox sees it, in order (id, kind, code, input, expected, comparison,
  tolerances, checker program: a problem's judging rule is applied to its tests before they are hashed);
* ``limits_hash``: the limits the job runs under (a calibrated per-problem CPU limit included);
* ``judge_version``: ``SANDBOX_VERSION`` plus a digest of the sandbox's source files, so any change of the judge
  (comparison, serialisation, isolation) invalidates every entry.

A cached entry is reused only when all four parts match what it was stored under (not just the combined key).
Verdicts that depend on the machine's load rather than on the program are never stored: infra errors and
time-outs (a program that timed out on a busy machine is judged again next time; identical copies within one
call still share its verdict). Two stores: :class:`LakeCache` (``silver.verdict_cache``, read and written
inside `factory execute`'s own transaction, through the one commit path) and :class:`MemoryCache` (an
in-process LRU for the reward entry points, which never open the lake). Bypass: ``factory execute --no-cache``
or ``FACTORY_VERDICT_CACHE=0`` (both paths). Importable without DuckDB (the reward loads it in trainers).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from factory.sandbox.types import SANDBOX_VERSION, Job, Limits, Verdict

ENV = "FACTORY_VERDICT_CACHE"          # 0 / false / off: bypass every verdict cache
TABLE = "silver.verdict_cache"
LOAD_DEPENDENT = frozenset({"infra_error", "timeout"})   # statuses whose verdicts are never stored
_JUDGE_VERSION: str | None = None


def enabled(flag: bool = True) -> bool:
    """Whether caching is on: the caller's flag (``--no-cache`` passes False) and the environment."""
    return flag and os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def judge_version() -> str:
    """SANDBOX_VERSION + sha256 of the sandbox package's sources (computed once per process)."""
    global _JUDGE_VERSION
    if _JUDGE_VERSION is None:
        h = hashlib.sha256()
        root = Path(__file__).resolve().parents[1] / "sandbox"
        for path in sorted(root.rglob("*.py")):   # sub-packages too (sandbox/rpc)
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        _JUDGE_VERSION = f"{SANDBOX_VERSION}+{h.hexdigest()[:12]}"
    return _JUDGE_VERSION


def _sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False,
                                     separators=(",", ":")).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CacheKey:
    program_sha: str
    suite_sha: str
    limits_hash: str
    judge_version: str

    @property
    def key(self) -> str:
        return hashlib.sha256("|".join(self.parts()).encode()).hexdigest()[:32]

    def parts(self) -> tuple[str, str, str, str]:
        return (self.program_sha, self.suite_sha, self.limits_hash, self.judge_version)


def job_key(job: Job, limits: Limits, version: str | None = None) -> CacheKey:
    """The cache key of a job run by a pool with ``limits`` (the job's own CPU limit applied)."""
    program = _sha([job.code, job.entry_point, job.preamble or "", bool(job.stop_at_timeout)]
                   + ([job.language, job.compile_cpu_s] if (job.language or "python") != "python" else []))
    suite = _sha([[t.test_id, t.kind, t.code, t.input, t.expected, t.comparison, t.atol, t.rtol, t.checker]
                  for t in job.tests])
    return CacheKey(program, suite, job.limits_for(limits).hash(), version or judge_version())


def _payload(verdicts: list[Verdict]) -> list[dict]:
    return [{k: x for k, x in v.as_dict().items() if k != "program_id"} for v in verdicts]


@dataclass
class CacheStats:
    jobs: int = 0
    hits: int = 0                 # jobs served from the store
    batch_duplicates: int = 0     # jobs identical to another job of the same call (run once, fanned out)
    misses: int = 0               # jobs run in the sandbox
    stored: int = 0
    saved_cpu_s: float = 0.0      # CPU seconds the served jobs took when they were run

    def add(self, other: "CacheStats") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def hit_rate(self) -> float:
        return (self.hits + self.batch_duplicates) / self.jobs if self.jobs else 0.0

    def summary(self) -> str:
        return (f"verdict cache: {self.hits} hits + {self.batch_duplicates} in-batch duplicates of {self.jobs} "
                f"programs ({100 * self.hit_rate:.1f} %), {self.misses} run, ~{self.saved_cpu_s:.2f} CPU s saved")


class MemoryCache:
    """Thread-safe, fork-aware LRU of verdict payloads (the reward entry points: no lake in a trainer)."""

    def __init__(self, maxsize: int = 65536):
        self.maxsize = maxsize
        self._data: OrderedDict[str, tuple[tuple, list[dict]]] = OrderedDict()
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _guard(self) -> None:
        if self._pid != os.getpid():           # a forked child: the parent's lock may be held by a dead thread
            self._lock, self._pid = threading.Lock(), os.getpid()

    def get_many(self, keys: list[CacheKey]) -> dict[str, list[dict]]:
        self._guard()
        out = {}
        with self._lock:
            for k in keys:
                if (entry := self._data.get(k.key)) is not None and entry[0] == k.parts():
                    self._data.move_to_end(k.key)
                    out[k.key] = entry[1]
        return out

    def put_many(self, entries: list[tuple[CacheKey, list[dict]]]) -> None:
        self._guard()
        with self._lock:
            for k, payload in entries:
                self._data[k.key] = (k.parts(), payload)
                self._data.move_to_end(k.key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


class LakeCache:
    """``silver.verdict_cache`` seen through a stage run's transaction: lookups read the lake, new entries are
    written by the same run (one commit with the verdicts they belong to)."""

    def __init__(self, run):
        self.run = run
        self._written: set[str] = set()

    def get_many(self, keys: list[CacheKey]) -> dict[str, list[dict]]:
        from factory.lake.connection import LAKE_ALIAS

        wanted = {k.key: k for k in keys}
        if not wanted:
            return {}
        rows = self.run.con.execute(
            f"SELECT cache_key, program_sha, suite_sha, limits_hash, judge_version, verdicts "
            f"FROM {LAKE_ALIAS}.{TABLE} WHERE cache_key IN (SELECT unnest(?::VARCHAR[]))", [list(wanted)]).fetchall()
        return {key: json.loads(verdicts) for key, *parts, verdicts in rows
                if tuple(parts) == wanted[key].parts()}    # every key part, not just the digest

    def put_many(self, entries: list[tuple[CacheKey, list[dict]]]) -> None:
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        rows = []
        for k, payload in entries:
            if k.key in self._written:
                continue
            self._written.add(k.key)
            rows.append({"cache_key": k.key, "program_sha": k.program_sha, "suite_sha": k.suite_sha,
                         "limits_hash": k.limits_hash, "judge_version": k.judge_version,
                         "verdicts": json.dumps(payload, ensure_ascii=True), "tests": len(payload),
                         "cpu_ms": float(sum(d.get("cpu_ms") or 0.0 for d in payload)),
                         "wall_ms": float(sum(d.get("wall_ms") or 0.0 for d in payload)), "created_at": now})
        if rows:
            self.run.write(TABLE, rows)


def run_cached(jobs: list[Job], limits: Limits, runner, store, stats: CacheStats | None = None) -> list[Verdict]:
    """Verdicts of ``jobs``: those whose key ``store`` holds are served from it, identical jobs of this call run
    once, the rest run through ``runner(jobs) -> verdicts`` and are stored (unless a verdict is an infra error).
    ``store=None`` bypasses the cache (every job runs)."""
    stats = stats if stats is not None else CacheStats()
    stats.jobs += len(jobs)
    if store is None:
        stats.misses += len(jobs)
        return list(runner(jobs)) if jobs else []
    keys = [job_key(job, limits) for job in jobs]
    hits = store.get_many(keys)
    reps: dict[str, Job] = {}
    for job, k in zip(jobs, keys):
        if k.key not in hits:
            reps.setdefault(k.key, job)
    fresh = list(runner(list(reps.values()))) if reps else []
    by_program: dict[str, list[Verdict]] = {}
    for v in fresh:
        by_program.setdefault(v.program_id, []).append(v)
    ran = {key: by_program.get(job.program_id, []) for key, job in reps.items()}
    storable = [(k, _payload(ran[k.key])) for k in {k.key: k for k in keys}.values()
                if k.key in ran and ran[k.key] and all(v.status not in LOAD_DEPENDENT for v in ran[k.key])]
    store.put_many(storable)
    stats.stored += len(storable)
    stats.misses += len(reps)
    out: list[Verdict] = []
    for job, k in zip(jobs, keys):
        if k.key not in hits and reps[k.key] is job:
            out += ran[k.key]
            continue
        if k.key in hits:
            stats.hits += 1
            payload = hits[k.key]
        else:   # a copy of a job this call ran
            stats.batch_duplicates += 1
            payload = _payload(ran[k.key])
        stats.saved_cpu_s += sum(d.get("cpu_ms") or 0.0 for d in payload) / 1000
        out += [Verdict(program_id=job.program_id, **d) for d in payload]
    return out
