-- Training-safe problems: no applied reason in gold.training_exclusions (contamination, non-keeper duplicates,
-- other tasks, broken environment, failed validation). `split` is the split training sees: problems of the
-- benchmark sources ({{ benchmarks_label }}) are always 'test' - a benchmark never reaches a train split.
WITH benchmarks AS (
    SELECT unnest({{ benchmarks }}) AS source
)
SELECT
    p.problem_id,
    p.source,
    CASE WHEN p.source IN (SELECT source FROM benchmarks) THEN 'test' ELSE p.split END AS split,
    p.source IN (SELECT source FROM benchmarks) AS benchmark
FROM silver.problems AS p
WHERE p.problem_id NOT IN (SELECT problem_id FROM gold.training_exclusions WHERE applied)
