-- One verdict per (program, test): the most recent execution, infra errors excluded (they are missing data,
-- not failures). Every pass-rate transform reads this view. judged_in_process marks verdicts of tests that ran
-- inside the candidate's own process (unittest): the program could have forged them.
-- language: the program's (silver.programs.language, python when unset).
SELECT e.program_id, e.test_id, e.status, e.cpu_ms, e.wall_ms, e.judged_in_process, e.error_type, e.error_message,
       e.executed_at, coalesce(p.language, 'python') AS language
FROM silver.executions AS e LEFT JOIN silver.programs AS p USING (program_id)
WHERE e.status <> 'infra_error'
QUALIFY row_number() OVER (PARTITION BY e.program_id, e.test_id ORDER BY e.executed_at DESC, e.limits_hash) = 1
