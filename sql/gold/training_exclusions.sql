-- Why a problem is kept out of the training views (rl_problems, rm_pairs, bon_candidates): one row
-- per (problem, reason). `applied` is true when the reason removes the problem under this curation's settings
-- (exclude = {{ exclude_label }}; `factory curate --set exclude=[]` keeps them all, opting in explicitly):
--   contaminated  shares word n-grams with a benchmark item (silver.contamination, `factory decontam`)
--   duplicate     not the keeper of its duplicate cluster (silver.dedup_clusters, `factory dedup`); benchmark
--                 sources ({{ benchmarks_label }}) are exempt: they only reach test splits,
--                 and HumanEval next to HumanEval+ is two benchmarks, not a duplicate
--   other_task    the source is not code generation (CRUXEval: output prediction - the question is the answer)
--   environment   the reference cannot run here: a module it imports is missing (gold.environment_failures)
--   validation    AceCoder test validation excluded it (gold.problem_validation; always applied)
WITH benchmarks AS (
    SELECT unnest({{ benchmarks }}) AS source
), contaminated AS (
    SELECT c.problem_id, 'contaminated' AS reason,
           count(*) || ' benchmark item(s) share ' || any_value(c.ngram_n) || '-grams, e.g. '
               || arg_max(b.source || ' ' || b.source_id || ' (' || c.matched_ngrams || ' shared)', c.matched_ngrams)
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
    WHERE NOT d.is_keeper AND p.source NOT IN (SELECT source FROM benchmarks)
), other_task AS (
    SELECT problem_id, 'other_task' AS reason,
           'task is ' || json_extract_string(metadata, '$.task') || ', not code generation' AS detail
    FROM silver.problems
    WHERE coalesce(json_extract_string(metadata, '$.task'), 'code_generation') <> 'code_generation'
), environment AS (
    SELECT problem_id, 'environment' AS reason, 'reference needs missing module(s): ' || missing_modules AS detail
    FROM gold.environment_failures
), validation AS (
    SELECT problem_id, 'validation' AS reason, exclude_reason AS detail
    FROM gold.problem_validation
    WHERE excluded AND oracle_tested > 0
), reasons AS (
    SELECT * FROM contaminated UNION ALL SELECT * FROM duplicate UNION ALL SELECT * FROM other_task
    UNION ALL SELECT * FROM environment UNION ALL SELECT * FROM validation
)
SELECT r.problem_id, p.source, r.reason, r.detail,
       (r.reason = 'validation' OR list_contains({{ exclude }}, r.reason)) AS applied
FROM reasons AS r
JOIN silver.problems AS p USING (problem_id)
