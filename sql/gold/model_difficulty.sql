-- Difficulty per policy model (Skywork-OR1 keeps model_difficulty[model] = full passes of n samples per model):
-- one row per problem with JSON maps model -> correct, model -> n and model -> mean pass rate, over every
-- model in gold.model_pass_rates ('reference' and 'mutant' count as models, as elsewhere in gold).
SELECT
    m.problem_id,
    p.source,
    count(*)::BIGINT AS models,
    to_json(map_from_entries(list({'key': m.model, 'value': m.correct} ORDER BY m.model)))::VARCHAR AS model_difficulty,
    to_json(map_from_entries(list({'key': m.model, 'value': m.n} ORDER BY m.model)))::VARCHAR AS model_samples,
    to_json(map_from_entries(list({'key': m.model, 'value': round(m.mean_pass_rate, 6)} ORDER BY m.model)))::VARCHAR
        AS model_pass_rate
FROM gold.model_pass_rates AS m
JOIN silver.problems AS p USING (problem_id)
GROUP BY m.problem_id, p.source
