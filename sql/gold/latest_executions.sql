-- One verdict per (program, test): the most recent execution, infra errors excluded (they are missing data,
-- not failures). Every pass-rate transform reads this view.
SELECT program_id, test_id, status, cpu_ms, wall_ms, executed_at
FROM silver.executions
WHERE status <> 'infra_error'
QUALIFY row_number() OVER (PARTITION BY program_id, test_id ORDER BY executed_at DESC, limits_hash) = 1
