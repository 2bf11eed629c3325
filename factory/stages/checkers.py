"""`factory checkers` (how each problem's outputs are judged -> silver.checkers) and `factory calibrate`
(per-problem CPU limits from the reference's measured CPU time -> silver.time_limits).

Both replace only the rows they own for the selected problems, so re-running them with the same inputs and
settings changes nothing (the run is skipped, no snapshot).
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict

from factory.errors import InputError
from factory.judging.attach import _source_clause, run_checkers  # noqa: F401  (run_checkers re-exported)


def calibrated_limit(reference_cpu_s: float, factor: float, floor_s: float, cap_s: float) -> float:
    """EvalPlus's rule on CPU time: max(floor, factor x reference), at most cap."""
    return round(min(cap_s, max(floor_s, factor * reference_cpu_s)), 3)


def run_calibrate(lake=None, sources: list[str] | None = None, factor: float = 4.0, floor_s: float = 1.0,
                  cap_s: float = 20.0, repeats: int = 3, workers: int | None = None, memory_mb: int = 1024,
                  problem_ids: list[str] | None = None) -> dict:
    """Measure each reference's CPU time per test (``repeats`` runs under a ``cap_s`` limit, the fastest run of
    each test) and store the problem's limit ``max(floor_s, factor x slowest test)``. A reference that does not
    complete a test (time-out, crash) leaves its problem uncalibrated (the run's ``--cpu-s`` applies)."""
    from factory.lake import connect
    from factory.lake.commit import stage_run, utcnow

    from factory.judging.jobs import program_job
    from factory.judging.rules import NO_OVERRIDE, load_judging
    from factory.progress import Progress
    from factory.sandbox import Limits, SandboxPool

    if not (factor > 0 and floor_s > 0 and cap_s >= floor_s and repeats >= 1):
        raise InputError("calibrate needs factor > 0, floor_s > 0, cap_s >= floor_s and repeats >= 1")
    where, params = _source_clause(sources)
    if problem_ids is not None:
        where += " AND list_contains(?, pb.problem_id)"
        params.append(list(problem_ids))
    with connect(lake, read_only=True) as con:
        judging = load_judging(con, time_limits=False)
        problems = con.execute(f"""
            SELECT pb.problem_id, pb.entry_point, pb.test_preamble,
                   (SELECT p.program_id FROM silver.programs p WHERE p.problem_id = pb.problem_id
                    AND p.origin = 'reference' ORDER BY p.program_id LIMIT 1) AS program_id
            FROM silver.problems pb WHERE {where} ORDER BY pb.problem_id""", params).to_arrow_table().to_pylist()
        programs = {r[0]: r[1] for r in con.execute(
            "SELECT program_id, code FROM silver.programs WHERE list_contains(?, program_id)",
            [[p["program_id"] for p in problems if p["program_id"]]]).fetchall()}
        tests = defaultdict(list)
        for t in con.execute(f"""
                SELECT t.problem_id, t.test_id, t.kind, t.code, t.input, t.expected, t.comparison, t.atol
                FROM silver.tests t JOIN silver.problems pb USING (problem_id)
                WHERE {where} AND NOT (t.kind IN ('call', 'stdio') AND t.expected IS NULL)
                ORDER BY t.problem_id, t.ordinal""", params).to_arrow_table().to_pylist():
            tests[t["problem_id"]].append(t)
    jobs = [program_job(dict(p, code=programs[p["program_id"]]), tests[p["problem_id"]],
                        judging.get(p["problem_id"], NO_OVERRIDE))
            for p in problems if p["program_id"] and tests[p["problem_id"]]]
    best: dict[tuple[str, str], float] = {}
    bad: dict[str, str] = {}
    by_program = {j.program_id: j for j in jobs}
    with Progress(len(jobs) * repeats, "calibrate", "program") as progress, \
            SandboxPool(Limits(cpu_s=cap_s, memory_mb=memory_mb), workers) as pool:
        for _ in range(repeats):
            seen = set()
            for v in pool.run([j for j in jobs if j.program_id not in bad]):   # a failed reference: once is enough
                if v.test_id is None:
                    continue
                key = (v.program_id, v.test_id.split("::", 1)[0])
                if v.status in ("pass", "fail"):
                    best[key] = min(best.get(key, float("inf")), v.cpu_ms)
                else:
                    bad.setdefault(v.program_id, f"{v.status} on {key[1]}")
                if v.program_id not in seen:
                    seen.add(v.program_id)
                    progress.update()
    rows, now = [], utcnow()
    per_problem: dict[str, float] = defaultdict(float)
    for (program_id, _), ms in best.items():
        per_problem[program_id] = max(per_problem[program_id], ms)
    for p in problems:
        pid, prog = p["problem_id"], p["program_id"]
        row = {"problem_id": pid, "reference_program_id": prog, "reference_cpu_ms": None, "repeats": repeats,
               "factor": factor, "floor_s": floor_s, "cap_s": cap_s, "cpu_s": None, "detail": None}
        if prog is None or prog not in by_program:
            row.update(status="no_reference", detail="no reference program" if prog is None else "no runnable tests")
        elif prog in bad:
            row.update(status="reference_failed", detail=bad[prog])
        else:
            ms = per_problem[prog]
            row.update(status="calibrated", reference_cpu_ms=round(ms, 3),
                       cpu_s=calibrated_limit(ms / 1000.0, factor, floor_s, cap_s))
        rows.append(row)
    config = {"sources": sources, "factor": factor, "floor_s": floor_s, "cap_s": cap_s, "repeats": repeats,
              "problems": len(rows)}
    with stage_run("calibrate", config, lake=lake) as run:
        ids = [r["problem_id"] for r in rows]
        run.delete("silver.time_limits", "list_contains(?, problem_id)", [ids])
        run.write("silver.time_limits", [dict(r, created_at=now) for r in rows])
        counts = Counter(r["status"] for r in rows)
        limits = sorted(r["cpu_s"] for r in rows if r["cpu_s"] is not None)
        report = {"problems": len(rows), **counts, "median_cpu_s": limits[len(limits) // 2] if limits else None,
                  "max_cpu_s": limits[-1] if limits else None, "at_floor": sum(1 for x in limits if x <= floor_s)}
        run.summary = json.dumps(report)
    report["run_id"] = run.run_id
    return report


def register(sub, add_lake) -> None:
    p = sub.add_parser("checkers", help="judging rules per problem (tolerance, any-case answers, checker programs) "
                                        "-> silver.checkers")
    add_lake(p)
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--dir", help="folder of checker programs, <source_id>.py ('/' written '__'), each defining "
                                 "check(input, expected, actual)")
    p.add_argument("--no-detect", action="store_true", help="do not detect rules from problem statements")
    p.set_defaults(fn=_cmd_checkers)

    p = sub.add_parser("calibrate", help="per-problem CPU limits from the reference's CPU time -> silver.time_limits")
    add_lake(p)
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--factor", type=float, default=4.0, help="limit = max(floor, factor x reference CPU time)")
    p.add_argument("--floor-s", type=float, default=1.0, help="lowest limit, CPU seconds")
    p.add_argument("--cap-s", type=float, default=20.0, help="highest limit (and the measuring runs' limit)")
    p.add_argument("--repeats", type=int, default=3, help="runs per reference; each test keeps its fastest")
    p.add_argument("--workers", type=int, help="sandbox workers (default: CPU count)")
    p.set_defaults(fn=_cmd_calibrate)


def _cmd_checkers(args) -> None:
    report = run_checkers(args.lake, args.source, args.dir, detect=not args.no_detect)
    rules = ", ".join(f"{k}: {v}" for k, v in sorted(report["by_rule"].items())) or "none"
    print(f"problems: {report['problems']}  rules: {report['rules']} ({rules})  changed: {report['changed']}")


def _cmd_calibrate(args) -> None:
    report = run_calibrate(args.lake, args.source, args.factor, args.floor_s, args.cap_s, args.repeats, args.workers)
    print(f"problems: {report['problems']}  calibrated: {report.get('calibrated', 0)}  "
          f"reference failed: {report.get('reference_failed', 0)}  no reference: {report.get('no_reference', 0)}  "
          f"limits: median {report['median_cpu_s']} s, max {report['max_cpu_s']} s, at floor {report['at_floor']}")
