"""Final-answer tasks (ReasoningGym, SymBench/BBH-style): the answer-checking rules (:mod:`factory.answers.checks`),
the R1-Code-Interpreter and plain answer rewards (:mod:`factory.answers.r1ci`) and gold.answer_tasks rows as trainer
prompts (:mod:`factory.answers.tasks`). Importable without DuckDB or torch; reasoning_gym loads only for its rule.
"""
from factory.answers.checks import (  # noqa: F401
    ANSWER_RULES, AnswerCheck, check_answer, extract_final_answer, is_answer_ground_truth, parse_ground_truth,
)
from factory.answers.r1ci import (  # noqa: F401
    ANSWER_REWARD_KINDS, R1CIReward, answer_reward, answer_reward_kind, r1ci_reward, score_trajectory,
)
