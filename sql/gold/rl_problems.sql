-- Problems ready for RL: question, starter code and tests packed as JSON (only validated tests when the problem
-- was validated; tests with unknown expected outputs never), difficulty signals when the curate stage has
-- computed them. Reward tests (`tests`) are the problem's hidden tests ({{ reward_tests_label }}): a test whose
-- input and expected output appear in the prompt (silver.tests.visibility = 'public') would pay a policy that
-- pattern-matches the statement's examples, so public tests ride along in `public_tests` (a format / sanity
-- reward, SFT) and a problem without a hidden test is left out (counted in gold.test_leakage). A train-split
-- problem keeps only tests a reference (or the generate-and-cross-check oracle of `factory gentests`) validated. Only gold.clean_problems enter (no contamination, duplicate, other-task, environment or validation
-- exclusion applied; gold.training_exclusions says why the others are out), with the split training sees
-- (benchmarks are always 'test'). Exports (verl, TRL, OpenRLHF) read this view.
WITH usable_tests AS (
    SELECT t.*, ({{ reward_all }} OR coalesce(t.visibility, 'unknown') = 'hidden') AS reward
    FROM silver.tests AS t
    JOIN gold.clean_problems AS c USING (problem_id)
    LEFT JOIN gold.test_validation AS v USING (test_id)
    LEFT JOIN gold.problem_validation AS pv ON pv.problem_id = t.problem_id
    WHERE NOT (t.kind IN ('call', 'stdio') AND t.expected IS NULL)
      AND (pv.problem_id IS NULL OR pv.oracle_tested = 0 OR v.valid)
      AND NOT coalesce(pv.excluded AND pv.oracle_tested > 0, false)
      AND (c.split = 'test' OR coalesce(v.valid, false) OR t.origin = 'gentests'
           OR NOT list_contains({{ exclude }}, 'unvalidated'))
), judged_tests AS (
    -- a problem's own rule (silver.checkers: a stated tolerance or case rule) replaces the tests' comparison
    SELECT u.* REPLACE (
               CASE WHEN u.kind = 'stdio' AND ck.policy IN ('exact', 'token', 'float', 'casefold') THEN ck.policy
                    ELSE u.comparison END AS comparison,
               CASE WHEN ck.policy = 'float' THEN ck.atol ELSE u.atol END AS atol),
           CASE WHEN ck.policy = 'float' THEN ck.rtol END AS rtol
    FROM usable_tests AS u
    LEFT JOIN silver.checkers AS ck USING (problem_id)
), reference_cpu AS (
    -- the CPU time a passing reference needs on its slowest test: where {{ reference_cpu_factor }}x that exceeds
    -- the reward's default budget ({{ reward_cpu_s }} s per test), the export carries the larger limit, so a
    -- trainer's slower or busier machine does not time the reference (and correct policies) out
    SELECT pr.problem_id, max(e.cpu_ms) / 1000.0 AS slowest_s
    FROM gold.latest_executions AS e
    JOIN silver.programs AS pr USING (program_id)
    WHERE pr.origin = 'reference' AND e.status = 'pass' AND e.cpu_ms IS NOT NULL
    GROUP BY pr.problem_id
), packed AS (
    SELECT
        problem_id,
        count(*) FILTER (WHERE reward) AS n_tests,
        to_json(list({'test_id': test_id, 'kind': kind, 'code': code, 'input': input, 'expected': expected,
                      'comparison': comparison, 'atol': atol, 'rtol': rtol} ORDER BY ordinal)
                FILTER (WHERE reward)) AS tests,
        count(*) FILTER (WHERE NOT reward) AS n_public_tests,
        to_json(list({'test_id': test_id, 'kind': kind, 'code': code, 'input': input, 'expected': expected,
                      'comparison': comparison, 'atol': atol, 'rtol': rtol} ORDER BY ordinal)
                FILTER (WHERE NOT reward)) AS public_tests
    FROM judged_tests
    GROUP BY problem_id
    HAVING count(*) FILTER (WHERE reward) > 0
)
SELECT
    p.problem_id, p.source, p.source_id, p.question, p.starter_code, p.entry_point, p.test_preamble,
    p.test_format, p.difficulty_label, p.license, c.split, pp.prompt,
    t.tests::VARCHAR AS tests, t.n_tests,
    CASE WHEN t.n_public_tests > 0 THEN t.public_tests::VARCHAR END AS public_tests, t.n_public_tests,
    d.pass_rate, d.potential, d.curriculum_stage,
    CASE WHEN ck.policy = 'program' THEN ck.code END AS checker,
    coalesce(tl.cpu_s, CASE WHEN {{ reference_cpu_factor }} * rc.slowest_s > {{ reward_cpu_s }}
                            THEN least(600.0, round({{ reference_cpu_factor }} * rc.slowest_s, 3)) END) AS cpu_s
FROM silver.problems AS p
JOIN gold.clean_problems AS c USING (problem_id)
JOIN gold.problem_prompts AS pp USING (problem_id)
JOIN packed AS t USING (problem_id)
LEFT JOIN gold.difficulty AS d USING (problem_id)
LEFT JOIN silver.checkers AS ck USING (problem_id)
LEFT JOIN silver.time_limits AS tl USING (problem_id)
LEFT JOIN reference_cpu AS rc USING (problem_id)
