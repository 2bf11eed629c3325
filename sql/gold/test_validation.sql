-- AceCoder test validation: a test is valid when the oracle programs pass it ({{ oracle_rule }} of them),
-- suspect when an oracle program ran it and failed. Oracle = {{ oracle_label }}.
-- Also the mutation view of each test: how many mutant programs ran it and how many it killed.
WITH runs AS (
    SELECT e.test_id,
           count(*) FILTER (WHERE {{ oracle_filter }}) AS oracle_runs,
           count(*) FILTER (WHERE {{ oracle_filter }} AND e.status = 'pass') AS oracle_passes,
           count(*) FILTER (WHERE p.origin = 'mutant') AS mutant_runs,
           count(*) FILTER (WHERE p.origin = 'mutant' AND e.status <> 'pass') AS mutant_kills
    FROM gold.latest_executions AS e JOIN silver.programs AS p USING (program_id)
    WHERE {{ oracle_filter }} OR p.origin = 'mutant'
    GROUP BY e.test_id
)
SELECT
    t.test_id,
    t.problem_id,
    t.ordinal,
    coalesce(r.oracle_runs, 0)::BIGINT AS oracle_runs,
    coalesce(r.oracle_passes, 0)::BIGINT AS oracle_passes,
    CASE WHEN coalesce(r.oracle_runs, 0) = 0 THEN NULL
         WHEN '{{ oracle_rule }}' = 'any' THEN r.oracle_passes > 0
         ELSE r.oracle_passes = r.oracle_runs END AS valid,
    coalesce(r.oracle_passes < r.oracle_runs, false) AS suspect,
    coalesce(r.mutant_runs, 0)::BIGINT AS mutant_runs,
    coalesce(r.mutant_kills, 0)::BIGINT AS mutant_kills
FROM silver.tests AS t
LEFT JOIN runs AS r USING (test_id)
