"""Code-execution rewards through the factory sandbox, with the signatures RL trainers expect.

- verl: ``compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float``
  (set ``custom_reward_function.path`` to a module re-exporting it, ``custom_reward_function.name=compute_score``)
- TRL GRPOTrainer: ``trl_reward(completions, ground_truth, **kwargs) -> list[float]`` (the dataset's
  ``ground_truth`` column is passed as a keyword argument)
- the local GRPO loop: ``score_completions(completions, ground_truths) -> list[float]``

ground_truth is what `factory export` writes: {"inputs", "outputs"[, "fn_name"]} for stdio/call problems, or
{"tests": [...], "entry_point", "test_preamble"} for assert/check/pytest problems. The reward is the fraction
of tests passed (soft, AceCoder-style) or 1.0 only when all pass (``binary=True``); code that cannot be
extracted scores 0. Infra errors raise instead of silently scoring 0.
"""
from __future__ import annotations

import atexit
import json
import threading

from factory.generation.sample import extract_code
from factory.sandbox import Job, Limits, SandboxPool, TestSpec

_POOL: SandboxPool | None = None
_LOCK = threading.Lock()
DEFAULT_LIMITS = Limits(cpu_s=2.0, wall_min_s=6.0)


def _pool(limits: Limits) -> SandboxPool:
    global _POOL
    with _LOCK:
        if _POOL is None or _POOL.limits != limits:
            if _POOL is not None:
                _POOL.close()
            _POOL = SandboxPool(limits)
            atexit.register(_POOL.close)
        return _POOL


def tests_from_ground_truth(gt) -> tuple[list[TestSpec], str | None, str]:
    """(tests, entry_point, preamble) from a ground-truth dict or its JSON string."""
    gt = json.loads(gt) if isinstance(gt, str) else gt
    if "tests" in gt:
        tests = [TestSpec(test_id=t.get("test_id") or str(i), kind=t["kind"], code=t.get("code"), input=t.get("input"),
                          expected=t.get("expected"), comparison=t.get("comparison") or "exact", atol=t.get("atol"))
                 for i, t in enumerate(gt["tests"])]
        return tests, gt.get("entry_point"), gt.get("test_preamble") or ""
    inputs, outputs = gt["inputs"], gt["outputs"]
    if gt.get("fn_name"):
        tests = [TestSpec(str(i), "call", input=json.dumps(a), expected=json.dumps(o)) for i, (a, o) in
                 enumerate(zip(inputs, outputs))]
        return tests, gt["fn_name"], ""
    tests = [TestSpec(str(i), "stdio", input=a, expected=o, comparison="token") for i, (a, o) in
             enumerate(zip(inputs, outputs))]
    return tests, None, ""


def _text(completion) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return "".join(m.get("content", "") for m in completion if isinstance(m, dict))
    return completion or ""


def score_completions(completions: list, ground_truths: list, *, binary: bool = False,
                      limits: Limits = DEFAULT_LIMITS) -> list[float]:
    """Reward per completion: fraction of its problem's tests passed (1.0/0.0 when binary)."""
    jobs, index = [], {}
    rewards = [0.0] * len(completions)
    for i, (completion, gt) in enumerate(zip(completions, ground_truths)):
        tests, entry, preamble = tests_from_ground_truth(gt)
        code, status = extract_code(_text(completion), entry)
        if status != "ok" or not tests:
            continue
        pid = f"c{i}"
        index[pid] = (i, len(tests))
        jobs.append(Job(pid, code, tests, entry_point=entry, preamble=preamble))
    passed: dict[str, int] = {}
    for v in _pool(limits).run(jobs):
        if v.status == "infra_error":
            raise RuntimeError(f"sandbox infra error while scoring: {v.error_message}")
        if v.status == "pass":
            passed[v.program_id] = passed.get(v.program_id, 0) + 1
    for pid, (i, n) in index.items():
        frac = passed.get(pid, 0) / n
        rewards[i] = float(frac == 1.0) if binary else frac
    return rewards


def compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float:
    """verl custom reward function."""
    return score_completions([solution_str], [ground_truth])[0]


def trl_reward(completions, ground_truth, **kwargs) -> list[float]:
    """TRL GRPOTrainer reward function (dataset column `ground_truth`)."""
    return score_completions(list(completions), list(ground_truth))
