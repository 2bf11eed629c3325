"""Curation funnel: per source, how many problems each rule keeps out of the training views and how many reach them.

Read from the lake's gold views (gold.training_exclusions, gold.rl_problems, gold.source_health), so the
curate output, the release card and an ad-hoc query all tell the same story. A problem can have several
reasons; each reason column counts every problem it applies to, `excluded` counts each problem once.

Environment health: the sources whose references fail here (gold.source_health) and the gate on the latest
`factory health` check (ops.health_checks) that `factory curate` applies.
"""
from __future__ import annotations

import json
import sys

from factory.errors import FactoryError

REASONS = ("contaminated", "duplicate", "other_task", "environment", "unvalidated", "validation", "forgeable")

_FUNNEL_SQL = """
WITH problems AS (
    SELECT source, count(*) AS problems FROM silver.problems GROUP BY source
), reported AS (
    SELECT source, count(DISTINCT problem_id) AS n FROM gold.training_exclusions
    WHERE NOT applied AND problem_id NOT IN (SELECT problem_id FROM gold.training_exclusions WHERE applied)
    GROUP BY source
), excluded AS (
    SELECT source, count(DISTINCT problem_id) AS n, {reason_counts} FROM gold.training_exclusions WHERE applied
    GROUP BY source
), kept AS (
    SELECT source, count(*) FILTER (WHERE split = 'test') AS test, count(*) FILTER (WHERE split IS DISTINCT FROM 'test')
           AS train FROM gold.rl_problems GROUP BY source
)
SELECT p.source, p.problems,
       {reason_columns},
       coalesce(e.n, 0) AS excluded,
       p.problems - coalesce(e.n, 0) - coalesce(k.train, 0) - coalesce(k.test, 0) AS no_usable_tests,
       coalesce(k.train, 0) AS train, coalesce(k.test, 0) AS test,
       coalesce(r.n, 0) AS kept_by_opt_in
FROM problems AS p
LEFT JOIN excluded AS e USING (source)
LEFT JOIN kept AS k USING (source)
LEFT JOIN reported AS r USING (source)
ORDER BY p.source
"""

_SHOWN = ("problems", *REASONS, "no_usable_tests", "train", "test")   # the counts a funnel table shows


def curation_funnel(con) -> list[dict]:
    """One dict per source: source, problems, each reason, excluded, no_usable_tests, train, test, kept_by_opt_in."""
    counts = ", ".join(f"count(DISTINCT problem_id) FILTER (reason = '{r}') AS {r}" for r in REASONS)
    columns = ", ".join(f"coalesce(e.{r}, 0) AS {r}" for r in REASONS)
    return con.execute(_FUNNEL_SQL.format(reason_counts=counts, reason_columns=columns)).to_arrow_table().to_pylist()


_EXAMPLES_SQL = """
    SELECT x.source, x.reason, count(DISTINCT x.problem_id) AS n,
           arg_min(p.source_id || ': ' || coalesce(x.detail, ''), p.source_id) AS example
    FROM gold.training_exclusions AS x JOIN silver.problems AS p USING (problem_id)
    WHERE x.applied GROUP BY ALL ORDER BY x.source, n DESC, x.reason"""

