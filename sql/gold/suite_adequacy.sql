-- Suite adequacy per source: how many mutants (`factory mutate`) each problem's valid tests kill, over the
-- problems with at least one mutant that ran a valid test (gold.problem_validation). mutation_score pools
-- killed / mutants over the source; mean / median are over the problems' own scores. Surviving mutants are
-- what `factory augment` targets; its tests (origin 'augment') are counted apart from the dataset's.
WITH suites AS (
    SELECT v.problem_id,
           count(*) FILTER (WHERE v.valid) AS valid_tests,
           count(*) FILTER (WHERE v.valid AND t.origin = 'augment') AS augment_tests
    FROM gold.test_validation AS v
    JOIN silver.tests AS t USING (test_id, problem_id)
    GROUP BY v.problem_id
)
SELECT
    pv.source,
    count(*)::BIGINT AS problems,
    sum(pv.mutants)::BIGINT AS mutants,
    sum(pv.mutants_killed)::BIGINT AS killed,
    sum(pv.mutants - pv.mutants_killed)::BIGINT AS surviving,
    (sum(pv.mutants_killed) / sum(pv.mutants))::DOUBLE AS mutation_score,
    avg(pv.mutation_score)::DOUBLE AS mean_mutation_score,
    median(pv.mutation_score)::DOUBLE AS median_mutation_score,
    count(*) FILTER (WHERE pv.mutants_killed = pv.mutants)::BIGINT AS problems_all_killed,
    sum(s.valid_tests)::BIGINT AS tests,
    sum(s.augment_tests)::BIGINT AS augment_tests,
    (sum(s.valid_tests) / count(*))::DOUBLE AS tests_per_problem
FROM gold.problem_validation AS pv
JOIN suites AS s USING (problem_id)
WHERE pv.mutants > 0
GROUP BY pv.source
