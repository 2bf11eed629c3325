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


RL_PROBLEMS = "gold.rl_problems"
PARTITION_MARK = "WHERE true  -- rl_problems partition"
PARTITION_BYTES = 256 << 20   # test text packed per partition (the aggregate holds ~4.5x its partition's text)
TEXT_PER_FILE_BYTE = 3        # test text per byte of silver.tests' zstd Parquet files (MB inputs: digits, ~2.4x)


def rl_partitions(con) -> int:
    """How many hash partitions gold.rl_problems is packed in: 1 (one statement, as any view) unless the lake's
    tests pass PARTITION_BYTES of text (estimated from silver.tests' file sizes: no test text is read)."""
    from factory.lake.connection import LAKE_ALIAS

    try:
        size = con.execute(f"SELECT coalesce(sum(data_file_size_bytes), 0) FROM ducklake_list_files('{LAKE_ALIAS}', "
                           f"'tests', schema => 'silver')").fetchone()[0]
    except Exception:   # noqa: BLE001  (a catalog without the function: one statement)
        return 1
    return max(1, -(-int(size) * TEXT_PER_FILE_BYTE // PARTITION_BYTES))


def materialize_rl_problems(run, params: dict, parts: int) -> None:
    """gold.rl_problems as ``parts`` statements: the first creates the table from hash partition 0 of the
    problems, each next one INSERTs its partition (sql/gold/rl_problems.sql marks where the filter goes: before
    the aggregate, so each packs only its partition's tests). The same rows as one statement."""
    from factory.errors import FactoryError
    from factory.lake.commit import PROJECT_ROOT, describe
    from factory.lake.connection import LAKE_ALIAS
    from factory.lake.templating import render_sql, transform_params

    spec = run.catalog[RL_PROBLEMS]
    con = run.con
    con.execute((PROJECT_ROOT / "sql" / "macros.sql").read_text())
    body = render_sql(spec.sql_text(), transform_params(params, run_id=run.run_id), spec.sql).strip().rstrip(";")
    if body.count(PARTITION_MARK) != 1:
        raise FactoryError(f"{spec.sql} lacks the partition mark {PARTITION_MARK!r} curate packs a large lake by")
    part = lambda k: body.replace(PARTITION_MARK, f"WHERE hash(problem_id) % {parts} = {k}  -- partition")
    target = f"{LAKE_ALIAS}.{RL_PROBLEMS}"
    if con.execute("SELECT count(*) FROM duckdb_views() WHERE database_name = ? AND schema_name || '.' || view_name "
                   "= ?", [LAKE_ALIAS, RL_PROBLEMS]).fetchone()[0]:
        con.execute(f"DROP VIEW {target}")   # a lake from before rl_problems became a table
    con.execute(f"CREATE OR REPLACE TABLE {target} AS {part(0)}")
    for k in range(1, parts):
        con.execute(f"INSERT INTO {target} {part(k)}")
    run._count(RL_PROBLEMS, "rows", con.execute(f"SELECT count(*) FROM {target}").fetchone()[0])
    actual = [r[0] for r in con.execute(f"DESCRIBE {target}").fetchall()]
    if actual != spec.column_names:
        raise FactoryError(f"{spec.sql} produces columns {actual}, data_catalog.yaml declares {spec.column_names} "
                           f"for {RL_PROBLEMS}")
    describe(con, [spec])


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
        parts = rl_partitions(run.con) if RL_PROBLEMS in names else 1
        if parts > 1:   # the packed tests in parts: memory holds one partition's tests, not the lake's
            i = names.index(RL_PROBLEMS)
            run.materialize(names[:i], params)
            materialize_rl_problems(run, params, parts)
            run.materialize(names[i + 1:], params)
        else:
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
