"""Final-answer tasks (ReasoningGym, SymBench/BBH-style): answer-checking rules and the R1-Code-Interpreter reward.

- :mod:`factory.answers.checks`: the rules a stored answer test names (``exact``, ``casefold``, ``numeric``,
  ``choice`` and ``reasoning_gym``, the task's own verifier) and the ``<<<answer>>>`` extraction;
- :mod:`factory.answers.r1ci`: the R1-CI reward (+1 correct final answer, +/-0.1 format, -0.1 beyond 6 turns) and
  the plain answer reward of the no-rollout exports (``binary``: 1.0 right final answer, else 0.0);
- :mod:`factory.answers.tasks`: gold.answer_tasks rows as trainer prompts (never holding the answer).

Importable without DuckDB or torch; reasoning_gym is imported only when its rule is used.
"""
from factory.answers.checks import (  # noqa: F401
    ANSWER_RULES, AnswerCheck, check_answer, extract_final_answer, is_answer_ground_truth, parse_ground_truth,
)
from factory.answers.r1ci import (  # noqa: F401
    ANSWER_REWARD_KINDS, R1CIReward, answer_reward, answer_reward_kind, r1ci_reward, score_trajectory,
)
