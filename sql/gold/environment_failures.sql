-- Problems whose reference program cannot run in this environment: its latest verdicts include an
-- ImportError / ModuleNotFoundError (a package the problem needs is not installed). Their pass rates measure
-- the environment, not the problem, so curation marks them (gold.training_exclusions, reason 'environment')
-- instead of calling them hard.
SELECT
    pr.problem_id,
    pb.source,
    string_agg(DISTINCT coalesce(regexp_extract(e.error_message, 'No module named ''([^''.]+)', 1), e.error_type), ', '
               ORDER BY coalesce(regexp_extract(e.error_message, 'No module named ''([^''.]+)', 1), e.error_type))
        AS missing_modules,
    any_value(e.error_message) AS example_error
FROM silver.programs AS pr
JOIN silver.problems AS pb USING (problem_id)
JOIN gold.latest_executions AS e USING (program_id)
WHERE pr.origin = 'reference'
  AND e.error_type IN ('ModuleNotFoundError', 'ImportError')
GROUP BY pr.problem_id, pb.source
