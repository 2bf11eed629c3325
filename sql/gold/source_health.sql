-- Environment health per source: how many reference programs pass every test they ran (live, from the latest
-- verdicts), and which missing modules explain the failures. A source below {{ min_reference_pass_rate }} is
-- flagged; `factory execute` prints this after a run and `factory curate` before it trusts pass rates.
WITH reference_runs AS (
    SELECT pr.problem_id, pr.program_id, bool_and(e.status = 'pass') AS passed
    FROM silver.programs AS pr
    JOIN gold.latest_executions AS e USING (program_id)
    WHERE pr.origin = 'reference'
    GROUP BY pr.problem_id, pr.program_id
), per_source AS (
    SELECT pb.source,
           count(DISTINCT pb.problem_id) AS problems,
           count(DISTINCT r.program_id) AS references_run,
           count(DISTINCT r.program_id) FILTER (WHERE r.passed) AS references_passed
    FROM silver.problems AS pb
    LEFT JOIN reference_runs AS r USING (problem_id)
    GROUP BY pb.source
), modules AS (
    SELECT source, trim(module) AS module, count(*) AS n
    FROM (SELECT source, unnest(string_split(missing_modules, ',')) AS module FROM gold.environment_failures)
    GROUP BY ALL
), module_summary AS (
    SELECT source, string_agg(module || ' ' || n, ', ' ORDER BY n DESC, module) AS missing_modules
    FROM modules GROUP BY source
)
SELECT
    s.source,
    s.problems::BIGINT AS problems,
    s.references_run::BIGINT AS references_run,
    s.references_passed::BIGINT AS references_passed,
    CASE WHEN s.references_run > 0 THEN s.references_passed / s.references_run END AS reference_pass_rate,
    (SELECT count(*) FROM gold.environment_failures AS f WHERE f.source = s.source)::BIGINT AS environment_failures,
    m.missing_modules,
    CASE WHEN s.references_run = 0 THEN NULL
         ELSE s.references_passed / s.references_run >= {{ min_reference_pass_rate }} END AS healthy
FROM per_source AS s
LEFT JOIN module_summary AS m USING (source)