# clean problems that reach no RL row, by cause (gold.rl_tests holds the usable tests of clean problems)
_NO_ROW_SQL = """
    WITH tests AS (
        SELECT problem_id, count(*) AS n, count(*) FILTER (WHERE coalesce(visibility, 'unknown') = 'hidden') AS hidden,
               count(*) FILTER (WHERE kind IN ('call', 'stdio') AND expected IS NULL) AS no_expected
        FROM silver.tests GROUP BY problem_id
    ), usable AS (
        SELECT problem_id, count(*) AS n, count(*) FILTER (WHERE reward) AS reward FROM gold.rl_tests GROUP BY 1
    ), missing AS (
        SELECT c.problem_id, c.source, c.split, p.source_id,
               CASE WHEN t.n IS NULL THEN 'no tests in the dataset'
                    WHEN u.n IS NULL AND t.no_expected = t.n
                        THEN 'no expected outputs (the reference never produced them)'
                    WHEN u.n IS NULL THEN 'no usable test (none validated by the reference)'
                    WHEN t.hidden = 0 THEN 'public-only: every test is a statement example, no hidden test generated'
                    ELSE 'no usable hidden test (the hidden ones failed validation)' END AS why,
               coalesce(t.n, 0) AS tests, coalesce(u.n, 0) AS usable
        FROM gold.clean_problems AS c
        JOIN silver.problems AS p USING (problem_id)
        LEFT JOIN tests AS t USING (problem_id)
        LEFT JOIN usable AS u USING (problem_id)
        WHERE c.problem_id NOT IN (SELECT problem_id FROM gold.rl_problems)
    )
    SELECT source, why, count(*) AS n,
           arg_min(source_id || ' (' || tests || ' tests, ' || usable || ' usable)', source_id) AS example
    FROM missing GROUP BY ALL ORDER BY source, n DESC, why"""


def removal_examples(con) -> dict[str, list[dict]]:
    """{source: [{reason, n, example}]}: every applied exclusion reason (gold.training_exclusions) with its count
    and one example (the problem's source id and the reason's detail), then each cause of the clean problems that
    reach no RL row (``reason`` 'no usable tests: <cause>')."""
    out: dict[str, list[dict]] = {}
    for source, reason, n, example in con.execute(_EXAMPLES_SQL).fetchall():
        out.setdefault(source, []).append({"reason": reason, "n": int(n), "example": example})
    for source, why, n, example in con.execute(_NO_ROW_SQL).fetchall():
        out.setdefault(source, []).append({"reason": f"no usable tests: {why}", "n": int(n), "example": example})
    return out


