-- keep: problems that are not a non-keeper of an embedding-similarity cluster (cosine >= {{ threshold }} between
-- MiniLM embeddings; silver.embedding_clusters from `factory dedup-embed`; Skywork-OR1's embedding dedup)
SELECT problem_id FROM silver.problems
WHERE problem_id NOT IN (
    SELECT problem_id FROM silver.embedding_clusters
    WHERE NOT is_keeper AND abs(threshold - {{ threshold }}) < 1e-9 AND model LIKE '%{{ model }}%')
