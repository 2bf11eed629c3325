"""Answer-checking rules for final-answer tasks.

A problem of these tasks has one test of kind ``answer`` (silver.tests): ``expected`` is the reference answer and
``comparison`` names the rule. Its ground truth, as exported and as the reward reads it, is JSON::

    {"rule": "reasoning_gym", "answer": "30", "task": "basic_arithmetic", "entry": {question, answer, metadata}}
    {"rule": "numeric", "answer": "3.5", "atol": 1e-6, "rtol": 1e-9}
    {"rule": "exact" | "casefold" | "choice", "answer": "(B)"}

Rules: ``exact`` (whitespace-trimmed equality), ``casefold`` (case-insensitive, inner whitespace collapsed),
``numeric`` (numbers, fractions a/b, thousands separators; |x - y| <= atol + rtol |y|), ``choice`` (multiple choice:
the option letter, "(B)", "B)" or "B" all read as B) and ``reasoning_gym`` (the task's own verifier,
``score_answer(answer, entry)`` of reasoning_gym; correct only at score exactly 1.0, the score is kept; a score
above 1.0, a verifier's float drift, reads as partial credit, never correct). The policy's answer is the text inside
its last ``<<<...>>>`` marker (R1-Code-Interpreter's final-answer format); a response without one has no answer and
is not correct.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

ANSWER_RULES = ("exact", "casefold", "numeric", "choice", "reasoning_gym")
_MARKER = re.compile(r"<<<(.*?)>>>", re.S)


@dataclass(frozen=True)
class AnswerCheck:
    """Outcome of checking one answer: ``score`` in [0, 1] (the verifier's; partial credit possible),
    ``correct`` (score 1.0), the extracted ``answer`` (None: no final-answer marker) and a note."""

    correct: bool
    score: float
    answer: str | None
    note: str = ""


def extract_final_answer(text: str | None) -> str | None:
    """The text inside the last ``<<<...>>>`` marker, trimmed; None when there is none."""
    found = _MARKER.findall(text or "")
    return found[-1].strip() if found else None


def is_answer_ground_truth(gt) -> bool:
    """Whether a ground truth (dict or JSON string) is a final-answer one (not a code-test one)."""
    try:
        gt = json.loads(gt) if isinstance(gt, str) else gt
    except ValueError:
        return False
    return isinstance(gt, dict) and gt.get("rule") in ANSWER_RULES and "answer" in gt and "tests" not in gt


def parse_ground_truth(gt) -> dict:
    """The ground truth as a dict; ValueError naming what is wrong (the dataset's fault, never the policy's)."""
    try:
        gt = json.loads(gt) if isinstance(gt, str) else gt
    except ValueError as exc:
        raise ValueError(f"answer ground truth is not JSON: {exc}") from None
    if not isinstance(gt, dict):
        raise ValueError(f"answer ground truth must be an object, got {type(gt).__name__}")
    rule = gt.get("rule")
    if rule not in ANSWER_RULES:
        raise ValueError(f"answer ground truth 'rule' must be one of {list(ANSWER_RULES)}, got {rule!r}")
    if gt.get("answer") is None:
        raise ValueError("answer ground truth lacks 'answer'")
    if rule == "reasoning_gym" and (not isinstance(gt.get("task"), str) or not isinstance(gt.get("entry"), dict)):
        raise ValueError("reasoning_gym ground truth needs 'task' (dataset name) and 'entry' (the generated item)")
    return gt


def _number(text: str) -> float | None:
    s = text.strip().rstrip(".").replace(",", "").replace("$", "").replace("%", "").strip()
    if not s:
        return None
    try:
        return float(Fraction(s)) if "/" in s else float(s)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


_CHOICE = re.compile(r"^\(?\s*([A-Za-z])\s*[\).:]?(?:\s|$)")


def _choice(text: str) -> str | None:
    m = _CHOICE.match(text.strip())
    return m.group(1).upper() if m else None


@lru_cache(maxsize=None)
def _rg_scorer(task: str):
    try:
        import reasoning_gym
    except ImportError as exc:   # an environment problem, not the policy's: raise
        raise RuntimeError("the reasoning_gym rule needs the `reasoning-gym` package (pip install "
                           "'code-rl-factory[reasoning]')") from exc
    return reasoning_gym.get_score_answer_fn(task)


def check_answer(answer: str | None, gt) -> AnswerCheck:
    """Check an extracted answer against a ground truth (see the module docstring). Never raises because of
    the answer; a malformed ground truth raises ValueError."""
    gt = parse_ground_truth(gt)
    rule, ref = gt["rule"], str(gt["answer"])
    if answer is None:
        return AnswerCheck(False, 0.0, None, "no <<<final answer>>>")
    if rule == "reasoning_gym":
        try:
            score = float(_rg_scorer(gt["task"])(answer, gt["entry"]) or 0.0)
        except RuntimeError:
            raise
        except Exception as exc:  # noqa: BLE001 - the verifier choking on a policy's answer scores 0
            return AnswerCheck(False, 0.0, answer, f"verifier raised {type(exc).__name__}")
        if math.isnan(score):
            return AnswerCheck(False, 0.0, answer, "verifier scored NaN")
        if score > 1.0:   # float drift of partial credit (spell_backward: the answer + any suffix sums to 1+2e-16)
            return AnswerCheck(False, math.nextafter(1.0, 0.0), answer, f"verifier score {score!r} above 1: partial")
        return AnswerCheck(score == 1.0, max(0.0, score), answer)
    if rule == "exact":
        ok = answer.strip() == ref.strip()
    elif rule == "casefold":
        ok = " ".join(answer.split()).casefold() == " ".join(ref.split()).casefold()
    elif rule == "numeric":
        got, want = _number(answer), _number(ref)
        if want is None:
            raise ValueError(f"numeric rule: reference answer {ref!r} is not a number")
        atol, rtol = float(gt.get("atol") or 1e-6), float(gt.get("rtol") or 1e-9)
        ok = got is not None and abs(got - want) <= atol + rtol * abs(want)
    else:   # choice
        want = _choice(ref)
        if want is None:
            raise ValueError(f"choice rule: reference answer {ref!r} names no option letter")
        ok = _choice(answer) == want
    return AnswerCheck(ok, 1.0 if ok else 0.0, answer)
