-- keep: problems where {{ model }}'s mean per-program pass rate is above {{ min_rate }}
-- (Klear-Reasoner: the strong model's mean pass rate > 0.5 screens out broken tests)
SELECT problem_id FROM gold.model_pass_rates
WHERE model = '{{ model }}' AND n >= {{ min_samples }} AND mean_pass_rate > {{ min_rate }}
