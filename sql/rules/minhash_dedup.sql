-- keep: problems that are not a non-keeper member of a duplicate cluster (exact + MinHash-LSH near duplicates,
-- silver.dedup_clusters from `factory dedup`)
SELECT problem_id FROM silver.problems
WHERE problem_id NOT IN (SELECT problem_id FROM silver.dedup_clusters WHERE NOT is_keeper)
