-- AceCoder hard subset: mean pass rate <= the median mean, then among those std >= the median std
-- (over the models' per-problem pass rates; AceCoder used qwen_coder_2.5 + llama3_instruct samples).
WITH per_problem AS (
    SELECT problem_id, avg(pass_rate) AS mean_rate, stddev_pop(pass_rate) AS std_rate
    FROM gold.program_pass_rates
    WHERE complete AND origin = 'sample'
    GROUP BY problem_id
), easy_cut AS (
    SELECT * FROM per_problem WHERE mean_rate <= (SELECT median(mean_rate) FROM per_problem)
)
SELECT e.problem_id, p.source, e.mean_rate, e.std_rate
FROM easy_cut AS e JOIN silver.problems AS p USING (problem_id)
WHERE e.std_rate >= (SELECT median(std_rate) FROM easy_cut)
