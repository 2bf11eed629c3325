-- Why a problem is kept out of the training views (rl_problems, rm_pairs, bon_candidates): one row
-- per (problem, reason). `applied` is true when the reason removes the problem under this curation's settings
-- (exclude = {{ exclude_label }}; `factory curate --set exclude=[]` keeps them all, opting in explicitly):
--   contaminated  shares word n-grams, a test or a task lineage with a benchmark item (silver.contamination,
--                 `factory decontam`; the detail names the methods)
--   duplicate     not the keeper of its duplicate cluster (silver.dedup_clusters, `factory dedup`); benchmark
--                 sources ({{ benchmarks_label }}) are exempt: they only reach test splits (HumanEval+ is its own)
--   other_task    the source is not code generation (CRUXEval: output prediction - the question is the answer;
--                 final-answer tasks such as ReasoningGym: their RL rows are gold.answer_tasks)
--   environment   the reference cannot run here: a module it imports is missing (gold.environment_failures)
--   forgeable     every test runs inside the candidate's own process (BigCodeBench unittest files, MultiPL-E
--                 harnesses judged by exit status): the reward leaves such forgeable verdicts out by default
--   unvalidated   a problem that would reach a train split whose tests no reference validated (no oracle ran them,
--                 e.g. APPS without solutions) and that has no cross-checked generated tests (`factory gentests`)
--   validation    AceCoder test validation excluded it (gold.problem_validation; always applied), or the problem
--                 has several correct outputs (metadata needs_checker) and no checker program judges them
WITH contaminated AS (
    SELECT c.problem_id, 'contaminated' AS reason,
           string_agg(DISTINCT coalesce(c.method, 'ngram'), '+' ORDER BY coalesce(c.method, 'ngram')) || ': '
               || count(DISTINCT c.benchmark_id) || ' benchmark item(s), e.g. '
               || arg_max(b.source || ' ' || b.source_id || ' (' || CASE coalesce(c.method, 'ngram')
                      WHEN 'ngram' THEN c.matched_ngrams || ' shared ' || c.ngram_n || '-grams'
                      WHEN 'test' THEN c.matched_ngrams || ' shared test(s): ' || left(c.example_span, 80)
                      ELSE 'same task ' || c.example_span END || ')',
                  CASE coalesce(c.method, 'ngram') WHEN 'lineage' THEN 3 WHEN 'test' THEN 2 ELSE 1 END * 1000000
                  + c.matched_ngrams)
               AS detail
    FROM silver.contamination AS c
    JOIN silver.problems AS b ON b.problem_id = c.benchmark_id
    WHERE c.contaminated
    GROUP BY c.problem_id
), duplicate AS (
    SELECT d.problem_id, 'duplicate' AS reason,
           'duplicate of ' || k.source || ' ' || k.source_id || ' (kept; cluster of ' || d.cluster_size || ')' AS detail
    FROM silver.dedup_clusters AS d
    JOIN silver.problems AS k ON k.problem_id = d.cluster_id
    JOIN silver.problems AS p ON p.problem_id = d.problem_id
    WHERE NOT d.is_keeper AND NOT list_contains({{ benchmarks }}, p.source)
), other_task AS (
    SELECT problem_id, 'other_task' AS reason,
           CASE WHEN json_extract_string(metadata, '$.task') = 'answer'
                THEN 'final-answer task (rewarded by its answer): released from gold' || '.answer_tasks'  -- split: no dependency
                ELSE 'task is ' || json_extract_string(metadata, '$.task') || ', not code generation' END AS detail
    FROM silver.problems
    WHERE coalesce(json_extract_string(metadata, '$.task'), 'code_generation') <> 'code_generation'
), environment AS (
    SELECT problem_id, 'environment' AS reason, 'reference needs missing module(s): ' || missing_modules AS detail
    FROM gold.environment_failures
), unvalidated AS (
    SELECT p.problem_id, 'unvalidated' AS reason,
           'no reference validated its ' || pv.n_tests || ' test(s) and it has no cross-checked generated tests'
               AS detail
    FROM silver.problems AS p
    JOIN gold.problem_validation AS pv USING (problem_id)
    WHERE pv.oracle_tested = 0
      AND NOT list_contains({{ benchmarks }}, p.source) AND coalesce(p.split, '') <> 'test'
      AND p.problem_id NOT IN (SELECT problem_id FROM silver.tests WHERE origin = 'gentests')
), validation AS (
    SELECT problem_id, 'validation' AS reason, exclude_reason AS detail
    FROM gold.problem_validation
    WHERE excluded AND oracle_tested > 0
    UNION ALL
    -- several correct outputs (metadata needs_checker: open-r1/codeforces generated_checker) but no checker program
    -- judges them (not attached, or it does not parse): token comparison would reward only the jury's answer
    SELECT problem_id, 'validation' AS reason, 'needs_checker: several correct outputs, checker not wired' AS detail
    FROM silver.problems
    WHERE json_extract_string(metadata, '$.needs_checker') = 'true'
      AND problem_id NOT IN (SELECT problem_id FROM silver.checkers WHERE policy = 'program')
      AND problem_id NOT IN (SELECT problem_id FROM gold.problem_validation WHERE excluded AND oracle_tested > 0)
), forgeable AS (
    SELECT problem_id, 'forgeable' AS reason,
           count(*) || ' test(s), all ' || string_agg(DISTINCT kind, '/') ||
               ': judged in the program''s own process (forgeable), never rewarded' AS detail
    FROM silver.tests
    GROUP BY problem_id
    HAVING bool_and(kind IN ('unittest', 'harness'))
), reasons AS (
    SELECT * FROM contaminated UNION ALL SELECT * FROM duplicate UNION ALL SELECT * FROM other_task
    UNION ALL SELECT * FROM environment UNION ALL SELECT * FROM unvalidated UNION ALL SELECT * FROM validation UNION ALL SELECT * FROM forgeable
)
SELECT r.problem_id, p.source, r.reason, r.detail,
       (r.reason = 'validation' OR list_contains({{ exclude }}, r.reason)) AS applied
FROM reasons AS r
JOIN silver.problems AS p USING (problem_id)
