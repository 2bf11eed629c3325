"""How well a test suite separates correct from wrong programs, CodeContests+ style, from the lake's verdicts.

A dataset that ships known-wrong programs (CodeContests' ``incorrect_solutions`` -> origin ``incorrect``) lets a
suite be scored: **TNR** = wrong programs the suite rejects (fails at least one of its tests) / wrong programs
judged; **TPR** = correct programs (origin ``reference``) it accepts (passes every test) / correct programs judged.

A suite is a set of test *classes*. A test's class is ``augment_public`` for the tests of a `factory augment
--public-only` run (the factory's suite for a problem shipped with its examples alone), ``augment`` /
``gentests`` for the factory's other tests, else the subset the dataset published it in (CodeContests on the Hub:
``public``, ``private``, ``generated``), else - for a dataset that ships its tests unlabelled, like the
CodeContests subset in ``../shared/data`` - ``public`` when ingest found it in the statement (its examples) and
``private`` otherwise. :data:`DEFAULT_SUITES` are the Hub layout's suites, :data:`UNLABELLED_SUITES` those of an
unlabelled dataset; both end with the dataset's suite plus the factory's tests.

Wrong programs are those of the ``wrong`` origins. A dataset's ``incorrect`` programs are wrong by label. Mutants
(``factory mutate``) carry no label: one counts as wrong only when some valid test of the largest suite rejects
it (the reference passes that test and the mutant does not); mutants every test accepts are reported as
``undecided`` (equivalent to the reference, or wrong in a way no test shows) and left out of TNR. So with mutants
the largest suite's TNR is 1.0 by construction, and the smaller suites' TNR says how many of the demonstrably
wrong mutants they miss. Only programs with a verdict (other than ``infra_error``) on every test of the suite
count; run ``factory execute --select all`` (and ``--select mutants``) first.
"""
from __future__ import annotations

from collections import Counter

DEFAULT_SUITES = {
    "public": ("public",),
    "public+private": ("public", "private"),
    "public+private+generated": ("public", "private", "generated"),
    "dataset+augmented": ("public", "private", "generated", "augment_public", "augment", "gentests"),
}

UNLABELLED_SUITES = {
    "public": ("public",),
    "original": ("public", "private"),
    "public+augmented": ("public", "augment_public"),
    "original+augmented": ("public", "private", "augment_public", "augment", "gentests"),
}
AUGMENTED = ("augment_public", "augment", "gentests")

FACTORY_ORIGINS = ("augment", "gentests")

# a test's class, in the module docstring's order
_CLASS = f"""CASE WHEN t.origin = 'augment' AND t.run_id IN (SELECT run_id FROM ops.runs WHERE stage = 'augment'
                      AND coalesce(TRY_CAST(json_extract(config, '$.public_only') AS BOOLEAN), false))
                  THEN 'augment_public'
                  WHEN t.origin IN {FACTORY_ORIGINS} THEN t.origin WHEN t.subset IS NOT NULL THEN t.subset
                  WHEN t.visibility = 'public' THEN 'public' ELSE 'private' END"""


def program_classes(con, source: str, origins=("reference", "incorrect"), problems: list[str] | None = None) -> dict[str, dict]:
    """Per program of the given origins: its problem, origin and, per test class, (tests, judged, passed)."""
    rows = con.execute(f"""
        WITH tc AS (
            SELECT t.test_id, t.problem_id, {_CLASS} AS cls FROM silver.tests t JOIN silver.problems p USING (problem_id)
            WHERE p.source = $source AND ($problems IS NULL OR list_contains($problems, t.problem_id))
        )
        SELECT g.program_id, g.problem_id, g.origin, tc.cls, count(*) AS n,
               count(e.test_id) FILTER (e.status <> 'infra_error') AS judged,
               count(e.test_id) FILTER (e.status = 'pass') AS passed
        FROM silver.programs g JOIN tc USING (problem_id)
        LEFT JOIN gold.latest_executions e ON e.program_id = g.program_id AND e.test_id = tc.test_id
        WHERE list_contains($origins, g.origin)
        GROUP BY ALL ORDER BY ALL""", {"source": source, "origins": list(origins), "problems": problems}).fetchall()
    out: dict[str, dict] = {}
    for program_id, problem_id, origin, cls, n, judged, passed in rows:
        p = out.setdefault(program_id, {"problem_id": problem_id, "origin": origin, "classes": {}})
        p["classes"][cls] = (n, judged, passed)
    return out


