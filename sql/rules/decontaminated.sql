-- keep: problems with no text evidence of a benchmark item in their {{ ngram_n }}-grams (silver.contamination from
-- `factory decontam`: informative shared n-grams covering a share of the item); with literal_min_ngrams > 0, also
-- no {{ literal_min_ngrams }} shared {{ ngram_n }}-grams of any kind (the papers' literal rule: one stock phrase is enough)
SELECT problem_id FROM silver.problems
WHERE problem_id NOT IN (
    SELECT problem_id FROM silver.contamination
    WHERE ngram_n = {{ ngram_n }}
      AND (contaminated OR ({{ literal_min_ngrams }} > 0 AND matched_ngrams >= {{ literal_min_ngrams }})))
