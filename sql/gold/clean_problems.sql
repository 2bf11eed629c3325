-- Training-safe problems: keepers of their duplicate cluster (or never clustered), with no contamination
-- match under the configured rule, from sources that are not themselves used as benchmarks.
SELECT p.problem_id, p.source
FROM silver.problems AS p
LEFT JOIN silver.dedup_clusters AS c USING (problem_id)
WHERE coalesce(c.is_keeper, true)
  AND NOT EXISTS (SELECT 1 FROM silver.contamination AS x WHERE x.problem_id = p.problem_id AND x.contaminated)
  AND p.source NOT IN (SELECT DISTINCT benchmark FROM silver.contamination)