def funnel_detail_markdown(rows: list[dict], examples: dict[str, list[dict]]) -> list[str]:
    """Per source: problems in, each removal reason with its count and one example, rows out (train / test)."""
    lines = ["| source | problems | removed by | count | example | train | test |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        reasons = examples.get(r["source"]) or [{"reason": "-", "n": 0, "example": ""}]
        for i, x in enumerate(reasons):
            example = x["example"].replace("|", "\\|").replace("\n", " ")
            example = example if len(example) <= 160 else example[:157] + "..."
            head = [r["source"], f"{r['problems']:,}"] if i == 0 else ["", ""]
            tail = [f"{r['train']:,}", f"{r['test']:,}"] if i == 0 else ["", ""]
            lines.append("| " + " | ".join(head + [x["reason"], f"{x['n']:,}" if x["n"] else "",
                                                    example] + tail) + " |")
    return lines


def unhealthy_sources(con) -> list[dict]:
    """Sources whose references pass below the configured rate, with the missing modules that explain it."""
    return con.execute("SELECT source, references_run, references_passed, reference_pass_rate, environment_failures, "
                       "missing_modules FROM gold.source_health WHERE NOT healthy ORDER BY source"
                       ).to_arrow_table().to_pylist()


_CAUSES_SQL = """
    WITH failing AS (   -- per failing reference program: its first failing verdict's cause
        SELECT pb.source, pr.program_id,
               arg_min(CASE WHEN e.error_type IN ('ModuleNotFoundError', 'ImportError')
                            THEN 'missing module ' || coalesce(regexp_extract(e.error_message,
                                 'No module named ''([^''.]+)', 1), e.error_type)
                            WHEN e.status = 'fail' AND e.error_type IS NULL THEN 'wrong answer'
                            WHEN e.error_type IS NOT NULL THEN e.status || ' (' || e.error_type || ')'
                            ELSE e.status END, e.test_id) AS cause
        FROM silver.programs AS pr
        JOIN silver.problems AS pb USING (problem_id)
        JOIN gold.latest_executions AS e USING (program_id)
        WHERE pr.origin = 'reference' AND e.status <> 'pass'
        GROUP BY ALL
    )
    SELECT source, cause, count(*) AS n FROM failing GROUP BY ALL ORDER BY source, n DESC, cause"""


def failure_causes(con) -> dict[str, list[tuple[str, int]]]:
    """{source: [(cause, failing reference programs)]}: what makes references fail here (a missing module, a
    wrong answer, a timeout, a crash with its error type), counted by each program's first failing test."""
    out: dict[str, list[tuple[str, int]]] = {}
    for source, cause, n in con.execute(_CAUSES_SQL).fetchall():
        out.setdefault(source, []).append((cause, int(n)))
    return out


def unhealthy_with_causes(con) -> list[dict]:
    """:func:`unhealthy_sources`, each with ``causes`` ([(cause, n)]) and ``min_rate`` (the threshold)."""
    rows = unhealthy_sources(con)
    if rows:
        causes = failure_causes(con)
        for r in rows:
            r["causes"] = causes.get(r["source"], [])
    return rows


def health_lines(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        if r.get("causes"):
            why = "failing: " + ", ".join(f"{c} {n}" for c, n in r["causes"])
        elif r["environment_failures"]:
            why = f"{r['environment_failures']} fail on missing modules: {r['missing_modules']}"
        else:
            why = "no missing module: the failures are the references' or the tests'"
        out.append(f"{r['source']}: {r['references_passed']}/{r['references_run']} reference programs pass "
                   f"({r['reference_pass_rate']:.1%}); {why}")
    return out


def warn_unhealthy(rows: list[dict], file=None) -> None:
    """Warnings (stderr) for unhealthy sources: their reference pass rate and the missing modules, and what
    curation does with the problems whose reference misses a module."""
    file = file or sys.stderr
    for line in health_lines(rows):
        print(f"warning: unhealthy source {line}", file=file)
    if any(r["environment_failures"] for r in rows):
        print("warning: problems whose reference misses a module are marked (gold.environment_failures, reason "
              "'environment'), not counted as hard; install the modules and re-execute to score them", file=file)


def funnel_markdown(rows: list[dict]) -> list[str]:
    """Markdown table (release cards, reports)."""
    head = ["source", "problems", *REASONS, "no usable tests", "train", "test"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in (r["source"], *(r[x] for x in _SHOWN))) + " |")
    return lines


def print_funnel(rows: list[dict], file=None) -> None:
    """A rich table on a terminal, aligned plain text otherwise."""
    file = file or sys.stdout
    head = ["source", "problems", *REASONS, "no tests", "train", "test"]
    body = [[str(r["source"]), *(str(r[c]) for c in _SHOWN)] for r in rows]
    total = ["total", *(str(sum(r[c] for r in rows)) for c in _SHOWN)]
    widths = [max(len(x[i]) for x in [head, *body, total]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    print("problems removed from the training views per rule (a problem can match several rules):", file=file)
    for line in [head, *body, total]:
        print(fmt.format(*line), file=file)
    if opted := sum(r["kept_by_opt_in"] for r in rows):
        print(f"{opted} problems match a rule you opted out of (exclude=...) and stay in; "
              "query gold.training_exclusions for them", file=file)


def require_healthy(con, allow_unhealthy: bool = False) -> dict | None:
    """Raise when the lake's latest health check failed (unless ``allow_unhealthy``); returns that check, None when
    there is none (never checked, or a lake from before ops.health_checks)."""
    from factory.lake.query import table_exists
    row = table_exists(con, "ops.health_checks") and con.execute(
        "SELECT healthy, reasons, fingerprint_hash, created_at, run_id FROM ops.health_checks "
        "ORDER BY created_at DESC, run_id DESC LIMIT 1").fetchone()
    check = {"healthy": row[0], "reasons": json.loads(row[1] or "[]"), "fingerprint_hash": row[2],
             "created_at": row[3], "run_id": row[4]} if row else None
    if check is not None and not check["healthy"] and not allow_unhealthy:
        raise FactoryError("the latest `factory health` check failed, so verdicts from this environment are not "
                           "trusted: " + "; ".join(check["reasons"]) + ". Fix the environment and run "
                           "`factory health` again, or pass --allow-unhealthy (curate) to proceed anyway.")
    return check
