-- The tests of gold.rl_problems, one row each (no JSON): the usable tests of a clean problem and which of them
-- reward. Usable: validated when the problem was validated, with a known expected output for call / stdio tests;
-- a train-split problem keeps only tests a reference (or `factory gentests`' cross-check) validated. Reward tests
-- are the hidden ones ({{ reward_tests_label }}): a public test (its input and output in the prompt) would pay a
-- policy that copies the statement's examples; a test-split row rewards every test. The problem's own rule
-- (silver.checkers: a stated tolerance or case rule) replaces a test's comparison.
-- gold.rl_problems packs these rows per problem; gold.test_leakage counts them without parsing that JSON.
WITH usable_tests AS (
    -- ids and flags only: the test content (code, input, expected) joins in once, at the end
    SELECT t.problem_id, t.test_id,
           ({{ reward_all }} OR coalesce(t.visibility, 'unknown') = 'hidden' OR c.split = 'test') AS reward
    FROM silver.tests AS t
    JOIN gold.clean_problems AS c USING (problem_id)
    LEFT JOIN gold.test_validation AS v USING (test_id)
    LEFT JOIN gold.problem_validation AS pv ON pv.problem_id = t.problem_id
    WHERE NOT (t.kind IN ('call', 'stdio') AND t.expected IS NULL)
      AND (pv.problem_id IS NULL OR pv.oracle_tested = 0 OR v.valid)
      AND NOT coalesce(pv.excluded AND pv.oracle_tested > 0, false)
      AND (c.split = 'test' OR coalesce(v.valid, false) OR t.origin = 'gentests'
           OR NOT list_contains({{ exclude }}, 'unvalidated'))
)
SELECT t.problem_id, t.test_id, t.ordinal, t.kind, t.code, t.input, t.expected,
       CASE WHEN t.kind = 'stdio' AND ck.policy IN ('exact', 'token', 'float', 'casefold') THEN ck.policy
            ELSE t.comparison END AS comparison,
       CASE WHEN ck.policy = 'float' THEN ck.atol ELSE t.atol END AS atol,
       CASE WHEN ck.policy = 'float' THEN ck.rtol END AS rtol,
       t.origin, t.visibility, u.reward
FROM silver.tests AS t
JOIN usable_tests AS u USING (test_id)
LEFT JOIN silver.checkers AS ck ON ck.problem_id = t.problem_id
