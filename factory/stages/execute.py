"""`factory execute`: run programs against their problems' tests in the sandbox → `silver.executions`.

Work is committed in batches of programs, each batch one stage run (one transaction) sized to finish well within
``--commit-every`` seconds (default 60), so an interrupt loses at most that much work and a long execution
is resumable: re-running skips (program, test, limits) triples already in the lake. Before scoring,
call tests without an expected value (HumanEval+/MBPP+ inputs) get it from the problem's reference program,
as evalplus does; inputs on which the reference itself fails keep expected NULL and are never scored.
Whatever text a program produces (lone surrogates in a returned string or exception message, undecodable
output) is escaped before the commit, so one bad verdict never aborts a batch.
"""
from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from factory.errors import FactoryError, InputError, reraise_as_interrupted

if TYPE_CHECKING:   # the work's imports (DuckDB, Arrow, the sandbox) load in the functions: `factory --help` stays fast
    from factory.judging.rules import ProblemJudging
    from factory.progress import Progress
    from factory.sandbox import Job, Limits, SandboxPool, Verdict

SELECTIONS = {
    "reference": "p.origin = 'reference'",
    "samples": "p.origin = 'sample'",
    "mutants": "p.origin = 'mutant'",
    "synth": "p.origin = 'synth'",
    "all": "true",
}


@dataclass
class ExecuteReport:
    programs: int = 0
    verdicts: int = 0
    expected_filled: int = 0
    expected_failed: int = 0
    retried_batches: int = 0      # --engine ray: batches re-run after their node was lost
    lost_nodes: int = 0
    status_counts: dict = field(default_factory=lambda: defaultdict(int))
    cache: object = None          # factory.judging.cache.CacheStats while the verdict cache is on (else None)
    runs: list = field(default_factory=list)


COMMIT_EVERY_S = 60.0   # results are committed at least this often: an interrupt loses at most this much work
FIRST_BATCH = 8         # programs in the first batch, before a rate is measured


def next_batch_size(done: int, seconds: float, commit_every_s: float, most: int) -> int:
    """Programs for the next batch: as many as the last batch's rate finishes in half of commit_every_s (the
    other half absorbs slower programs), at least 1, at most ``most``."""
    if done <= 0 or seconds <= 0:
        return most
    return max(1, min(most, int(done * (commit_every_s / 2) / seconds)))


def _where(selection: str, sources: list[str] | None, model: str | None) -> tuple[str, list]:
    if selection not in SELECTIONS:
        raise FactoryError(f"unknown selection {selection!r}; choose from {', '.join(SELECTIONS)}")
    clauses, params = [SELECTIONS[selection]], []
    if sources:
        clauses.append(f"pb.source IN ({', '.join('?' for _ in sources)})")
        params += sources
    if model:
        clauses.append("p.model = ?")
        params.append(model)
    return " AND ".join(clauses), params


