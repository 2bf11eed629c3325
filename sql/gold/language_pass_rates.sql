-- Pass rates per (problem, language, origin): the same problems judged in several languages (CodeContests ships
-- C++/Java/Python references) give one row per language, so reference agreement and difficulty are read per
-- language. Reads gold.program_pass_rates (complete programs only).
SELECT problem_id, language, origin,
       count(*)::BIGINT AS programs,
       avg(pass_rate) AS mean_pass_rate,
       count(*) FILTER (WHERE all_passed)::BIGINT AS all_passed
FROM gold.program_pass_rates
WHERE complete
GROUP BY problem_id, language, origin
