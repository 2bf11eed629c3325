-- AceCoder test validation: a test is valid when the oracle programs pass it ({{ oracle_rule }} of them),
-- suspect when an oracle program ran it and failed. Oracle = {{ oracle_label }}.
-- Also the mutation view of each test: how many mutant programs ran it and how many it killed.
WITH oracle AS (
    SELECT e.test_id, count(*) AS runs, count(*) FILTER (WHERE e.status = 'pass') AS passes
    FROM gold.latest_executions AS e JOIN silver.programs AS p USING (program_id)
    WHERE {{ oracle_filter }}
    GROUP BY e.test_id
), mutants AS (
    SELECT e.test_id, count(*) AS runs, count(*) FILTER (WHERE e.status <> 'pass') AS kills
    FROM gold.latest_executions AS e JOIN silver.programs AS p USING (program_id)
    WHERE p.origin = 'mutant'
    GROUP BY e.test_id
)
SELECT
    t.test_id,
    t.problem_id,
    t.ordinal,
    coalesce(o.runs, 0)::BIGINT AS oracle_runs,
    coalesce(o.passes, 0)::BIGINT AS oracle_passes,
    CASE WHEN o.runs IS NULL THEN NULL
         WHEN '{{ oracle_rule }}' = 'any' THEN o.passes > 0
         ELSE o.passes = o.runs END AS valid,
    coalesce(o.runs > 0 AND o.passes < o.runs, false) AS suspect,
    coalesce(m.runs, 0)::BIGINT AS mutant_runs,
    coalesce(m.kills, 0)::BIGINT AS mutant_kills
FROM silver.tests AS t
LEFT JOIN oracle AS o USING (test_id)
LEFT JOIN mutants AS m USING (test_id)
