-- Pass rate per program. Denominator: the problem's valid tests when it was validated, else all its tests.
-- pass_rate_original is AceCoder's variant: passes on valid tests / the ORIGINAL test count.
-- complete = every denominator test has a verdict (programs with missing verdicts are not scored).
-- exclude_in_process_judged = {{ exclude_in_process_judged }}: when true, tests judged inside the candidate's own
-- process (forgeable, e.g. BigCodeBench unittest) leave numerator and denominator alike.
-- On a train-split problem only hidden tests count ({{ reward_tests_label }}; silver.tests.visibility), so pass
-- rates measure what the RL reward measures; a benchmark ({{ benchmarks_label }}) or test-split problem counts
-- every test (HumanEval/34's only test is its docstring example).
WITH in_process_tests AS (
    SELECT DISTINCT test_id FROM gold.latest_executions
    WHERE judged_in_process AND {{ exclude_in_process_judged }}
), tests AS (
    SELECT v.* FROM gold.test_validation AS v JOIN silver.tests AS st USING (test_id)
    JOIN silver.problems AS pb ON pb.problem_id = v.problem_id
    WHERE v.test_id NOT IN (SELECT test_id FROM in_process_tests)
      AND ({{ reward_all }} OR coalesce(st.visibility, 'unknown') = 'hidden'
           OR pb.split = 'test' OR list_contains({{ benchmarks }}, pb.source))
), denominators AS (
    SELECT problem_id,
           count(*) AS original_tests,
           count(*) FILTER (WHERE valid) AS valid_tests
    FROM tests GROUP BY problem_id
), scored_tests AS (
    SELECT v.test_id, v.problem_id
    FROM tests AS v JOIN denominators AS d USING (problem_id)
    WHERE v.valid OR d.valid_tests = 0
), per_program AS (
    SELECT p.program_id,
           count(e.test_id) AS executed,
           count(*) FILTER (WHERE e.status = 'pass') AS passed
    FROM silver.programs AS p
    JOIN scored_tests AS s USING (problem_id)
    LEFT JOIN gold.latest_executions AS e ON e.program_id = p.program_id AND e.test_id = s.test_id
    GROUP BY p.program_id
)
SELECT
    p.program_id,
    p.problem_id,
    p.origin,
    p.model,
    CASE WHEN p.origin IN ('reference', 'mutant') THEN 'reference+mutant' ELSE coalesce(p.model, p.origin) END
        AS pair_group,
    CASE WHEN d.valid_tests > 0 THEN d.valid_tests ELSE d.original_tests END::BIGINT AS n_tests,
    r.executed::BIGINT AS executed,
    r.passed::BIGINT AS passed,
    r.passed / CASE WHEN d.valid_tests > 0 THEN d.valid_tests ELSE d.original_tests END AS pass_rate,
    r.passed / d.original_tests AS pass_rate_original,
    r.passed = CASE WHEN d.valid_tests > 0 THEN d.valid_tests ELSE d.original_tests END AS all_passed,
    d.valid_tests > 0 AS validated,
    r.executed = CASE WHEN d.valid_tests > 0 THEN d.valid_tests ELSE d.original_tests END AS complete,
    coalesce(p.language, 'python') AS language
FROM silver.programs AS p
JOIN per_program AS r USING (program_id)
JOIN denominators AS d USING (problem_id)
WHERE r.executed > 0
