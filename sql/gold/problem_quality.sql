-- Skywork-OR1 LLM-as-judge quality filter: per problem, the votes of every judge in silver.quality_votes
-- (each judge's latest request only, so re-judging with new settings supersedes older votes) and
-- keep = valid votes >= {{ quality_min_valid_votes }} summed over all judges. 'unparsed' answers never count
-- as valid. Problems without votes are absent (not judged is not the same as judged bad).
WITH latest AS (
    SELECT problem_id, judge, request_hash FROM silver.quality_votes
    GROUP BY problem_id, judge, request_hash
    QUALIFY row_number() OVER (PARTITION BY problem_id, judge ORDER BY max(created_at) DESC, request_hash) = 1
), per_judge AS (
    SELECT v.problem_id, v.judge, count(*) AS votes,
           count(*) FILTER (WHERE v.vote = 'valid') AS valid_votes,
           count(*) FILTER (WHERE v.vote = 'invalid') AS invalid_votes,
           count(*) FILTER (WHERE v.vote = 'unparsed') AS unparsed_votes
    FROM silver.quality_votes AS v JOIN latest USING (problem_id, judge, request_hash)
    GROUP BY ALL
)
SELECT j.problem_id, p.source, count(*) AS judges, sum(j.votes)::BIGINT AS votes,
       sum(j.valid_votes)::BIGINT AS valid_votes, sum(j.invalid_votes)::BIGINT AS invalid_votes,
       sum(j.unparsed_votes)::BIGINT AS unparsed_votes,
       to_json(map(list(j.judge ORDER BY j.judge), list(j.valid_votes ORDER BY j.judge))) AS valid_by_judge,
       sum(j.valid_votes) >= {{ quality_min_valid_votes }} AS keep
FROM per_judge AS j JOIN silver.problems AS p USING (problem_id)
GROUP BY j.problem_id, p.source
