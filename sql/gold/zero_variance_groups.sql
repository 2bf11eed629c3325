-- (problem, model) groups whose programs all score the same: zero GRPO advantage, dropped by DAPO/Klear/Skywork.
SELECT problem_id, model, n, mean_pass_rate
FROM gold.model_pass_rates
WHERE n > 1 AND (correct = 0 OR correct = n) AND std_pass_rate = 0
