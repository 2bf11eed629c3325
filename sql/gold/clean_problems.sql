-- Training-safe problems: no applied reason in gold.training_exclusions (contamination, non-keeper duplicates,
-- other tasks, broken environment, failed validation). `split` is the split training sees: problems of the
-- benchmark sources ({{ benchmarks_label }}) are always 'test' - a benchmark never reaches a train split.
SELECT
    p.problem_id,
    p.source,
    CASE WHEN list_contains({{ benchmarks }}, p.source) THEN 'test' ELSE p.split END AS split,
    list_contains({{ benchmarks }}, p.source) AS benchmark
FROM silver.problems AS p
WHERE p.problem_id NOT IN (SELECT problem_id FROM gold.training_exclusions WHERE applied)
