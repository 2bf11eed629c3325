-- keep: problems with no applied exclusion (contamination, duplicate, other task, environment, validation;
-- gold.clean_problems, the factory's clean-by-default set)
SELECT problem_id FROM gold.clean_problems
