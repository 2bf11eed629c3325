-- Per problem: tests kept after validation, exclusion, and test strength (mutation score over valid tests).
-- Exclusion rules: AceCoder's (oracle passes <= {{ max_oracle_passed_excluded }} tests, or fewer than
-- {{ min_kept_tests }} kept tests) judge *synthesized* test suites (AceCoder asked an LLM for ~20 tests), so they
-- apply to problems with synthesized tests. A dataset's own suite (MBPP has 3 asserts) is excluded only when
-- fewer than {{ dataset_min_kept_tests }} of its tests survive validation.
WITH per_problem AS (
    SELECT
        problem_id,
        count(*) AS n_tests,
        count(*) FILTER (WHERE valid IS NOT NULL) AS oracle_tested,
        count(*) FILTER (WHERE valid) AS kept_tests,
        count(*) FILTER (WHERE suspect) AS suspect_tests,
        count(*) FILTER (WHERE valid AND mutant_runs > 0 AND mutant_kills = 0) AS tests_killing_nothing,
        bool_or(t.origin = 'synth') AS synthesized
    FROM gold.test_validation
    JOIN silver.tests AS t USING (test_id, problem_id)
    GROUP BY problem_id
), mutant_kills AS (
    -- a mutant is killed when it fails (or does not complete) at least one valid test it ran
    SELECT p.problem_id, p.program_id, bool_or(e.status <> 'pass') AS killed
    FROM silver.programs AS p
    JOIN gold.latest_executions AS e USING (program_id)
    JOIN gold.test_validation AS v USING (test_id)
    WHERE p.origin = 'mutant' AND v.valid
    GROUP BY ALL
), strength AS (
    SELECT problem_id, count(*) AS mutants, count(*) FILTER (WHERE killed) AS mutants_killed
    FROM mutant_kills GROUP BY problem_id
)
SELECT
    p.problem_id,
    p.source,
    c.n_tests::BIGINT AS n_tests,
    c.oracle_tested::BIGINT AS oracle_tested,
    c.kept_tests::BIGINT AS kept_tests,
    c.suspect_tests::BIGINT AS suspect_tests,
    coalesce(s.mutants, 0)::BIGINT AS mutants,
    coalesce(s.mutants_killed, 0)::BIGINT AS mutants_killed,
    CASE WHEN s.mutants > 0 THEN s.mutants_killed / s.mutants END AS mutation_score,
    c.tests_killing_nothing::BIGINT AS tests_killing_nothing,
    CASE WHEN c.oracle_tested = 0 THEN 'not validated'
         WHEN c.synthesized AND c.kept_tests <= {{ max_oracle_passed_excluded }} THEN 'oracle passed too few tests'
         WHEN c.synthesized AND c.kept_tests < {{ min_kept_tests }} THEN 'too few kept tests'
         WHEN NOT c.synthesized AND c.kept_tests < {{ dataset_min_kept_tests }} THEN 'oracle passed too few dataset tests'
    END AS exclude_reason,
    exclude_reason IS NOT NULL AS excluded  -- the counts and silver.tests.origin are never NULL
FROM silver.problems AS p
JOIN per_problem AS c USING (problem_id)
LEFT JOIN strength AS s USING (problem_id)
