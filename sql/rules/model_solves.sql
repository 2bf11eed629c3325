-- keep: problems {{ model }} solves (all tests) in at least {{ min_correct }} of its programs
-- (AceReason-Nemotron: drop problems the strong model never solves in 8 rollouts)
SELECT problem_id FROM gold.model_pass_rates
WHERE model = '{{ model }}' AND n >= {{ min_samples }} AND correct >= {{ min_correct }}
