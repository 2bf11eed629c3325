-- Macros available to every SQL transform (created as TEMP macros on the stage's connection).
-- Unbiased pass@k (Chen et al. 2021), numerically stable product form: 1 - prod_{i=n-c+1}^{n} (1 - k/i).
CREATE OR REPLACE TEMP MACRO pass_at_k(n, c, k) AS
    CASE WHEN k > n THEN NULL
         WHEN n - c < k THEN 1.0
         ELSE 1.0 - coalesce(list_product([1.0 - k / i FOR i IN range(n - c + 1, n + 1)]), 1.0)
    END;
