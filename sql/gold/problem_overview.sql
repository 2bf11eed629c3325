-- Per source: problem and test counts, test formats, reference programs.
WITH tests_per_problem AS (
    SELECT problem_id, count(*) AS n_tests FROM silver.tests GROUP BY problem_id
), refs AS (
    SELECT problem_id, count(*) AS n_refs FROM silver.programs WHERE origin = 'reference' GROUP BY problem_id
)
SELECT
    p.source,
    count(*) AS problems,
    coalesce(sum(t.n_tests), 0)::BIGINT AS tests,
    round(coalesce(avg(t.n_tests), 0), 2)::DOUBLE AS tests_per_problem,
    string_agg(DISTINCT p.test_format, ',' ORDER BY p.test_format) AS test_formats,
    coalesce(sum(r.n_refs), 0)::BIGINT AS reference_programs
FROM silver.problems AS p
LEFT JOIN tests_per_problem AS t USING (problem_id)
LEFT JOIN refs AS r USING (problem_id)
GROUP BY p.source
ORDER BY p.source
