-- Final-answer tasks ready for RL without local rollouts (R1-Code-Interpreter's no-rollout path, #43): every
-- problem with a test of kind `answer` (ReasoningGym tasks of `factory ingest reasoning-gym`, SymBench/BBH-style
-- rows of `factory ingest jsonl --test-format answer`), one row each, with the answer check the reward applies
-- (factory.answers.checks format: {"rule", "answer"[, "atol"]}, plus "task" and the generated "entry" for the
-- reasoning_gym rule, whose verifier reads them). `factory export --format verl | trl-grpo | openrlhf` turns
-- a release of this view into RL rows whose ground truth factory.reward.compute_score scores (1.0 for a right
-- final answer, 0.0 otherwise). The question never carries the answer: it stays in ground_truth.
-- Kept out, as in the code views: contaminated and non-keeper duplicate problems when the curation's `exclude`
-- setting ({{ exclude_label }}) applies those reasons. The other exclusion reasons are about code tests (other_task
-- is every final-answer problem by definition).
-- The rollout path's columns (policy pass rate, potential 4p(1-p), curriculum stage) come from gold.r1ci_tasks
-- (`factory interpreter-rollouts curriculum`, its latest run per problem) and stay NULL until rollouts exist.
WITH answer_tests AS (
    SELECT problem_id, expected, comparison, atol
    FROM silver.tests
    WHERE kind = 'answer'
    QUALIFY row_number() OVER (PARTITION BY problem_id ORDER BY ordinal, test_id) = 1
), excluded AS (
    SELECT DISTINCT problem_id
    FROM gold.training_exclusions
    WHERE applied AND reason IN ('contaminated', 'duplicate')
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
WHERE p.problem_id NOT IN (SELECT problem_id FROM excluded)
