-- AceCoder preference pairs within one program group of a problem (a sampling model, or references+mutants):
-- chosen pass rate {{ chosen_op }} {{ pair_min_chosen }}, difference {{ diff_op }} {{ pair_min_diff }}, rejected > {{ pair_min_rejected }}.
-- Strict (paper Eq. 3) uses '>', the AceCoder code uses '>=' (default). Deduplicated by (chosen, rejected) code.
-- Only gold.clean_problems; `split` is the problem's training split, so pairs of test problems stay in test.
-- The prompt is the problem's gold.problem_prompts text, the one RL rows use.
WITH scored AS (
    SELECT r.*, pr.code, pb.source, cp.split
    FROM gold.program_pass_rates AS r
    JOIN silver.programs AS pr USING (program_id)
    JOIN silver.problems AS pb ON pb.problem_id = r.problem_id
    JOIN gold.problem_validation AS v ON v.problem_id = r.problem_id
    JOIN gold.clean_problems AS cp ON cp.problem_id = r.problem_id
    WHERE r.complete AND NOT v.excluded
), candidates AS (
    SELECT c.problem_id, c.source, c.split, c.pair_group AS model,
           c.program_id AS chosen_program_id, c.code AS chosen, c.pass_rate AS chosen_pass_rate,
           r.program_id AS rejected_program_id, r.code AS rejected, r.pass_rate AS rejected_pass_rate
    FROM scored AS c
    JOIN scored AS r ON r.problem_id = c.problem_id AND r.pair_group = c.pair_group AND r.program_id <> c.program_id
    WHERE c.pass_rate {{ chosen_op }} {{ pair_min_chosen }}
      AND c.pass_rate - r.pass_rate {{ diff_op }} {{ pair_min_diff }}
      AND r.pass_rate > {{ pair_min_rejected }}
      AND c.code <> r.code
)
SELECT
    sha256(chosen_program_id || ':' || rejected_program_id)[:16] AS pair_id,
    problem_id, source, model,
    (SELECT pp.prompt FROM gold.problem_prompts AS pp WHERE pp.problem_id = candidates.problem_id) AS prompt,
    'Below is a Python script with a self-contained function that solves the problem and passes corresponding tests:'
        || chr(10) || '```python' || chr(10) || chosen || chr(10) || '```' AS chosen,
    'Below is a Python script with a self-contained function that solves the problem and passes corresponding tests:'
        || chr(10) || '```python' || chr(10) || rejected || chr(10) || '```' AS rejected,
    chosen_program_id, rejected_program_id, chosen_pass_rate, rejected_pass_rate, split,
    '{{ run_id }}' AS run_id
FROM candidates
QUALIFY row_number() OVER (PARTITION BY chosen, rejected ORDER BY chosen_program_id, rejected_program_id) = 1