def verdict(program: dict, classes) -> str | None:
    """'accept' / 'reject' for a program under a suite of test classes; None when a test of it has no verdict."""
    counts = [program["classes"].get(c, (0, 0, 0)) for c in classes]
    accepted = all(passed >= n for n, _, passed in counts)
    if not accepted and any(judged > passed for _, judged, passed in counts):
        return "reject"                       # one judged failure is a rejection even with other tests missing
    return "accept" if accepted and all(judged >= n for n, judged, _ in counts) else None


def suite_rates(con, source: str, suites: dict[str, tuple[str, ...]] | None = None,
                wrong: tuple[str, ...] = ("incorrect",), problems: list[str] | None = None) -> list[dict]:
    """One row per suite: tests, correct/wrong programs judged on all of them, TPR, TNR (see the module doc);
    with mutants among ``wrong``, also ``undecided`` (mutants no test of the largest suite rejects)."""
    suites = suites or DEFAULT_SUITES
    programs = program_classes(con, source, ("reference", *wrong), problems)
    tests = _suite_tests(con, source, problems)
    largest = tuple(sorted({c for classes in suites.values() for c in classes}))
    undecided = {pid for pid, p in programs.items() if p["origin"] == "mutant" and verdict(p, largest) != "reject"}
    out = []
    for name, classes in suites.items():
        n: Counter = Counter()
        for pid, p in programs.items():
            if pid not in undecided and (v := verdict(p, classes)) is not None:
                kind = "correct" if p["origin"] == "reference" else "wrong"
                n.update((kind, f"{kind}_{v}"))
        row = {"suite": name, "tests": sum(tests.get(c, 0) for c in classes), "correct": n["correct"],
               "tpr": n["correct_accept"] / n["correct"] if n["correct"] else None,
               "incorrect": n["wrong"], "tnr": n["wrong_reject"] / n["wrong"] if n["wrong"] else None}
        if "mutant" in wrong:
            row["undecided"] = len(undecided)
        out.append(row)
    return out


def caught_only_by(con, source: str, base: tuple[str, ...], extra: tuple[str, ...],
                   wrong: tuple[str, ...] = ("incorrect",), problems: list[str] | None = None) -> list[dict]:
    """Wrong programs the ``base`` suite accepts (every test judged) and the ``extra`` test classes reject: what
    the extra tests catch that the base suite misses (e.g. a mutant the dataset's full suite passes)."""
    return [{"program_id": pid, "problem_id": p["problem_id"], "origin": p["origin"]}
            for pid, p in program_classes(con, source, wrong, problems).items()
            if verdict(p, base) == "accept" and verdict(p, extra) == "reject"]


def _suite_tests(con, source: str, problems: list[str] | None) -> dict[str, int]:
    return dict(con.execute(f"""
        SELECT {_CLASS} AS cls, count(*) FROM silver.tests t JOIN silver.problems p USING (problem_id)
        WHERE p.source = $source AND ($problems IS NULL OR list_contains($problems, t.problem_id)) GROUP BY 1""",
        {"source": source, "problems": problems}).fetchall())


def valid_problems(con, source: str) -> list[str]:
    """Problems whose reference passes every test the dataset shipped, in this sandbox: the oracle the suites'
    TPR and the mutants' labels rely on."""
    return [r[0] for r in con.execute(f"""
        SELECT t.problem_id FROM silver.tests t JOIN silver.problems p USING (problem_id)
        JOIN silver.programs r ON r.problem_id = t.problem_id AND r.origin = 'reference'
        LEFT JOIN gold.latest_executions e ON e.program_id = r.program_id AND e.test_id = t.test_id
        WHERE p.source = ? AND t.origin NOT IN {FACTORY_ORIGINS}
        GROUP BY 1 HAVING bool_and(coalesce(e.status = 'pass', false)) ORDER BY 1""", [source]).fetchall()]
