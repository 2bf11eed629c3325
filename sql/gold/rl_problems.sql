-- Problems ready for RL: question, starter code and tests packed as JSON, difficulty signals when the curate
-- stage has computed them. The tests are gold.rl_tests' (usable tests, validated where the problem was; reward
-- tests hidden ones on a train row ({{ reward_tests_label }}), every test on a test-split row): `tests` holds
-- the reward tests, `public_tests` the usable tests the prompt shows (a format / sanity reward, SFT), and a
-- problem without a reward test is left out (counted in gold.test_leakage). Only gold.clean_problems enter (no
-- contamination, duplicate, other-task, environment or validation exclusion applied; gold.training_exclusions
-- says why the others are out), with the split training sees (benchmarks are always 'test'). Exports (verl, TRL,
-- OpenRLHF) read this table.
-- Memory: each test is serialized on its own row and joined as text per problem (not a nested list of structs),
-- and the table is materialized so its readers do not pack it again. Past ~256 MB of tests curate does not run
-- this aggregate: it runs the query with the marked subquery's JSON nulled, streams that subquery and packs each
-- problem as its tests arrive.
WITH packed AS (
    SELECT
        problem_id,
        count(*) FILTER (WHERE reward) AS n_tests,
        '[' || string_agg(test_json, ',' ORDER BY ordinal) FILTER (WHERE reward) || ']' AS tests,
        count(*) FILTER (WHERE NOT reward) AS n_public_tests,
        '[' || string_agg(test_json, ',' ORDER BY ordinal) FILTER (WHERE NOT reward) || ']' AS public_tests
    FROM (SELECT problem_id, ordinal, reward,
                 to_json({'test_id': test_id, 'kind': kind, 'code': code, 'input': input, 'expected': expected,
                          'comparison': comparison, 'atol': atol, 'rtol': rtol})::VARCHAR AS test_json
          FROM gold.rl_tests
          WHERE true  -- rl_problems partition (the per-test rows factory.stages.curate streams on a large lake)
          )
    GROUP BY problem_id
    HAVING count(*) FILTER (WHERE reward) > 0
), reference_cpu AS (
    -- the CPU time a passing reference needs on its slowest test: where {{ reference_cpu_factor }}x that exceeds
    -- the reward's default budget ({{ reward_cpu_s }} s per test), the export carries the larger limit, so a
    -- trainer's slower or busier machine does not time the reference (and correct policies) out
    SELECT pr.problem_id, max(e.cpu_ms) / 1000.0 AS slowest_s
    FROM gold.latest_executions AS e
    JOIN silver.programs AS pr USING (program_id)
    WHERE pr.origin = 'reference' AND e.status = 'pass' AND e.cpu_ms IS NOT NULL
    GROUP BY pr.problem_id
)
SELECT
    p.problem_id, p.source, p.source_id, p.question, p.starter_code, p.entry_point, p.test_preamble,
    p.test_format, p.difficulty_label, p.license, c.split, pp.prompt,
    t.tests::VARCHAR AS tests, t.n_tests,
    CASE WHEN t.n_public_tests > 0 THEN t.public_tests::VARCHAR END AS public_tests, t.n_public_tests,
    d.pass_rate, d.potential, d.curriculum_stage,
    CASE WHEN ck.policy = 'program' THEN ck.code END AS checker,
    coalesce(tl.cpu_s, CASE WHEN {{ reference_cpu_factor }} * rc.slowest_s > {{ reward_cpu_s }}
                            THEN least(600.0, round({{ reference_cpu_factor }} * rc.slowest_s, 3)) END) AS cpu_s,
    coalesce(p.language, 'python') AS language
FROM silver.problems AS p
JOIN gold.clean_problems AS c USING (problem_id)
JOIN gold.problem_prompts AS pp USING (problem_id)
JOIN packed AS t USING (problem_id)
LEFT JOIN gold.difficulty AS d USING (problem_id)
LEFT JOIN silver.checkers AS ck USING (problem_id)
LEFT JOIN silver.time_limits AS tl USING (problem_id)
LEFT JOIN reference_cpu AS rc USING (problem_id)
