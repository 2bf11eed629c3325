-- keep: problems with at least {{ min_valid_votes }} 'valid' votes from the LLM judges (gold.problem_quality from
-- `factory judge-quality`; Skywork-OR1: 2 judges x 16 answers, >= 9 valid); problems no judge saw: {{ unjudged }}
SELECT problem_id FROM gold.problem_quality WHERE valid_votes >= {{ min_valid_votes }}
UNION
SELECT problem_id FROM silver.problems
WHERE '{{ unjudged }}' = 'keep' AND problem_id NOT IN (SELECT problem_id FROM gold.problem_quality)
