-- Final-answer tasks ready for RL without local rollouts (#43): one row per problem with a test of kind `answer`
-- (`factory ingest reasoning-gym`, `factory ingest jsonl --test-format answer`) and the answer check the reward
-- applies (factory.answers.checks format: {"rule", "answer"[, "atol"]}, plus "task" and "entry" for the
-- reasoning_gym rule). factory.reward.compute_score scores the exported rows (1.0 right answer, 0.0 otherwise);
-- the question never carries the answer. Kept out when `exclude` ({{ exclude_label }}) applies those reasons:
-- contaminated and non-keeper duplicate problems (the other reasons are about code tests).
-- Policy pass rate, potential 4p(1-p) and curriculum stage come from gold.r1ci_tasks (latest run per problem;
-- NULL until `factory interpreter-rollouts curriculum` has run).
WITH answer_tests AS (
    SELECT problem_id, expected, comparison, atol
    FROM silver.tests
    WHERE kind = 'answer'
    QUALIFY row_number() OVER (PARTITION BY problem_id ORDER BY ordinal, test_id) = 1
), curriculum AS (
    SELECT problem_id, recipe, model, pass_rate, potential, curriculum_stage
    FROM gold.r1ci_tasks
    QUALIFY row_number() OVER (PARTITION BY problem_id ORDER BY run_id DESC, recipe) = 1
)
SELECT p.problem_id, p.source, p.source_id, p.split,
       coalesce(json_extract_string(p.metadata, '$.reasoning_gym.task'), p.source) AS task,
       p.question,
       a.comparison AS answer_rule,
       CASE WHEN a.comparison = 'reasoning_gym'
            THEN json_object('rule', a.comparison, 'answer', a.expected,
                             'task', json_extract_string(p.metadata, '$.reasoning_gym.task'),
                             'entry', json_extract(p.metadata, '$.reasoning_gym.entry'))
            WHEN a.atol IS NOT NULL THEN json_object('rule', a.comparison, 'answer', a.expected, 'atol', a.atol)
            ELSE json_object('rule', a.comparison, 'answer', a.expected) END AS ground_truth,
       c.recipe AS r1ci_recipe, c.model AS r1ci_model, c.pass_rate, c.potential, c.curriculum_stage
FROM silver.problems AS p
JOIN answer_tests AS a USING (problem_id)
LEFT JOIN curriculum AS c USING (problem_id)
WHERE p.problem_id NOT IN (SELECT problem_id FROM gold.training_exclusions
                           WHERE applied AND reason IN ('contaminated', 'duplicate'))
