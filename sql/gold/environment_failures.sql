-- Problems whose reference program cannot run in this environment: its latest verdicts include an
-- ImportError / ModuleNotFoundError (a package the problem needs is not installed). Their pass rates measure
-- the environment, not the problem, so curation marks them (gold.training_exclusions, reason 'environment')
-- instead of calling them hard.
-- The latest verdict of each (program, test) is ranked as in gold.latest_executions, but only for reference
-- verdicts that ever raised an import error: every view downstream of gold.clean_problems reads this one.
WITH candidates AS (
    SELECT DISTINCT e.program_id, e.test_id
    FROM silver.executions AS e
    JOIN silver.programs AS pr USING (program_id)
    WHERE pr.origin = 'reference' AND e.error_type IN ('ModuleNotFoundError', 'ImportError')
      AND e.status <> 'infra_error'
), latest AS (
    SELECT e.program_id, e.error_type, e.error_message,
           coalesce(regexp_extract(e.error_message, 'No module named ''([^''.]+)', 1), e.error_type) AS module
    FROM silver.executions AS e
    SEMI JOIN candidates AS c ON c.program_id = e.program_id AND c.test_id = e.test_id
    WHERE e.status <> 'infra_error'
    QUALIFY row_number() OVER (PARTITION BY e.program_id, e.test_id ORDER BY e.executed_at DESC, e.limits_hash) = 1
)
SELECT
    pr.problem_id,
    pb.source,
    string_agg(DISTINCT e.module, ', ' ORDER BY e.module) AS missing_modules,
    any_value(e.error_message) AS example_error
FROM silver.programs AS pr
JOIN silver.problems AS pb USING (problem_id)
JOIN latest AS e USING (program_id)
WHERE e.error_type IN ('ModuleNotFoundError', 'ImportError')   -- latest: reference programs' verdicts only
GROUP BY pr.problem_id, pb.source
