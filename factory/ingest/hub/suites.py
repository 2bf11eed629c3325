"""How well a test suite separates correct from wrong programs, CodeContests+ style, from the lake's verdicts.

A dataset that ships known-wrong programs (CodeContests' ``incorrect_solutions`` -> origin ``incorrect``) lets a
suite be scored: **TNR** = wrong programs the suite rejects (fails at least one of its tests) / wrong programs
judged; **TPR** = correct programs (origin ``reference``) it accepts (passes every test) / correct programs judged.
A suite is a set of test subsets: CodeContests' ``public``, ``public+private`` (what the dataset judges with),
``public+private+generated``; ``augment`` / ``gentests`` tests, when the factory added some, form the augmented
suites. Only programs with a verdict on every test of the suite count (``factory execute --select all`` first).
"""
from __future__ import annotations

DEFAULT_SUITES = {
    "public": ("public",),
    "public+private": ("public", "private"),
    "public+private+generated": ("public", "private", "generated"),
    "dataset+augmented": ("public", "private", "generated", "augment", "gentests"),
}


def suite_rates(con, source: str, suites: dict[str, tuple[str, ...]] | None = None) -> list[dict]:
    """One row per suite: tests, correct/wrong programs judged on all of them, TPR, TNR."""
    out = []
    for name, subsets in (suites or DEFAULT_SUITES).items():
        row = con.execute(
            """
            WITH suite AS (
                SELECT t.test_id, t.problem_id FROM silver.tests t JOIN silver.problems p USING (problem_id)
                WHERE p.source = $source AND coalesce(t.subset, t.origin) IN (SELECT unnest($subsets))
            ), per_program AS (
                SELECT g.program_id, g.origin, count(DISTINCT s.test_id) AS n_tests,
                       count(DISTINCT e.test_id) AS judged,
                       count(DISTINCT e.test_id) FILTER (e.status = 'pass') AS passed
                FROM silver.programs g JOIN suite s USING (problem_id)
                LEFT JOIN silver.executions e ON e.program_id = g.program_id AND e.test_id = s.test_id
                WHERE g.origin IN ('reference', 'incorrect')
                GROUP BY ALL
            )
            SELECT (SELECT count(*) FROM suite),
                   count(*) FILTER (origin = 'reference' AND judged = n_tests),
                   count(*) FILTER (origin = 'reference' AND judged = n_tests AND passed = n_tests),
                   count(*) FILTER (origin = 'incorrect' AND judged = n_tests),
                   count(*) FILTER (origin = 'incorrect' AND judged = n_tests AND passed < n_tests)
            FROM per_program
            """, {"source": source, "subsets": list(subsets)}).fetchone()
        tests, correct, accepted, wrong, rejected = row
        out.append({"suite": name, "tests": tests, "correct": correct, "tpr": accepted / correct if correct else None,
                    "incorrect": wrong, "tnr": rejected / wrong if wrong else None})
    return out
