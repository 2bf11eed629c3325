-- One verdict per (program, test): the most recent execution, infra errors excluded (they are missing data,
-- not failures). Every pass-rate transform reads this view. judged_in_process marks verdicts of tests that ran
-- inside the candidate's own process (unittest): the program could have forged them.
SELECT program_id, test_id, status, cpu_ms, wall_ms, judged_in_process, error_type, error_message, executed_at
FROM silver.executions
WHERE status <> 'infra_error'
QUALIFY row_number() OVER (PARTITION BY program_id, test_id ORDER BY executed_at DESC, limits_hash) = 1
