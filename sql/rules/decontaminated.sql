-- keep: problems sharing no word {{ ngram_n }}-gram with a benchmark problem (silver.contamination from
-- `factory decontam`; benchmark problems themselves are not flagged against themselves)
SELECT problem_id FROM silver.problems
WHERE problem_id NOT IN (SELECT problem_id FROM silver.contamination WHERE contaminated AND ngram_n = {{ ngram_n }})
