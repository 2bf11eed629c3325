-- DeepCoder filter: problems with at least {{ deepcoder_min_tests }} kept (validated) tests.
SELECT problem_id, source, kept_tests
FROM gold.problem_validation
WHERE NOT excluded AND kept_tests >= {{ deepcoder_min_tests }}
