"""Code-execution rewards through the factory sandbox, with the signatures RL trainers expect.

- verl: ``compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float``
  (verl 0.9: ``reward.custom_reward_function.path=<factory/reward.py>``, ``...name=compute_score``)
  and ``compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **kw) -> list[float]``
  for verl's ``reward_model.reward_manager=batch`` (one sandbox round for the whole batch)
- TRL GRPOTrainer: ``trl_reward(completions, ground_truth, **kwargs) -> list[float]`` (the dataset's
  ``ground_truth`` column is passed as a keyword argument)
- OpenRLHF: ``reward_func(queries, prompts, labels, **kwargs) -> {"rewards", "scores", "extra_logs"}``
  (``--reward.remote_url /path/to/factory/reward.py``, ``--data.label_key label``; this file is loadable by path)
- the local GRPO loop: ``score_completions(completions, ground_truths) -> list[float]``

ground_truth is what `factory export` writes: {"inputs", "outputs"[, "fn_name"]} for stdio/call problems, or
{"tests": [...], "entry_point", "test_preamble"} for assert/check/pytest problems. The reward is the fraction
of tests passed (soft, AceCoder-style) or 1.0 only when all pass (``binary=True``); code that cannot be
extracted scores 0. Infra errors raise instead of silently scoring 0; anything the candidate causes (bad text,
crashes, timeouts, output it cannot decode) only lowers its score.

Set ``FACTORY_VERIFIER_URL=http://host:port`` (or call :func:`use_verifier`) and every entry point sends its
batch to a `factory serve` verifier instead of the in-process pool: same extraction, same tests, same reward;
a verifier failure raises :class:`factory.serve.client.VerifierError` instead of scoring 0.

Tests judged inside the candidate's own process (``Verdict.judged_in_process``: kind ``unittest``, e.g.
BigCodeBench) can be forged by the program, so by default (``exclude_in_process=True``) they count neither as
passed nor in the total; a completion whose tests are all of that kind then scores 0. Pass
``exclude_in_process=False`` to score them like any other test.
"""
from __future__ import annotations

import atexit
import json
import os
import threading

from factory.generation.sample import extract_for_tests
from factory.sandbox import Job, Limits, SandboxPool, TestSpec, clean_text
from factory.sandbox.rows import merge_verdicts, tests_reward

_POOL: SandboxPool | None = None
_LOCK = threading.Lock()
DEFAULT_LIMITS = Limits(cpu_s=2.0, wall_min_s=6.0)
_VERIFIER_URL: str | None = None


def use_verifier(url: str | None) -> None:
    """Score through a `factory serve` URL (None: back to the in-process pool). Same as FACTORY_VERIFIER_URL."""
    global _VERIFIER_URL
    _VERIFIER_URL = url


def verifier_url() -> str | None:
    return _VERIFIER_URL or os.environ.get("FACTORY_VERIFIER_URL") or None


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
    """(tests, entry_point, preamble) from a ground-truth dict or its JSON string.

    Optional judging keys (written by `factory export` for problems with a rule in silver.checkers):
    ``comparison``/``atol``/``rtol`` for ``inputs``/``outputs`` ground truths, and ``checker`` (a checker
    program's source) for the stdio/call tests of any form. ``cpu_s`` is read by :func:`ground_truth_cpu_s`."""
    gt = json.loads(gt) if isinstance(gt, str) else gt
    if "tests" in gt:
        tests = [TestSpec(test_id=t.get("test_id") or str(i), kind=t["kind"], code=t.get("code"), input=t.get("input"),
                          expected=t.get("expected"), comparison=t.get("comparison") or "exact", atol=t.get("atol"),
                          rtol=t.get("rtol"))
                 for i, t in enumerate(gt["tests"])]
        entry, preamble = gt.get("entry_point"), gt.get("test_preamble") or ""
    else:
        inputs, outputs = gt["inputs"], gt["outputs"]
        atol, rtol = gt.get("atol"), gt.get("rtol")
        if gt.get("fn_name"):
            tests = [TestSpec(str(i), "call", input=json.dumps(a), expected=json.dumps(o), atol=atol, rtol=rtol)
                     for i, (a, o) in enumerate(zip(inputs, outputs))]
            entry, preamble = gt["fn_name"], ""
        else:
            comparison = gt.get("comparison") or "token"
            tests = [TestSpec(str(i), "stdio", input=a, expected=o, comparison=comparison, atol=atol, rtol=rtol)
                     for i, (a, o) in enumerate(zip(inputs, outputs))]
            entry, preamble = None, ""
    if isinstance(gt.get("checker"), str) and gt["checker"].strip():
        apply_checker(tests, gt["checker"])
    return tests, entry, preamble


