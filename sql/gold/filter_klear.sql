-- Klear-Reasoner code filter: >= {{ klear_min_tests }} kept tests and strong-model ({{ strong_model }}) mean
-- pass rate > {{ klear_min_pass_rate }}.
SELECT v.problem_id, v.source, v.kept_tests, m.mean_pass_rate
FROM gold.problem_validation AS v
JOIN gold.model_pass_rates AS m ON m.problem_id = v.problem_id AND m.model = '{{ strong_model }}'
WHERE NOT v.excluded AND v.kept_tests >= {{ klear_min_tests }} AND m.mean_pass_rate > {{ klear_min_pass_rate }}
