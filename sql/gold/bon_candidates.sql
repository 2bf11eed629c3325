-- Best-of-N candidates: every scored program of a problem with its AceCoder-style RM prompt/response text and
-- whether it passes all (validated) tests, for gold.clean_problems only. Evaluation reads this from a release.
SELECT
    r.problem_id, r.program_id, r.origin, r.model, r.pair_group, pr.sample_index,
    coalesce(json_extract_string(pr.metadata, '$.greedy') = 'true', false) AS is_greedy,
    pp.prompt,
    'Below is a Python script with a self-contained function that solves the problem and passes corresponding tests:'
        || chr(10) || '```python' || chr(10) || pr.code || chr(10) || '```' AS response,
    r.all_passed AS passed, r.pass_rate, c.split
FROM gold.program_pass_rates AS r
JOIN silver.programs AS pr USING (program_id)
JOIN gold.clean_problems AS c ON c.problem_id = r.problem_id
JOIN gold.problem_prompts AS pp ON pp.problem_id = r.problem_id
WHERE r.complete