def apply_checker(tests: list[TestSpec], checker: str) -> None:
    """A problem's checker program judges its tests that have outputs to compare (stdio and call)."""
    for t in tests:
        if t.kind in ("stdio", "call"):
            t.checker = checker


def ground_truth_cpu_s(gt) -> float | None:
    """The problem's calibrated CPU limit carried by a ground truth (``cpu_s``), if any and sane."""
    gt = json.loads(gt) if isinstance(gt, str) else gt
    value = gt.get("cpu_s") if isinstance(gt, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 600:
        return float(value)
    return None


def _text(completion) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return "".join(str(m.get("content") or "") for m in completion if isinstance(m, dict))
    return completion if isinstance(completion, str) else str(completion or "")


def score_completions(completions: list, ground_truths: list, *, binary: bool = False,
                      limits: Limits = DEFAULT_LIMITS, exclude_in_process: bool = True) -> list[float]:
    """Reward per completion: fraction of its problem's tests passed (1.0/0.0 when binary).

    A test is one ground-truth test: pytest/unittest cases (``test_id::case``) of it pass only if all pass.
    exclude_in_process=True (default) leaves out tests judged in the candidate's own process (forgeable);
    with nothing left the reward is 0. Raises only on sandbox infra errors, never on a candidate's failure.
    With a verifier URL set (:func:`use_verifier`, FACTORY_VERIFIER_URL) the batch goes to `factory serve`.
    """
    url = verifier_url()
    if url:
        from factory.serve.client import VerifierClient

        return VerifierClient(url).rewards([_text(c) for c in completions], list(ground_truths), binary=binary,
                                           exclude_in_process=exclude_in_process,
                                           limits={"cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb})
    jobs, index = [], {}
    rewards = [0.0] * len(completions)
    for i, (completion, gt) in enumerate(zip(completions, ground_truths)):
        tests, entry, preamble = tests_from_ground_truth(gt)
        try:
            code, status = extract_for_tests(_text(completion), entry, [t.kind for t in tests])
        except Exception:  # noqa: BLE001 - unextractable candidate text scores 0
            continue
        if status != "ok" or not tests:
            continue
        pid = f"c{i}"
        index[pid] = (i, {t.test_id for t in tests})
        jobs.append(Job(pid, clean_text(code), tests, entry_point=entry, preamble=preamble,
                        cpu_s=ground_truth_cpu_s(gt)))
    verdicts = []
    for v in _pool(limits).run(jobs):
        if v.status == "infra_error":
            raise RuntimeError(f"sandbox infra error while scoring: {v.error_message}")
        verdicts.append(v)
    outcomes: dict[str, dict[str, tuple[str, bool]]] = {}   # program -> test row -> (worst case status, in process)
    for (pid, test_id), (v, in_process) in merge_verdicts(verdicts).items():
        outcomes.setdefault(pid, {})[test_id] = (v.status, in_process)
    for pid, (i, test_ids) in index.items():
        rewards[i] = tests_reward(outcomes.get(pid, {}), test_ids, exclude_in_process, binary)
    return rewards


def compute_score(data_source, solution_str, ground_truth, extra_info=None, *,
                  exclude_in_process: bool = True) -> float:
    """verl custom reward function (in-process-judged tests excluded unless exclude_in_process=False)."""
    return score_completions([solution_str], [ground_truth], exclude_in_process=exclude_in_process)[0]


def trl_reward(completions, ground_truth, exclude_in_process: bool = True, **kwargs) -> list[float]:
    """TRL GRPOTrainer reward function (dataset column `ground_truth`; in-process-judged tests excluded unless
    exclude_in_process=False, e.g. via functools.partial)."""
    return score_completions(list(completions), list(ground_truth), exclude_in_process=exclude_in_process)


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, *,
                        exclude_in_process: bool = True, **kwargs) -> list[float]:
    """verl batch reward manager entry (`reward_model.reward_manager=batch`): all completions in one pool run."""
    return score_completions(list(solution_strs), list(ground_truths), exclude_in_process=exclude_in_process)


def _response(query: str, prompt: str) -> str:
    """OpenRLHF passes the decoded prompt + response as `query`; the reward scores the response part."""
    return query[len(prompt):] if prompt and query.startswith(prompt) else query


def reward_func(queries, prompts, labels, **kwargs) -> dict:
    """OpenRLHF custom reward (`--reward.remote_url <this file>`, labels = the export's `label` column)."""
    import torch

    scores = score_completions([_response(q, p) for q, p in zip(queries, prompts)], list(labels))
    tensor = torch.tensor(scores, dtype=torch.float32)
    return {"rewards": tensor, "scores": tensor.clone(),
            "extra_logs": {"pass_rate": tensor.clone(), "all_passed": (tensor == 1.0).float()}}
