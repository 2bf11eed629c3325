-- Difficulty and potential per problem from the difficulty model ({{ difficulty_model }}): mean pass rate p,
-- Skywork model_difficulty (# full passes of n), potential 4p(1-p) (R1-Code-Interpreter), curriculum stage
-- by potential quartile (1 = highest potential, trained first), AceReason epoch filter (keep p <= {{ epoch_max_pass_rate }}).
WITH m AS (
    SELECT * FROM gold.model_pass_rates WHERE model = '{{ difficulty_model }}'
)
SELECT
    m.problem_id,
    p.source,
    m.model AS difficulty_model,
    m.n,
    m.correct AS model_difficulty,
    m.mean_pass_rate AS pass_rate,
    4 * m.mean_pass_rate * (1 - m.mean_pass_rate) AS potential,
    ntile(4) OVER (ORDER BY 4 * m.mean_pass_rate * (1 - m.mean_pass_rate) DESC, m.problem_id) AS curriculum_stage,
    m.mean_pass_rate <= {{ epoch_max_pass_rate }} AS epoch_keep
FROM m JOIN silver.problems AS p USING (problem_id)
-- a problem whose reference misses a module is not hard, it is unscorable here (gold.environment_failures)
WHERE m.problem_id NOT IN (SELECT problem_id FROM gold.environment_failures)
