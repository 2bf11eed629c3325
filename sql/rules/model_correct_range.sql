-- keep: problems that {{ model }} solves sometimes but not always: at least {{ min_samples }} programs, at least
-- {{ min_correct }} full passes and at least {{ min_wrong }} programs that fail (Skywork-OR1: 1 <= correct <= 15 of 16)
SELECT problem_id FROM gold.model_pass_rates
WHERE model = '{{ model }}' AND n >= {{ min_samples }}
  AND correct >= {{ min_correct }} AND n - correct >= {{ min_wrong }}
