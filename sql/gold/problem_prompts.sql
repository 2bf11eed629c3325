-- The user message for every problem - the one prompt text every trainer-facing output uses (RL rows, preference
-- pairs, best-of-N candidates, every export format): the question, the starter code when the question lacks it,
-- the I/O contract (stdin/stdout, the function to define, or - for a harness problem such as MultiPL-E, whose
-- question is the function's signature - the function to complete) and the answer format, in the problem's own
-- language (silver.problems.language: the language the reward judges it in; its code fence is the tag the
-- reward's extraction looks for: cpp, java, javascript, rust).
WITH p AS (
    SELECT problem_id, test_format, nullif(entry_point, '') AS entry_point,
           trim(question, chr(32) || chr(9) || chr(10) || chr(13)) AS question,
           nullif(trim(coalesce(starter_code, ''), chr(32) || chr(9) || chr(10) || chr(13)), '') AS starter,
           coalesce(nullif(lower(language), ''), 'python') AS lang,
           CASE lang WHEN 'cpp' THEN 'C++' WHEN 'java' THEN 'Java' WHEN 'javascript' THEN 'JavaScript'
                     WHEN 'rust' THEN 'Rust' WHEN 'python' THEN 'Python' ELSE lang END AS lang_name
    FROM silver.problems
)
SELECT
    problem_id,
    concat_ws(chr(10) || chr(10),
        question,
        CASE WHEN starter IS NOT NULL AND NOT contains(question, starter)
             THEN 'Start from this code:' || chr(10) || '```' || lang || chr(10) || starter || chr(10) || '```' END,
        CASE WHEN test_format = 'stdio'
             THEN 'Read the input from standard input and print the answer to standard output.'
             WHEN test_format = 'harness' AND lang <> 'python'
             THEN 'Complete the function' || coalesce(' `' || entry_point || '`', '') || ' declared above: write '
                  || 'the code above with the function''s body filled in (any helper functions before it, no main '
                  || 'function); the tests call the function.'
             WHEN entry_point IS NOT NULL THEN 'Your code must define `' || entry_point || '`.' END,
        'Write a complete ' || lang_name || ' solution in a single ```' || lang || ' code block.') AS prompt
FROM p
