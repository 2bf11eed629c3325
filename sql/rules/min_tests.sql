-- keep: problems with at least {{ min_tests }} usable (validated) tests in gold.rl_problems
SELECT problem_id FROM gold.rl_problems WHERE n_tests >= {{ min_tests }}
