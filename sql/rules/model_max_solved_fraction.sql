-- keep: problems {{ model }} fully solves in at most a {{ max_fraction }} fraction of its programs
-- (AceReason-Nemotron later stages: pass rate <= 6/16)
SELECT problem_id FROM gold.model_pass_rates
WHERE model = '{{ model }}' AND n >= {{ min_samples }} AND correct <= {{ max_fraction }} * n
