-- The user message for every problem - the one prompt text every trainer-facing output uses (RL rows, preference
-- pairs, best-of-N candidates, every export format): the question, the starter code when the question lacks it,
-- the I/O contract (stdin/stdout, or the function to define) and the answer format.
WITH p AS (
    SELECT problem_id, test_format, nullif(entry_point, '') AS entry_point,
           trim(question, chr(32) || chr(9) || chr(10) || chr(13)) AS question,
           nullif(trim(coalesce(starter_code, ''), chr(32) || chr(9) || chr(10) || chr(13)), '') AS starter
    FROM silver.problems
)
SELECT
    problem_id,
    concat_ws(chr(10) || chr(10),
        question,
        CASE WHEN starter IS NOT NULL AND NOT contains(question, starter)
             THEN 'Start from this code:' || chr(10) || '```python' || chr(10) || starter || chr(10) || '```' END,
        CASE WHEN test_format = 'stdio'
             THEN 'Read the input from standard input and print the answer to standard output.'
             WHEN entry_point IS NOT NULL THEN 'Your code must define `' || entry_point || '`.' END,
        'Write a complete Python solution in a single ```python code block.') AS prompt
FROM p