def fill_expected_outputs(lake, pool: SandboxPool, sources: list[str] | None, report: ExecuteReport, con=None) -> bool:
    """Compute missing expected values of call tests by running each problem's reference program. With ``con``
    (a read-only connection of the caller's) the check for missing values reads through it; when there are some,
    that connection is closed before the commit (a SQLite catalog takes one writer and no open reader), and the
    return value is True."""
    import pyarrow as pa

    from factory.judging.jobs import program_job
    from factory.lake import connect
    from factory.lake.commit import stage_run
    from factory.sandbox import SANDBOX_VERSION, clean_text
    from factory.sandbox.rows import is_json

    own = con is None
    con = connect(lake, read_only=True) if own else con
    src_clause = f"AND pb.source IN ({', '.join('?' for _ in sources)})" if sources else ""
    pending = con.execute(f"""
        SELECT t.*, p.program_id, p.code, p.language, pb.entry_point, pb.test_preamble
        FROM silver.tests t JOIN silver.problems pb USING (problem_id)
        JOIN silver.programs p ON p.problem_id = t.problem_id AND p.origin = 'reference'
                                  AND coalesce(p.language, 'python') = 'python'
        WHERE t.kind = 'call' AND t.expected IS NULL {src_clause}
        QUALIFY row_number() OVER (PARTITION BY t.test_id ORDER BY p.program_id) = 1
        ORDER BY t.problem_id, t.ordinal""", sources or []).to_arrow_table().to_pylist()
    if pending or own:
        con.close()   # the commit below needs the catalog: a caller's connection is closed too (returns True)
    if not pending:
        return False
    by_program: dict[str, list[dict]] = defaultdict(list)
    for row in pending:
        by_program[row["program_id"]].append(row)
    jobs = [program_job(rows[0], [dict(r, expected=None) for r in rows]) for rows in by_program.values()]
    actual = {}
    for v in pool.run(jobs, progress=sys.stderr.isatty()):
        if v.status == "no_expected" and v.actual is not None:
            expected = clean_text(v.actual)  # serialized JSON: a surrogate escaped as \udXXX parses back the same
            if is_json(expected):
                actual[v.test_id] = expected
    with stage_run("expected", {"sources": sources, "sandbox_version": SANDBOX_VERSION}, lake=lake) as run:
        ids = list({r["test_id"] for r in pending})
        table = run.con.execute("SELECT * FROM silver.tests WHERE test_id IN (SELECT unnest(?::VARCHAR[]))", [ids]).to_arrow_table()
        rows = [dict(r, expected=actual.get(r["test_id"])) for r in table.to_pylist()]
        run.delete("silver.tests", "test_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
        run.write("silver.tests", pa.Table.from_pylist(rows, schema=table.schema).drop_columns(["run_id"]))
        # verdicts recorded for these tests were judged against another (or no) expected value: stale
        run.delete("silver.executions", "test_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
        report.expected_filled += sum(1 for r in rows if r["expected"] is not None)
        report.expected_failed += sum(1 for r in rows if r["expected"] is None)
        run.summary = f"expected outputs: {report.expected_filled} computed, {report.expected_failed} reference failures"
    report.runs.append(run.run_id)
    return True


def execute(lake=None, *, selection: str = "reference", sources: list[str] | None = None, model: str | None = None,
            limits: Limits | None = None, workers: int | None = None, max_programs: int | None = None,
            batch_programs: int = 500, fill_expected: bool = True, program_ids: list[str] | None = None,
            engine: str = "local", ray_address: str | None = "auto", shard: tuple[int, int] | None = None,
            time_limits: str = "calibrated", cache: bool = True,
            commit_every_s: float = COMMIT_EVERY_S, shipped_rules: bool = True) -> ExecuteReport:
    """Execute the selected programs on every test of their problem that has no verdict under `limits` yet.

    ``engine="ray"`` runs the sandbox on every node of a Ray cluster (:class:`RaySandboxPool`); verdicts are
    committed here, by the driver, through the same batches. ``shard=(i, n)`` takes only the programs whose id
    hashes to i mod n, so n drivers on n machines split one selection and commit into one lake.

    Batches are sized by time (FIRST_BATCH programs, then :func:`next_batch_size`, at most ``batch_programs``); a
    commit holds the batches that finish within half of ``commit_every_s``: an interrupt loses at most that much.

    Each problem is judged by its own rule where it has one (``silver.checkers``: a tolerance, case-insensitive
    answers or a checker program) and, with ``time_limits="calibrated"``, under its calibrated CPU limit
    (``silver.time_limits``, `factory calibrate`) instead of ``limits.cpu_s``; ``"fixed"`` ignores them."""
    from factory.judging.cache import CacheStats, enabled
    from factory.judging.rules import KEYS_SQL, key_lists, load_judging
    from factory.lake import connect
    from factory.lake.query import check_known, shard_predicate
    from factory.progress import Progress
    from factory.sandbox import Limits

    if time_limits not in ("calibrated", "fixed"):
        raise InputError(f"unknown time_limits {time_limits!r} (calibrated | fixed)")
    limits = limits or Limits()
    report = ExecuteReport(cache=CacheStats() if enabled(cache) else None)   # cache on: flag and FACTORY_VERDICT_CACHE
    where, params = _where(selection, sources, model)
    if program_ids is not None:
        where += " AND p.program_id IN (SELECT unnest(?::VARCHAR[]))"
        params.append(program_ids)
    where += f" AND {shard_predicate(shard, 'p.program_id')}"
    with _pool(engine, limits, workers, ray_address) as pool:
        con = connect(lake, read_only=True)   # one read of the lake before the run (each connection ~0.1 s)
        if shipped_rules and (shard is None or shard[0] == 0):   # the rules the factory ships judge by default
            from factory.judging.attach import apply_shipped_rules
            if apply_shipped_rules(lake, sources, con=con):
                con = connect(lake, read_only=True)
        if fill_expected and (shard is None or shard[0] == 0) and \
                fill_expected_outputs(lake, pool, sources, report, con=con):   # one writer fills expected outputs
            con = connect(lake, read_only=True)
        check_known(con, "source", sources, "SELECT DISTINCT source FROM silver.problems", "run `factory ingest` first")
        check_known(con, "model", model, "SELECT DISTINCT model FROM silver.programs", "run `factory sample` first")
        judging = load_judging(con, time_limits=time_limits == "calibrated")
        keys = key_lists(judging, limits)   # (problem ids, verdict keys) where they differ from limits.hash()
        programs = con.execute(f"""
            WITH keys AS ({KEYS_SQL})
            SELECT * FROM (
                SELECT p.program_id, p.code, p.problem_id, p.origin, p.language, pb.entry_point, pb.test_preamble,
                       (SELECT count(*) FROM silver.tests t WHERE t.problem_id = p.problem_id
                        AND NOT (t.kind IN ('call', 'stdio') AND t.expected IS NULL)
                        AND NOT EXISTS (SELECT 1 FROM silver.executions e WHERE e.program_id = p.program_id
                                        AND e.test_id = t.test_id AND e.limits_hash = coalesce(k.limits_hash, ?)))
                        AS pending_tests
                FROM silver.programs p JOIN silver.problems pb USING (problem_id)
                LEFT JOIN keys k ON k.problem_id = p.problem_id
                WHERE {where})
            WHERE pending_tests > 0
            ORDER BY problem_id, program_id {f'LIMIT {int(max_programs)}' if max_programs else ''}""",
            [*keys, limits.hash(), *params]).to_arrow_table().to_pylist()
        total = sum(p["pending_tests"] for p in programs)
        con.close()
        progress = Progress(total, "execute", "test")
        try:
            start, size = 0, min(batch_programs, FIRST_BATCH)
            while start < len(programs):   # one commit per loop: the batches that fit in half of commit_every_s
                with _execute_run(lake, limits, selection, sources, report) as run:
                    opened = time.monotonic()
                    while start < len(programs):
                        batch = programs[start:start + size]
                        began = time.monotonic()
                        _execute_batch(run, pool, batch, limits, report, progress, judging, keys)
                        start += len(batch)
                        size = next_batch_size(len(batch), time.monotonic() - began, commit_every_s, batch_programs)
                        if time.monotonic() - opened >= commit_every_s / 2:
                            break
                report.runs.append(run.run_id)
            progress.close()
            report.retried_batches = getattr(pool, "retried_batches", 0)
            report.lost_nodes = len(getattr(pool, "lost_nodes", []))
        except BaseException as exc:
            progress.close()
            reraise_as_interrupted(exc, lambda signal: (
                f"execute stopped by {signal}: {len(report.runs)} commit(s) before it "
                f"({report.programs} of {len(programs)} programs, {report.verdicts} verdicts); the work since the "
                "last commit was rolled back. Run the same command again to resume: programs with verdicts are skipped."))
            raise
    return report


def _pool(engine: str, limits: Limits, workers: int | None, ray_address: str | None):
    if engine == "local":   # workers boot while the lake is read (the first run() waits for them)
        from factory.sandbox import SandboxPool
        return SandboxPool(limits, workers, wait=False)
    if engine == "ray":
        _check_ray_address(ray_address)
        try:
            from factory.sandbox.ray_pool import RaySandboxPool
            return RaySandboxPool(limits, ray_address)
        except ImportError as exc:
            raise FactoryError(f"--engine ray needs Ray installed (pip install 'code-rl-factory[scale]'): {exc}") \
                from None
        except ConnectionError as exc:   # ray.init(address=...) finds no cluster there
            raise FactoryError(f"--engine ray: no Ray cluster at --ray-address {ray_address!r} (start one with "
                               "`ray start --head`, or pass --ray-address HOST:PORT; --engine local runs here) "
                               f"[{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}]") from None
    raise InputError(f"unknown engine {engine!r} (local | ray)")


def _check_ray_address(address: str | None) -> None:
    """A HOST:PORT (or ray://HOST:PORT) that nothing listens on is one clear line within seconds (ray.init would
    keep retrying it); ``auto`` is checked by ray.init itself (no cluster: ConnectionError, see _pool)."""
    import socket

    if not address or address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        raise InputError(f"--ray-address {address!r}: expected auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as exc:
        raise FactoryError(f"--engine ray: no Ray cluster at --ray-address {address!r} ({exc.strerror or exc}); "
                           "start one with `ray start --head`, or use --engine local") from None


def _verdicts(pool: SandboxPool, jobs: list[Job], progress: Progress) -> list[Verdict]:
    """All verdicts of the jobs; progress counts (program, test row) pairs as their first verdict arrives."""
    seen: set = set()
    out = []
    for v in pool.run(jobs):
        out.append(v)
        if v.test_id is not None:
            key = (v.program_id, v.test_id.split("::", 1)[0])
            if key not in seen:
                seen.add(key)
                progress.update()
    return out


def _cached_verdicts(run, pool: SandboxPool, jobs: list[Job], limits: Limits, progress: Progress,
                     stats) -> list[Verdict]:
    """The verdict cache (factory.judging.cache) in front of the sandbox: a job identical to one already judged
    (silver.verdict_cache) or to another of this batch is not run again; new entries commit with this batch."""
    if stats is None:
        return _verdicts(pool, jobs, progress)
    from factory.judging.cache import CacheStats, LakeCache, run_cached

    batch, ran = CacheStats(), []
    out = run_cached(jobs, limits, lambda todo: ran.extend(_verdicts(pool, todo, progress)) or ran,
                     LakeCache(run), batch)
    served = {(v.program_id, v.test_id.split("::", 1)[0]) for v in out if v.test_id is not None}   # served: done
    progress.update(len(served) - len({(v.program_id, v.test_id.split("::", 1)[0])
                                       for v in ran if v.test_id is not None}))
    stats.add(batch)
    run.cache_stats.add(batch)   # one commit may hold several batches
    return out


@contextmanager
def _execute_run(lake, limits: Limits, selection: str, sources: list[str] | None, report: ExecuteReport):
    """One commit of `factory execute`: the transaction its batches write into (the run's config lists how many
    programs it holds and which judging keys they used, filled in by :func:`_execute_batch`)."""
    from factory.judging.cache import CacheStats
    from factory.lake.commit import config_hash, stage_run
    from factory.sandbox import SANDBOX_VERSION

    config = {"selection": selection, "sources": sources, "limits": limits.as_dict(),
              "sandbox_version": SANDBOX_VERSION, "programs": 0, "judging": []}
    with stage_run("execute", config, lake=lake) as run:
        run.counts = {"programs": 0, "verdicts": 0}
        run.cache_stats = CacheStats()   # this commit's share of report.cache (when the cache is on)
        yield run
        run.config_hash = config_hash(run.config)
        run.summary = f"{run.counts['programs']} programs, {run.counts['verdicts']} verdicts"
        if report.cache is not None and (cached := run.cache_stats.summary()):
            run.summary += f"; {cached}"


def _execute_batch(run, pool: SandboxPool, batch: list[dict], limits: Limits, report: ExecuteReport,
                   progress: Progress, judging: dict[str, ProblemJudging], keys: tuple[list[str], list[str]]) -> None:
    """Run one batch of programs and write its verdicts into ``run``'s transaction (committed with the run)."""
    from factory.judging.jobs import executions_table, program_job
    from factory.judging.rules import KEYS_SQL, NO_OVERRIDE
    from factory.lake.commit import utcnow
    from factory.sandbox.rows import merge_verdicts, verdict_row

    rule = {p["program_id"]: judging.get(p["problem_id"], NO_OVERRIDE) for p in batch}
    key = {pid: r.limits_hash(limits) for pid, r in rule.items()}   # each program's verdict key, computed once
    run.config["programs"] += len(batch)
    run.config["judging"] = sorted(set(run.config["judging"]) |
                                   {key[p["program_id"]] for p in batch if p["problem_id"] in judging})
    ids = [p["program_id"] for p in batch]
    tests = run.con.execute(f"""
        WITH keys AS ({KEYS_SQL})
        SELECT p.program_id, t.test_id, t.kind, t.code, t.input, t.expected, t.comparison, t.atol
        FROM silver.programs p JOIN silver.tests t USING (problem_id)
        LEFT JOIN keys k ON k.problem_id = p.problem_id
        WHERE p.program_id IN (SELECT unnest(?::VARCHAR[]))
          AND NOT (t.kind IN ('call', 'stdio') AND t.expected IS NULL)
          AND NOT EXISTS (SELECT 1 FROM silver.executions e WHERE e.program_id = p.program_id
                          AND e.test_id = t.test_id AND e.limits_hash = coalesce(k.limits_hash, ?))
        ORDER BY p.program_id, t.ordinal""", [*keys, ids, limits.hash()]
    ).to_arrow_table().to_pylist()
    by_program: dict[str, list[dict]] = defaultdict(list)
    for t in tests:
        by_program[t["program_id"]].append(t)
    jobs = [program_job(p, by_program[p["program_id"]], rule[p["program_id"]])
            for p in batch if by_program[p["program_id"]]]
    merged = merge_verdicts(_cached_verdicts(run, pool, jobs, limits, progress, report.cache))
    now = utcnow()
    rows = []
    for (program_id, test_id), (v, in_process) in merged.items():
        row = verdict_row(program_id, test_id, v, in_process, key[program_id], now)
        report.status_counts[row["status"]] += 1
        rows.append(row)
    if missing := {(t["program_id"], t["test_id"]) for t in tests} - set(merged):
        raise FactoryError(f"sandbox returned no verdict for {len(missing)} (program, test) pairs, "
                           f"e.g. {sorted(missing)[0]}")
    run.write("silver.executions", executions_table(rows))
    report.programs += len(jobs)
    report.verdicts += len(rows)
    run.counts["programs"] += len(jobs)
    run.counts["verdicts"] += len(rows)


def add_samples(lake, samples_path: Path, model: str, source: str | None = None) -> list[str]:
    """Store evalplus-style samples (task_id + completion or solution) as origin=sample programs.

    `completion` continues the problem's prompt (HumanEval style); `solution` is a whole program. Returns the
    program ids (existing identical samples are reused, so re-adding a file is a no-op).
    """
    from factory.ingest.normalize import stable_hash
    from factory.ingest.readers import read_records
    from factory.lake import connect
    from factory.lake.commit import stage_run, utcnow

    con = connect(lake, read_only=True)
    problems: dict[str, list[tuple]] = defaultdict(list)
    where = "WHERE source = ?" if source else ""
    for pid, src, sid, starter in con.execute(
            f"SELECT problem_id, source, source_id, starter_code FROM silver.problems {where}",
            [source] if source else []).fetchall():
        problems[sid].append((pid, src, starter))
    existing = {r[0] for r in con.execute("SELECT program_id FROM silver.programs WHERE origin = 'sample'").fetchall()}
    from factory.sandbox import multipl_e
    harness = multipl_e.lake_rows(con, source)   # MultiPL-E problems: samples are built as MultiPL-E builds them
    con.close()
    rows, ids, counters = [], [], defaultdict(int)
    now = utcnow()
    for line, rec in read_records(Path(samples_path)):
        task = rec.get("task_id")
        if not isinstance(task, str):
            raise InputError("missing required field", file=str(samples_path), line=line, field="task_id")
        if not (matches := problems.get(task, [])):
            raise InputError(f"unknown task_id {task!r}" + (f" in source {source!r}" if source else ""),
                             file=str(samples_path), line=line, field="task_id")
        if len(matches) > 1 and harness:   # one MultiPL-E name per language: the record's language picks
            matches = multipl_e.by_language(matches, harness, rec)
        if len(matches) > 1:
            raise InputError(f"task_id {task!r} exists in sources {sorted(m[1] for m in matches)}; pass --source",
                             file=str(samples_path), line=line, field="task_id")
        problem_id, _, starter = matches[0]
        if problem_id in harness and multipl_e.sample_code(harness[problem_id], rec) is not None:
            code = multipl_e.sample_code(harness[problem_id], rec)
        elif isinstance(rec.get("solution"), str):
            code = rec["solution"]
        elif isinstance(rec.get("completion"), str):
            code = (starter or "") + rec["completion"]
        else:
            raise InputError("needs 'completion' or 'solution'", file=str(samples_path), line=line, field="completion")
        index = counters[problem_id]
        counters[problem_id] += 1
        pid = stable_hash(problem_id, "sample", model, index, code)
        ids.append(pid)
        if pid not in existing:
            rows.append({"program_id": pid, "problem_id": problem_id, "origin": "sample", "model": model,
                         "sample_index": index, "code": code, "raw_completion": rec.get("completion"),
                         "extraction_status": "given", "reported_pass_rate": None, "parent_program_id": None,
                         "metadata": json.dumps({"file": Path(samples_path).name, "line": line}), "created_at": now,
                         "language": harness[problem_id]["language"] if problem_id in harness else "python"})
            existing.add(pid)
    if rows:
        with stage_run("samples", {"file": str(samples_path), "model": model, "source": source}, lake=lake) as run:
            run.write("silver.programs", rows)
    return ids


def register(sub, add_lake) -> None:
    """Add `execute` to the `factory` parser."""
    p = sub.add_parser("execute", help="run programs against their tests in the sandbox -> silver.executions")
    add_lake(p)
    p.add_argument("--select", default="reference", help="reference | samples | mutants | synth | all")
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--model", help="only programs of this model; with --samples: the model name to record")
    p.add_argument("--samples", help="evalplus-style JSONL (task_id + completion|solution) to store and score")
    p.add_argument("--cpu-s", type=float, default=4.0,
                   help="CPU seconds per test (problems calibrated by `factory calibrate` use their own limit)")
    p.add_argument("--time-limits", choices=["calibrated", "fixed"], default="calibrated",
                   help="calibrated: a problem's limit from silver.time_limits where it has one (default); "
                        "fixed: --cpu-s for every problem")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--workers", type=int, help="sandbox workers (default: CPU count)")
    p.add_argument("--max-programs", type=int, help="stop after this many programs")
    p.add_argument("--batch-programs", type=int, default=500, help="at most this many programs per committed "
                                                                   "transaction")
    p.add_argument("--commit-every", type=float, default=COMMIT_EVERY_S, metavar="SECONDS",
                   help="commit results at least this often (batches sized by measured time): an interrupt "
                        "loses at most this much work (default 60)")
    p.add_argument("--no-expected", action="store_true", help="skip computing expected outputs of call tests")
    p.add_argument("--no-shipped-rules", action="store_true",
                   help="do not attach the judging rules the factory ships (checkers/<source>/ and rules stated by "
                        "the problems) to sources that lack them; rules already in silver.checkers still apply")
    p.add_argument("--no-cache", action="store_true",
                   help="run every program even if an identical one (same text, tests, limits, judge version) was "
                        "judged before (silver.verdict_cache); FACTORY_VERDICT_CACHE=0 does the same")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local process pool (default) or every node of a Ray cluster")
    p.add_argument("--ray-address", default="auto", help="with --engine ray: auto | ray://host:port | host:port")
    p.add_argument("--shard", help="i/n: only programs whose id hashes to i mod n (n drivers, one lake)")
    p.set_defaults(fn=cmd_execute)


def cmd_execute(args) -> None:
    from factory.lake import connect
    from factory.lake.query import parse_shard
    from factory.sandbox import Limits

    program_ids, selection = None, args.select
    if args.samples:
        if not args.model:
            raise FactoryError("--samples needs --model NAME")
        program_ids = add_samples(args.lake, args.samples, args.model, (args.source or [None])[0])
        selection = "samples"
    report = execute(args.lake, selection=selection, sources=args.source, model=args.model,
                     limits=Limits(cpu_s=args.cpu_s, memory_mb=args.memory_mb), workers=args.workers,
                     max_programs=args.max_programs, batch_programs=args.batch_programs,
                     fill_expected=not args.no_expected, program_ids=program_ids, engine=args.engine,
                     ray_address=args.ray_address, shard=parse_shard(args.shard), time_limits=args.time_limits,
                     cache=not args.no_cache, commit_every_s=args.commit_every, shipped_rules=not args.no_shipped_rules)
    print(f"programs executed: {report.programs}  verdicts: {report.verdicts}  statuses: {dict(report.status_counts)}")
    if report.cache is not None and report.cache.jobs:
        print(report.cache.summary())
    if report.retried_batches:
        print(f"ray: {report.lost_nodes} node(s) lost; {report.retried_batches} batch(es) re-run on the others")
    if report.expected_filled or report.expected_failed:
        print(f"expected outputs computed: {report.expected_filled} (reference failed on {report.expected_failed})")
    if selection in ("reference", "all") and set(report.status_counts) - {"pass"}:   # a program failed: why
        _warn_unhealthy(args.lake, args.source)
    if program_ids is not None:
        with connect(args.lake, read_only=True) as con:
            rows = con.execute("""SELECT count(*), count(*) FILTER (WHERE all_passed) FROM (
                SELECT program_id, bool_and(status = 'pass') AS all_passed FROM gold.latest_executions
                WHERE program_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY program_id)""", [program_ids]).fetchone()
        print(f"samples: {rows[0]} scored, {rows[1]} pass all tests (pass@1 = {rows[1] / max(rows[0], 1):.3f})")


def _warn_unhealthy(lake, sources: list[str] | None) -> None:
    """Environment health check after running references: sources whose references fail here, and why."""
    import duckdb

    from factory.release.funnel import unhealthy_sources, warn_unhealthy
    from factory.lake import connect

    with connect(lake, read_only=True) as con:
        try:
            rows = [r for r in unhealthy_sources(con) if not sources or r["source"] in sources]
        except duckdb.CatalogException:  # a lake made before gold.source_health existed: `factory transform` adds it
            return
    warn_unhealthy(rows)
