-- Skywork-OR1 offline filter: keep problems the difficulty model solves sometimes but not always,
-- {{ skywork_min_correct }} <= correct <= n - 1 (drops all-wrong and all-right groups).
SELECT d.problem_id, d.source, d.n, d.model_difficulty
FROM gold.difficulty AS d
WHERE d.model_difficulty >= {{ skywork_min_correct }} AND d.model_difficulty <= d.n - 1
