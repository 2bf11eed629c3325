-- keep: problems whose improvement potential 4p(1-p) for {{ model }} is at least {{ min_potential }}
-- (R1-Code-Interpreter: p(1-p) is the GRPO gradient variance; p = mean pass rate)
SELECT problem_id FROM gold.model_pass_rates
WHERE model = '{{ model }}' AND n >= {{ min_samples }} AND 4 * mean_pass_rate * (1 - mean_pass_rate) >= {{ min_potential }}
