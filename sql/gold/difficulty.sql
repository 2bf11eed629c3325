-- Difficulty and potential per problem from the difficulty model ({{ difficulty_model }}): mean pass rate p,
-- Skywork model_difficulty (# full passes of n), potential 4p(1-p) (R1-Code-Interpreter), curriculum stage
-- by potential quartile (1 = highest potential, trained first; paper filters on these are recipe rules).
-- The quartiles are cut over the train split only (no benchmark source, no test split): a test problem gets the
-- stage of its potential by the train cut points, so test rows never move them.
WITH m AS (
    SELECT m.*, 4 * m.mean_pass_rate * (1 - m.mean_pass_rate) AS potential,
           p.source, (NOT list_contains({{ benchmarks }}, p.source) AND coalesce(p.split, '') <> 'test') AS train
    FROM gold.model_pass_rates AS m JOIN silver.problems AS p USING (problem_id)
    WHERE m.model = '{{ difficulty_model }}'
      -- a problem whose reference misses a module is not hard, it is unscorable here (gold.environment_failures)
      AND m.problem_id NOT IN (SELECT problem_id FROM gold.environment_failures)
), train AS (
    -- (a lake with no train problem at all, e.g. benchmarks only, cuts over every problem)
    SELECT problem_id, ntile(4) OVER (ORDER BY potential DESC, problem_id) AS stage, potential FROM m
    WHERE train OR NOT EXISTS (SELECT 1 FROM m WHERE train)
), cuts AS (
    -- the lowest train potential of stages 1..3: a test problem at or above cut k is in stage k at most
    SELECT min(potential) FILTER (WHERE stage = 1) AS c1, min(potential) FILTER (WHERE stage = 2) AS c2,
           min(potential) FILTER (WHERE stage = 3) AS c3
    FROM train
)
SELECT
    m.problem_id,
    m.source,
    m.model AS difficulty_model,
    m.n,
    m.correct AS model_difficulty,
    m.mean_pass_rate AS pass_rate,
    m.potential,
    coalesce(t.stage, CASE WHEN m.potential >= c.c1 THEN 1 WHEN m.potential >= c.c2 THEN 2
                           WHEN m.potential >= c.c3 THEN 3 ELSE 4 END) AS curriculum_stage
FROM m
LEFT JOIN train AS t USING (problem_id)
CROSS JOIN cuts AS c
