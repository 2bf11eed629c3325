-- keep: problems whose reference solution passes all their tests at least {{ min_correct }} time(s)
-- (DeepCoder/AceReason: programmatic verification with the official solutions)
SELECT problem_id FROM gold.model_pass_rates WHERE model = 'reference' AND correct >= {{ min_correct }}
