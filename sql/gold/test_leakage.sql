-- Leakage per source and split (the split training sees: benchmark sources ({{ benchmarks_label }}) are 'test'):
-- can a policy read its reward off the prompt, and what decontamination found (columns: data_catalog.yaml).
-- Reward tests are counted from gold.rl_tests (the rows packed); rl_rows_all_reward_public must be 0 (a
-- test-split row is not counted: it rewards every test, visibility is for training).
WITH p AS (
    SELECT problem_id, source,
           CASE WHEN list_contains({{ benchmarks }}, source) OR split = 'test' THEN 'test'
                ELSE coalesce(split, 'train') END AS split
    FROM silver.problems
), vis AS (
    SELECT problem_id,
           count(*) FILTER (WHERE coalesce(visibility, 'unknown') = 'hidden') AS hidden,
           count(*) AS tests
    FROM silver.tests GROUP BY problem_id
), reward AS (
    -- the reward tests of each RL row (gold.rl_tests, the rows gold.rl_problems packs: no JSON is parsed here)
    SELECT t.problem_id,
           count(*) FILTER (WHERE coalesce(t.visibility, 'unknown') = 'hidden') AS hidden,
           count(*) FILTER (WHERE coalesce(t.visibility, 'unknown') = 'hidden' AND t.origin = 'dataset')
               AS hidden_dataset
    FROM gold.rl_tests AS t
    WHERE t.reward AND t.problem_id IN (SELECT problem_id FROM gold.rl_problems)
    GROUP BY t.problem_id
), contam AS (
    SELECT problem_id,
           bool_or(coalesce(method, 'ngram') = 'ngram') AS ngram,
           bool_or(method = 'test') AS test,
           bool_or(method = 'lineage') AS lineage
    FROM silver.contamination WHERE contaminated GROUP BY problem_id
)
SELECT
    p.source,
    p.split,
    count(*)::BIGINT AS rows,
    count(*) FILTER (WHERE v.hidden > 0)::BIGINT AS rows_with_hidden_tests,
    count(*) FILTER (WHERE v.tests > 0 AND v.hidden = 0)::BIGINT AS public_only_rows,
    count(r.problem_id)::BIGINT AS rl_rows,
    count(*) FILTER (WHERE r.problem_id IS NOT NULL AND coalesce(w.hidden, 0) = 0 AND p.split <> 'test')::BIGINT
        AS rl_rows_all_reward_public,
    count(*) FILTER (WHERE r.problem_id IS NULL AND c.problem_id IS NOT NULL AND v.tests > 0 AND v.hidden = 0
                     AND p.split <> 'test')::BIGINT
        AS rl_public_only_excluded,
    count(*) FILTER (WHERE w.hidden > 0 AND w.hidden_dataset = 0)::BIGINT AS rl_rows_generated_hidden,
    count(*) FILTER (WHERE k.ngram)::BIGINT AS contaminated_ngram,
    count(*) FILTER (WHERE k.test)::BIGINT AS contaminated_test,
    count(*) FILTER (WHERE k.lineage)::BIGINT AS contaminated_lineage,
    count(*) FILTER (WHERE p.problem_id IN (SELECT problem_id FROM gold.training_exclusions
                                            WHERE reason = 'unvalidated'))::BIGINT AS unvalidated
FROM p
LEFT JOIN vis AS v USING (problem_id)
LEFT JOIN gold.rl_problems AS r USING (problem_id)
LEFT JOIN reward AS w USING (problem_id)
LEFT JOIN gold.clean_problems AS c USING (problem_id)
LEFT JOIN contam AS k USING (problem_id)
GROUP BY ALL
ORDER BY p.source, p.split
