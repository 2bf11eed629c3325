"""Queries behind the report: every figure reads the lake (optionally at a snapshot) through these."""
from __future__ import annotations

import json
from collections import Counter, defaultdict

import duckdb

from factory.lake.catalog import default_catalog
from factory.lake import existing_columns

LATEST_VERDICTS = """
    SELECT program_id, test_id, status FROM silver.executions WHERE status <> 'infra_error'
    QUALIFY row_number() OVER (PARTITION BY program_id, test_id ORDER BY executed_at DESC, limits_hash) = 1
"""


def source_counts(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """(source, problems, tests, {kind: tests}) per source."""
    rows = con.execute("""
        SELECT p.source, count(DISTINCT p.problem_id), count(t.test_id),
               coalesce(list(t.kind) FILTER (WHERE t.kind IS NOT NULL), [])
        FROM silver.problems p LEFT JOIN silver.tests t USING (problem_id)
        GROUP BY p.source ORDER BY p.source""").fetchall()
    return [(source, problems, tests, dict(Counter(kinds))) for source, problems, tests, kinds in rows]


def program_pass_rates(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """(source, group, pass_rate) per executed program; group = model, else origin. Rate = passed / executed tests."""
    return con.execute(f"""
        WITH v AS ({LATEST_VERDICTS})
        SELECT pb.source, coalesce(pr.model, pr.origin) AS grp,
               count(*) FILTER (WHERE v.status = 'pass') / count(*) AS rate
        FROM v JOIN silver.programs pr USING (program_id) JOIN silver.problems pb USING (problem_id)
        GROUP BY pb.source, grp, v.program_id ORDER BY 1, 2, 3""").fetchall()


def test_validity(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """(source, tests run by references, tests every reference passed) per source."""
    return con.execute(f"""
        WITH v AS ({LATEST_VERDICTS}), per_test AS (
            SELECT v.test_id, bool_and(v.status = 'pass') AS ok
            FROM v JOIN silver.programs pr USING (program_id)
            WHERE pr.origin = 'reference' GROUP BY v.test_id)
        SELECT pb.source, count(*), count(*) FILTER (WHERE ok)
        FROM per_test JOIN silver.tests t USING (test_id) JOIN silver.problems pb USING (problem_id)
        GROUP BY pb.source ORDER BY 1""").fetchall()


def difficulty(con: duckdb.DuckDBPyConnection) -> list[tuple] | None:
    """(source, pass_rate, potential) from gold.difficulty, or None when the lake has no such table."""
    cols = existing_columns(con).get("gold.difficulty", {})
    if not {"pass_rate", "potential", "source"} <= cols.keys():
        return None
    return con.execute("SELECT source, pass_rate, potential FROM gold.difficulty "
                       "WHERE pass_rate IS NOT NULL ORDER BY source, problem_id").fetchall()


def funnel(con: duckdb.DuckDBPyConnection) -> tuple[list[tuple], dict[str, dict[str, int]]]:
    """Net rows per table from ops.runs row_counts in pipeline (catalog) order as (table, last writing stage,
    rows), empty tables left out, and {stage: {status: runs}}."""
    catalog = default_catalog()
    net: dict[str, int] = {}
    producer: dict[str, str] = {}
    runs: dict[str, Counter] = defaultdict(Counter)
    for stage, status, counts in con.execute(
            "SELECT stage, status, row_counts::VARCHAR FROM ops.runs ORDER BY started_at, run_id").fetchall():
        runs[stage][status] += 1
        if status != "success":
            continue
        for table, c in json.loads(counts or "{}").items():
            # a materialized transform reports its size after this run
            net[table] = c["rows"] if "rows" in c else net.get(table, 0) + c.get("inserted", 0) - c.get("deleted", 0)
            producer[table] = stage
    order = {name: i for i, name in enumerate(catalog.tables)}
    layers = {"bronze": 0, "silver": 1, "gold": 2, "ops": 3}
    tables = sorted(net, key=lambda t: (layers.get(t.split(".")[0], 9), order.get(t, 999), t))
    return [(t, producer[t], net[t]) for t in tables if not t.startswith("ops.") and net[t]], runs


def train_curves(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    """{stage: [(step, metric, value), ...]} of the latest successful train-rm, train-rl and eval-bon run."""
    rows = con.execute("""
        WITH latest AS (SELECT stage, arg_max(run_id, started_at) AS run_id FROM ops.runs
                        WHERE stage IN ('train-rm', 'train-rl', 'eval-bon') AND status = 'success' GROUP BY stage)
        SELECT l.stage, m.step, m.metric, m.value FROM latest l JOIN ops.train_metrics m USING (run_id)
        WHERE m.value IS NOT NULL ORDER BY l.stage, m.step, m.metric""").fetchall()
    out: dict[str, list[tuple]] = {}
    for stage, step, metric, value in rows:
        out.setdefault(stage, []).append((step, metric, value))
    return out


def curation(con: duckdb.DuckDBPyConnection) -> list[dict] | None:
    """The per-source curation funnel (factory.release.funnel), or None for a lake made before the exclusion views."""
    from factory.release.funnel import curation_funnel
    try:
        return curation_funnel(con)
    except duckdb.Error:
        return None


def recipes(con: duckdb.DuckDBPyConnection) -> dict | None:
    """Per recipe (latest `factory recipe run`): candidates, kept ids, removals per rule, and the kept problems'
    pass rate / potential under the recipe's difficulty model; None for a lake made before recipes."""
    if "gold.recipe_decisions" not in existing_columns(con):
        return None
    out: dict = {}
    for recipe, pid, kept in con.execute(
            "SELECT recipe, problem_id, kept FROM gold.recipe_decisions ORDER BY recipe, problem_id").fetchall():
        r = out.setdefault(recipe, {"candidates": 0, "kept": set(), "rules": [], "pass_rate": [], "potential": []})
        r["candidates"] += 1
        if kept:
            r["kept"].add(pid)
    for recipe, rule, stage, removed in con.execute(
            "SELECT recipe, rule, stage, removed FROM gold.recipe_rules ORDER BY recipe, position").fetchall():
        if recipe in out:
            out[recipe]["rules"].append((rule if stage is None else f"{rule} @{stage}", removed))
    for recipe, p, pot in con.execute(
            "SELECT recipe, pass_rate, potential FROM gold.recipe_problems WHERE pass_rate IS NOT NULL").fetchall():
        if recipe in out:
            out[recipe]["pass_rate"].append(p)
            out[recipe]["potential"].append(pot)
    return out


def headline(con: duckdb.DuckDBPyConnection) -> dict:
    """The numbers the report opens with: per source - problems, tests, reference / sample pass rates (mean
    pass rate of executed programs, references passing every test), problems in RL training (gold.rl_problems)
    and contaminated problems removed (gold.training_exclusions, reason contaminated, applied); plus the releases
    cut from the lake (ops.releases). Absent views count as None (not curated yet)."""
    have = existing_columns(con)
    # rows of a source without splits (KodCode) go to the exports' train files: counted as train here too
    rl = ("SELECT source, count(*) AS n, count(*) FILTER (WHERE coalesce(split, 'train') = 'train') AS n_train "
          "FROM gold.rl_problems GROUP BY source" if "gold.rl_problems" in have
          else "SELECT NULL::VARCHAR AS source, NULL::BIGINT AS n, NULL::BIGINT AS n_train WHERE false")
    removed = ("SELECT source, count(DISTINCT problem_id) AS n FROM gold.training_exclusions "
               "WHERE reason = 'contaminated' AND applied GROUP BY source" if "gold.training_exclusions" in have
               else "SELECT NULL::VARCHAR AS source, NULL::BIGINT AS n WHERE false")
    rows = con.execute(f"""
        WITH v AS ({LATEST_VERDICTS}),
        per_program AS (
            SELECT v.program_id, any_value(pr.origin) AS origin, any_value(pr.problem_id) AS problem_id,
                   avg((v.status = 'pass')::INT) AS rate, bool_and(v.status = 'pass') AS all_pass
            FROM v JOIN silver.programs pr USING (program_id) GROUP BY v.program_id),
        rates AS (
            SELECT pb.source,
                   avg(rate) FILTER (WHERE origin = 'reference') AS ref_rate,
                   count(*) FILTER (WHERE origin = 'reference') AS refs,
                   count(*) FILTER (WHERE origin = 'reference' AND all_pass) AS refs_all_pass,
                   avg(rate) FILTER (WHERE origin = 'sample') AS sample_rate,
                   count(*) FILTER (WHERE origin = 'sample') AS samples
            FROM per_program JOIN silver.problems pb USING (problem_id) GROUP BY pb.source),
        counts AS (
            SELECT p.source, count(DISTINCT p.problem_id) AS problems, count(t.test_id) AS tests
            FROM silver.problems p LEFT JOIN silver.tests t USING (problem_id) GROUP BY p.source),
        rl AS ({rl}), removed AS ({removed})
        SELECT c.source, c.problems, c.tests, r.ref_rate, coalesce(r.refs, 0), coalesce(r.refs_all_pass, 0),
               r.sample_rate, coalesce(r.samples, 0), rl.n, removed.n, rl.n_train
        FROM counts c LEFT JOIN rates r USING (source) LEFT JOIN rl USING (source)
        LEFT JOIN removed USING (source) ORDER BY c.source""").fetchall()
    cols = ("source", "problems", "tests", "reference_pass_rate", "references", "references_all_pass",
            "sample_pass_rate", "samples", "rl_problems", "contamination_removed", "rl_train")
    sources = [dict(zip(cols, r)) for r in rows]
    counted = [k for k, view in (("rl_problems", "gold.rl_problems"), ("rl_train", "gold.rl_problems"),
                                 ("contamination_removed", "gold.training_exclusions")) if view in have]
    for s in sources:
        s.update({k: s[k] or 0 for k in counted})
    releases = [r[0] for r in con.execute("SELECT name FROM ops.releases ORDER BY created_at DESC, name").fetchall()]
    return {"sources": sources, "releases": releases}


def latest_summaries(con: duckdb.DuckDBPyConnection) -> dict[str, dict]:
    """{stage: the summary JSON of its latest successful run} for train-rm and eval-bon (held-out pair count and
    accuracies; best-of-N rows with the problems each row covers)."""
    out = {}
    for stage, message in con.execute("""
            SELECT stage, arg_max(message, started_at) FROM ops.runs
            WHERE stage IN ('train-rm', 'eval-bon') AND status = 'success' GROUP BY stage""").fetchall():
        try:
            parsed = json.loads(message or "")
        except ValueError:
            continue
        if isinstance(parsed, dict):
            out[stage] = parsed
    return out


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion (95 % by default): honest on tiny n, where p +- z*sqrt(p(1-p)/n)
    collapses at p = 0 or 1."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
