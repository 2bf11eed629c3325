"""The R1-Code-Interpreter reward (reference/seed-papers.md section 5, "use these" summary).

    reward = 1[final answer correct]                    (the task's rule: factory.answers.checks)
           + 0.1 if every generation step is well formatted, else -0.1
           - 0.1 if more than 6 generation turns were used

A trajectory is a list of turns ``{"role": "assistant" | "interpreter", "text": ...}``: the policy's generation
turns, each (but the last) ending in one ```python block that the interpreter ran, whose output is the following
interpreter turn (``OBS_HEADER`` + an ```output fence, never trained on). Well formatted: a step followed by an
interpreter turn holds exactly one complete ```python block and no final answer; the last step holds a
``<<<answer>>>`` and no code block left unexecuted. The final answer is read from the policy's own turns only
(a program printing ``<<<x>>>`` does not answer for it).

A plain response string (what verl / TRL hand a reward function) is split back into turns at the interpreter
blocks :func:`observation_text` writes.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from factory.answers.checks import check_answer, extract_final_answer, parse_ground_truth

CORRECT, FORMAT_BONUS, TURN_PENALTY, MAX_FREE_TURNS = 1.0, 0.1, 0.1, 6
OBS_HEADER = "Code Execution Results:\n"
_CODE = re.compile(r"```python[ \t]*\n(.*?)```", re.S)
_OBS = re.compile(r"\n?Code Execution Results:\n```output\n.*?\n```\n", re.S)


def code_blocks(text: str) -> list[str]:
    """The complete ```python blocks of a generation turn, in order."""
    return _CODE.findall(text or "")


def observation_text(stdout: str, stderr: str = "", result: str | None = None, error: str | None = None,
                     status: str = "ok", limit_chars: int = 2000) -> str:
    """The interpreter turn appended after a code block: stdout, the cell's value, the error, capped."""
    parts = [stdout.rstrip("\n")] if stdout else []
    if result is not None and not stdout:
        parts.append(result)
    if error:
        parts.append(error.rstrip("\n"))
    elif stderr:
        parts.append(stderr.rstrip("\n"))
    if status in ("timeout", "killed", "closed"):
        parts.append(f"[{status}]")
    body = "\n".join(parts) or "[no output]"
    if len(body) > limit_chars:
        body = body[:limit_chars] + f"\n[... {len(body) - limit_chars} more characters cut]"
    body = body.replace("```", "` ` `")     # the fence stays the interpreter's
    return f"\n{OBS_HEADER}```output\n{body}\n```\n"


def split_turns(response: str) -> list[dict]:
    """A flat response (policy text with interpreter blocks inline) back into turns."""
    turns, pos = [], 0
    for m in _OBS.finditer(response or ""):
        turns += [{"role": "assistant", "text": response[pos:m.start()]}, {"role": "interpreter", "text": m.group(0)}]
        pos = m.end()
    turns.append({"role": "assistant", "text": (response or "")[pos:]})
    return turns


def step_well_formatted(text: str, final: bool) -> bool:
    blocks = code_blocks(text)
    answer = extract_final_answer(text)
    return (answer is not None and not blocks) if final else (len(blocks) == 1 and answer is None)


@dataclass(frozen=True)
class R1CIReward:
    reward: float
    correct: bool
    score: float               # the rule's / verifier's score in [0, 1]
    format_ok: bool
    turns: int                 # generation turns (policy steps)
    code_calls: int            # interpreter turns
    answer: str | None
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def score_trajectory(turns: list[dict], ground_truth, *, max_free_turns: int = MAX_FREE_TURNS,
                     format_bonus: float = FORMAT_BONUS, turn_penalty: float = TURN_PENALTY) -> R1CIReward:
    """The R1-CI reward of a trajectory (see the module docstring)."""
    steps = [t for t in turns if t.get("role") == "assistant"]
    calls = sum(1 for t in turns if t.get("role") == "interpreter")
    if not steps:
        steps = [{"role": "assistant", "text": ""}]
    fmt = all(step_well_formatted(t.get("text") or "", i == len(steps) - 1) for i, t in enumerate(steps))
    answer = extract_final_answer(steps[-1].get("text") or "")
    check = check_answer(answer, ground_truth)
    reward = (CORRECT if check.correct else 0.0) + (format_bonus if fmt else -format_bonus)
    if len(steps) > max_free_turns:
        reward -= turn_penalty
    return R1CIReward(round(reward, 6), check.correct, check.score, fmt, len(steps), calls, answer, check.note)


def r1ci_reward(response: str, ground_truth, **kw) -> R1CIReward:
    """The R1-CI reward of a flat response string (interpreter blocks inline, as a trainer decodes it)."""
    return score_trajectory(split_turns(response if isinstance(response, str) else str(response or "")),
                            ground_truth, **kw)


# -- the plain answer reward (no-rollout exports: gold.answer_tasks) -----------------------------------------
ANSWER_REWARD_KINDS = ("binary", "soft", "r1ci")


def answer_reward_kind(ground_truth) -> str:
    """The reward a final-answer ground truth asks for: its ``reward.kind`` (``binary``: 1.0 for a right final
    answer, else 0.0; ``soft``: the rule's / verifier's score in [0, 1]; ``r1ci``: the shaped R1-CI reward), or
    ``r1ci`` when it carries none (the multi-turn stage exports of `factory interpreter-rollouts release`).
    Another kind is the dataset's fault: ValueError."""
    spec = parse_ground_truth(ground_truth).get("reward")
    if spec is None:
        return "r1ci"
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind not in ANSWER_REWARD_KINDS:
        raise ValueError(f"final-answer ground truth 'reward' must be {{\"kind\": one of "
                         f"{list(ANSWER_REWARD_KINDS)}}}, got {spec!r}")
    return kind


def response_turns(response) -> list[dict]:
    """A trainer's completion as turns: a string (verl, TRL text) is split at the interpreter blocks; a list of
    chat messages (TRL conversational) maps assistant messages to policy steps and every other role (tool,
    interpreter) to interpreter output."""
    if isinstance(response, list):
        return [{"role": "assistant" if m.get("role") == "assistant" else "interpreter",
                 "text": str(m.get("content") or "")} for m in response if isinstance(m, dict)]
    return split_turns(response if isinstance(response, str) else str(response or ""))


def answer_reward(response, ground_truth) -> float:
    """The reward of one completion of a final-answer task, of the kind its ground truth names
    (:func:`answer_reward_kind`). The answer is the last ``<<<...>>>`` of the policy's last step; a program's
    printed ``<<<x>>>`` never answers for it."""
    result = score_trajectory(response_turns(response), ground_truth)
    return {"binary": 1.0 if result.correct else 0.0, "soft": float(result.score)}.get(
        answer_reward_kind(ground_truth), result.reward)
