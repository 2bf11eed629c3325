-- keep: AceCoder's hard subset for {{ model }}'s programs: per-problem mean pass rate <= the median mean, then
-- among those the std of the pass rates >= the median std (jdf-prog/OpenRLHF scripts/get_hard_data.py)
WITH per_problem AS (
    SELECT problem_id, avg(pass_rate) AS mean_rate, stddev_pop(pass_rate) AS std_rate
    FROM gold.program_pass_rates
    WHERE complete AND coalesce(model, origin) = '{{ model }}'
    GROUP BY problem_id
    HAVING count(*) >= {{ min_samples }}
), easy_cut AS (
    SELECT * FROM per_problem WHERE mean_rate <= (SELECT median(mean_rate) FROM per_problem)
)
SELECT problem_id FROM easy_cut WHERE std_rate >= (SELECT median(std_rate) FROM easy_cut)
