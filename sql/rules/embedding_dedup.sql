-- keep: problems that are not a non-keeper of an embedding-similarity cluster (cosine >= {{ threshold }} between
-- {{ model }} embeddings of the {{ text_field }}; silver.embedding_clusters from `factory dedup-embed`; Skywork-OR1's
-- embedding dedup); a problem outside every run's scope has no row and stays
SELECT problem_id FROM silver.problems
WHERE problem_id NOT IN (
    SELECT problem_id FROM silver.embedding_clusters
    WHERE NOT is_keeper AND abs(threshold - {{ threshold }}) < 1e-9 AND text_field = '{{ text_field }}'
      AND model LIKE '%{{ model }}%')
