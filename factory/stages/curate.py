"""`factory curate`: materialize validation, pass rates, difficulty, filters and pairs in one transaction."""
from __future__ import annotations

import json

from factory.lake.templating import DEFAULTS


class CurateResult(dict):
    """Row counts per materialized name, plus the per-source funnel and the unhealthy sources."""

    funnel: list[dict]
    unhealthy: list[dict]
    not_executed: list[dict]   # sources with references never executed: their train problems stay out, unvalidated


NOT_EXECUTED_SQL = """
    SELECT pb.source, count(*) AS references_total,
           count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM silver.executions e
                                             WHERE e.program_id = p.program_id)) AS never_executed
    FROM silver.programs p JOIN silver.problems pb USING (problem_id)
    WHERE p.origin = 'reference' GROUP BY pb.source HAVING never_executed > 0 ORDER BY pb.source"""


def not_executed(con) -> list[dict]:
    """Sources whose reference programs were never executed (`factory execute` not run on them yet)."""
    cols = ("source", "references", "never_executed")
    return [dict(zip(cols, r)) for r in con.execute(NOT_EXECUTED_SQL).fetchall()]


def warn_not_executed(rows: list[dict]) -> None:
    import sys

    for r in rows:
        print(f"curate: {r['source']}: {r['never_executed']} of {r['references']} references never executed - "
              f"their train problems are held out of gold.rl_problems as unvalidated; run `factory execute "
              f"--select reference --source {r['source']}` first, then curate again", file=sys.stderr)


def resolve_auto(con, overrides: dict) -> dict:
    """difficulty_model='auto' picks the model with the most sampled programs (else 'mutant')."""
    params = {**DEFAULTS, **overrides}
    if params["difficulty_model"] == "auto":
        row = con.execute("SELECT model FROM silver.programs WHERE origin = 'sample' AND model IS NOT NULL "
                          "GROUP BY model ORDER BY count(*) DESC, model LIMIT 1").fetchone()
        params["difficulty_model"] = row[0] if row else "mutant"
    return params


def curate(lake=None, overrides: dict | None = None, allow_unhealthy: bool = False) -> CurateResult:
    """Re-materialize every curate-produced table/view; returns row counts (also stored in ops.runs) with the
    curation funnel (what each rule removed, per source) and the sources whose references fail here.
    Refuses to run when the lake's latest `factory health` check failed, unless ``allow_unhealthy``."""
    from factory.recipes.funnel import curation_funnel, require_healthy, unhealthy_sources
    from factory.lake.commit import run_stage

    overrides = dict(overrides or {})

    def body(run) -> CurateResult:
        check = require_healthy(run.con, allow_unhealthy)
        if check is not None and not check["healthy"]:
            run.config["allow_unhealthy"] = check["run_id"]
        params = resolve_auto(run.con, overrides)
        run.config["params"] = params
        names = [s.name for s in run.catalog.transforms() if s.producer == "curate" or s.producer == "transform"]
        run.materialize(names, params)
        counts = CurateResult({name: c.get("rows", 0) for name, c in run.row_counts.items()})
        counts.funnel = curation_funnel(run.con)
        counts.unhealthy = unhealthy_sources(run.con)
        counts.not_executed = not_executed(run.con)
        run.summary = ", ".join(f"{k}={v}" for k, v in counts.items()) + "; funnel: " + json.dumps(
            counts.funnel, default=int)
        return counts

    # CREATE OR REPLACE of the gold tables: a concurrent curate on a PostgreSQL catalog makes DuckLake refuse one
    # commit, which then re-materializes on the new state (run_stage)
    return run_stage("curate", {"overrides": overrides}, body, lake=lake)


def register(sub, add_lake) -> None:
    """Add `curate` to the `factory` parser."""
    p = sub.add_parser("curate", help="test validation, pass rates, difficulty, filters, pairs (SQL transforms)")
    add_lake(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter (see factory/lake/templating.py DEFAULTS); VALUE is JSON or text")
    p.add_argument("--config", help="YAML file of parameter overrides")
    p.add_argument("--allow-unhealthy", action="store_true",
                   help="curate even though the latest `factory health` check failed")
    p.set_defaults(fn=cmd_curate)


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def cmd_curate(args) -> None:
    from factory.errors import FactoryError

    overrides = {}
    if args.config:
        import yaml
        overrides.update(yaml.safe_load(open(args.config)) or {})
    for item in args.set:
        if "=" not in item:
            raise FactoryError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        overrides[key.strip()] = _parse_value(value.strip())
    from factory.recipes.funnel import print_funnel, warn_unhealthy

    counts = curate(args.lake, overrides, allow_unhealthy=args.allow_unhealthy)
    for name, n in counts.items():
        print(f"{name:<30} {n}")
    print()
    print_funnel(counts.funnel)
    warn_unhealthy(counts.unhealthy)
    warn_not_executed(counts.not_executed)
