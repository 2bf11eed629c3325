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

Every entry point but score_completions routes a final-answer ground truth ({"rule", "answer", ...}:
gold.answer_tasks, ReasoningGym) to factory.answers.r1ci.answer_reward (docs/r1ci.md).

ground_truth is what `factory export` writes: {"inputs", "outputs"[, "fn_name"]} for stdio/call problems, or
{"tests": [...], "entry_point", "test_preamble"} for assert/check/pytest problems, plus the release's reward spec
``"reward": {"kind": "binary"|"soft", "tests": "hidden"|"all"}``: ``soft`` (also without a spec) is the fraction
of tests passed, ``binary`` 1.0 only when all pass; the caller's ``binary=True``/``False`` overrides every item's.
Unextractable code scores 0; infra errors, threads and forks: :func:`score_completions`. A completion identical to
one already judged in this process is served from an in-process LRU of verdicts (``VERDICT_CACHE``,
``CACHE_STATS``; ``FACTORY_VERDICT_CACHE=0`` bypasses it). The full contract: docs/reward.md.

Set ``FACTORY_VERIFIER_URL=http://host:port`` (or call :func:`use_verifier`) and every entry point sends its
batch to a `factory serve` verifier instead of the in-process pool: same extraction, same tests, same reward;
a verifier failure raises :class:`factory.sandbox.remote.VerifierError` instead of scoring 0.

Tests judged inside the candidate's own process (``Verdict.judged_in_process``: kind ``unittest``, e.g.
BigCodeBench, and every MultiPL-E ``harness``) can be forged by the program: ``exclude_in_process``
(:func:`score_completions`). A MultiPL-E ground truth (a MultiPL-E row: ``name``, ``language``, ``prompt``,
``tests``, ``stop_tokens``; or factory tests whose one test is a ``harness``, with ``language`` and optionally
``prompt`` / ``stop_tokens``) builds the candidate as MultiPL-E does (:func:`factory.sandbox.multipl_e.candidate`),
the same way as /submit, /v1/judge and execute.
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
from functools import partial

from factory.generation.sample import extract_for_tests
from factory.lake.templating import DEFAULTS as TRANSFORM_DEFAULTS
from factory.judging.cache import CacheStats, MemoryCache, enabled as cache_enabled, run_cached
from factory.judging.ground_truth import GroundTruth
from factory.sandbox import Job, Limits, SandboxPool, clean_text, languages, multipl_e
from factory.sandbox.rows import merge_verdicts, tests_reward

_STREAMS: dict = {}              # Limits -> JobStream: one warm pool per limit set, shared by every thread
_STREAMS_PID = os.getpid()        # a forked child never touches its parent's workers (their pipes, pump thread)
_LOCK = threading.Lock()
DEFAULT_LIMITS = Limits(cpu_s=float(TRANSFORM_DEFAULTS["reward_cpu_s"]), wall_min_s=6.0)
_VERIFIER_URL: str | None = None
INFRA_POLICIES = ("zero", "raise")
log = logging.getLogger("factory.reward")
INFRA_ERRORS = [0]                # items scored by the infra-error policy in this process (a counter)
# verdicts of jobs already judged in this process (factory.judging.cache: keyed by program text, tests, limits and
# judge version; GRPO groups resample identical completions); FACTORY_VERDICT_CACHE=0 bypasses it
VERDICT_CACHE = MemoryCache(int(os.environ.get("FACTORY_REWARD_CACHE_SIZE", "65536")))
CACHE_STATS = CacheStats()


def use_verifier(url: str | None) -> None:
    """Score through a `factory serve` URL (None: back to the in-process pool). Same as FACTORY_VERIFIER_URL."""
    global _VERIFIER_URL
    _VERIFIER_URL = url


def verifier_url() -> str | None:
    return _VERIFIER_URL or os.environ.get("FACTORY_VERIFIER_URL") or None


def _stream(limits: Limits):
    """The process's job stream for ``limits``: thread-safe (verl's reward loop calls from a thread pool; every
    caller's jobs interleave on the same warm workers) and fork-aware (a child process starts its own)."""
    global _STREAMS_PID
    from factory.sandbox.stream import JobStream
    with _LOCK:
        if _STREAMS_PID != os.getpid():
            _STREAMS.clear()          # the parent's pool: its pump thread does not exist here
            _STREAMS_PID = os.getpid()
        stream = _STREAMS.get(limits)
        if stream is None or stream.failed:
            stream = _STREAMS[limits] = JobStream(SandboxPool(limits))
        return stream


def _close_streams() -> None:
    if _STREAMS_PID != os.getpid():
        return
    for stream in list(_STREAMS.values()):
        with contextlib.suppress(Exception):
            stream.close(wait=1.0)
    _STREAMS.clear()


atexit.register(_close_streams)


def _parse_all(ground_truths) -> list[GroundTruth]:
    """Each item's ground truth read once (:meth:`GroundTruth.parse`), once per batch for the items of a group
    (GRPO's completions of one prompt: the same string or object); a malformed one is the dataset's fault, not the
    program's: ValueError naming the item."""
    out, seen = [], {}
    for i, gt in enumerate(ground_truths):
        key = gt if isinstance(gt, str) else id(gt)
        try:
            out.append(seen[key] if key in seen else seen.setdefault(key, GroundTruth.parse(gt)))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"ground truth of item {i} is malformed: {type(e).__name__}: {e}") from None
    return out


def _text(completion) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return "".join(str(m.get("content") or "") for m in completion if isinstance(m, dict))
    return completion if isinstance(completion, str) else str(completion or "")


def _run_with_retry(jobs: list, limits: Limits) -> list:
    """Verdicts of ``jobs`` (never empty: run_cached); a job with an infra_error verdict is run once more."""
    verdicts = _stream(limits).run_batch(jobs)
    if not (bad := {v.program_id for v in verdicts if v.status == "infra_error"}):
        return verdicts
    again = _stream(limits).run_batch([j for j in jobs if j.program_id in bad])
    return [v for v in verdicts if v.program_id not in bad] + again


def score_completions(completions: list, ground_truths: list, *, binary: bool | None = None,
                      limits: Limits = DEFAULT_LIMITS, exclude_in_process: bool = True,
                      on_infra_error: str | None = None) -> list[float]:
    """Reward per completion: fraction of its problem's tests passed, or 1.0/0.0 (all pass) when its ground
    truth's reward spec says ``binary`` (``binary=True``/``False`` overrides every item's spec).

    A test is one ground-truth test: pytest/unittest cases (``test_id::case``) of it pass only if all pass.
    exclude_in_process=True (default) leaves out tests judged in the candidate's own process (forgeable);
    with nothing left the reward is 0. Never raises because of a completion (any text, any program, any value
    it returns). A sandbox infra error (the verifier's own fault) is retried once; an item that still has one
    scores 0.0 with a logged warning and counts in ``INFRA_ERRORS`` (``on_infra_error="raise"`` or
    FACTORY_REWARD_ON_INFRA_ERROR=raise raises instead). Thread- and fork-safe: concurrent callers share one
    warm pool per limit set.
    With a verifier URL set (:func:`use_verifier`, FACTORY_VERIFIER_URL) the batch goes to `factory serve`.
    """
    if url := verifier_url():
        from factory.sandbox.remote import VerifierClient

        truths = [g.data if isinstance(g, GroundTruth) else g for g in ground_truths]
        return VerifierClient(url).rewards([_text(c) for c in completions], truths, binary=binary,
                                           exclude_in_process=exclude_in_process,
                                           limits={"cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb})
    jobs, index = [], {}
    rewards = [0.0] * len(completions)
    for i, (completion, gt) in enumerate(zip(completions, _parse_all(ground_truths))):
        if gt.answer:   # factory.answers.r1ci.answer_reward scores it (every entry point above routes it there)
            raise ValueError(f"ground truth of item {i} is malformed: a final-answer ground truth has no tests")
        if gt.language != languages.PYTHON:
            languages.require(gt.language)
        tests, entry = gt.tests, gt.entry_point
        try:
            if gt.harness is not None:   # MultiPL-E: prompt + continuation cut at the stop tokens (or the answer's
                code = multipl_e.candidate(gt.harness, _text(completion))   # program), as /submit and execute do
                status = "ok" if code.strip() else "empty"
            elif gt.language == languages.PYTHON:
                code, status = extract_for_tests(_text(completion), entry, [t.kind for t in tests])
            else:   # another language: stdio tests, the completion's fenced program
                code = languages.extract_source(_text(completion), gt.language)
                status = "ok" if code else "empty"
        except Exception:  # noqa: BLE001 - unextractable candidate text scores 0
            continue
        if status != "ok" or not tests:
            continue
        pid = f"c{i}"
        index[pid] = (i, {t.test_id for t in tests}, gt.is_binary(binary))
        jobs.append(Job(pid, clean_text(code), tests, entry_point=entry, preamble=gt.preamble, cpu_s=gt.cpu_s,
                        language=gt.language))
    store = VERDICT_CACHE if cache_enabled() else None
    call = CacheStats()
    verdicts = run_cached(jobs, limits, lambda todo: _run_with_retry(todo, limits), store, call)
    with _LOCK:
        CACHE_STATS.add(call)
    failed = {v.program_id for v in verdicts if v.status == "infra_error"}
    if failed:   # the verifier's own fault, after one retry: the documented policy, never another item's reward
        why = next(v.error_message for v in verdicts if v.status == "infra_error")
        policy = on_infra_error or os.environ.get("FACTORY_REWARD_ON_INFRA_ERROR") or "zero"
        if policy not in INFRA_POLICIES:
            raise ValueError(f"on_infra_error / FACTORY_REWARD_ON_INFRA_ERROR must be one of {INFRA_POLICIES}, "
                             f"not {policy!r}")
        if policy == "raise":
            raise RuntimeError(f"sandbox infra error while scoring: {why}")
        INFRA_ERRORS[0] += len(failed)
        log.warning("reward: %d of %d completions hit a sandbox infra error after a retry and score 0.0 (%s)",
                    len(failed), len(completions), why)
        index = {pid: item for pid, item in index.items() if pid not in failed}
    outcomes: dict[str, dict[str, tuple[str, bool]]] = {}   # program -> test row -> (worst case status, in process)
    for (pid, test_id), (v, in_process) in merge_verdicts(verdicts).items():
        outcomes.setdefault(pid, {})[test_id] = (v.status, in_process)
    for pid, (i, test_ids, item_binary) in index.items():
        rewards[i] = tests_reward(outcomes.get(pid, {}), test_ids, exclude_in_process, item_binary)
    return rewards


def compute_score(data_source, solution_str, ground_truth, extra_info=None, *,
                  exclude_in_process: bool = True) -> float:
    """verl custom reward function (in-process-judged tests excluded unless exclude_in_process=False); a
    final-answer ground truth gets the answer reward its ``reward.kind`` names (binary: 1.0 for a right final answer,
    else 0.0, as `factory export` writes for gold.answer_tasks), or without one the R1-CI reward
    (:func:`r1ci_compute_score`; the interpreter-rollouts stage exports)."""
    return trl_reward([solution_str], [ground_truth], exclude_in_process)[0]


def trl_reward(completions, ground_truth, exclude_in_process: bool = True, **kwargs) -> list[float]:
    """TRL GRPOTrainer reward function (dataset column `ground_truth`; in-process-judged tests excluded unless
    exclude_in_process=False, e.g. via functools.partial)."""
    return _with_answers(list(completions), list(ground_truth),
                         partial(score_completions, exclude_in_process=exclude_in_process))


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, *,
                        exclude_in_process: bool = True, **kwargs) -> list[float]:
    """verl batch reward manager entry (`reward_model.reward_manager=batch`): all completions in one pool run."""
    return trl_reward(solution_strs, ground_truths, exclude_in_process)


def _response(query: str, prompt: str) -> str:
    """OpenRLHF passes the decoded prompt + response as `query`; the reward scores the response part."""
    return query[len(prompt):] if prompt and query.startswith(prompt) else query


def reward_func(queries, prompts, labels, **kwargs) -> dict:
    """OpenRLHF custom reward (`--reward.remote_url <this file>`, labels = the export's `label` column)."""
    import torch

    scores = _with_answers([_response(q, p) for q, p in zip(queries, prompts)], list(labels), score_completions)
    tensor = torch.tensor(scores, dtype=torch.float32)
    return {"rewards": tensor, "scores": tensor.clone(),
            "extra_logs": {"pass_rate": tensor.clone(), "all_passed": (tensor == 1.0).float()}}


# -- final-answer tasks (R1-Code-Interpreter; factory.answers) ---------------------------------------------------
# The R1-CI reward: +1 correct final answer (<<<...>>>, by the rule or the ReasoningGym task's verifier),
# +0.1 / -0.1 format, -0.1 beyond 6 generation turns.
def _with_answers(completions: list, ground_truths: list, score_code) -> list[float]:
    """Rewards of a batch mixing final-answer ground truths (factory.answers.r1ci.answer_reward, of the kind each
    names) with code ones (``score_code(completions, ground_truths)``, one sandbox round); each ground truth
    parsed once, here."""
    from factory.answers.r1ci import answer_reward

    truths = _parse_all(ground_truths)
    if not any(t.answer for t in truths):
        return score_code(completions, truths)
    out = [answer_reward(c, t.data) if t.answer else 0.0 for c, t in zip(completions, truths)]
    code = [i for i, t in enumerate(truths) if not t.answer]
    if code:
        for i, score in zip(code, score_code([completions[i] for i in code], [truths[i] for i in code])):
            out[i] = score
    return out


def r1ci_compute_score(data_source, solution_str, ground_truth, extra_info=None) -> dict:
    """verl custom reward for final-answer ground truths: {"score": R1-CI reward, "acc", "format_ok", "turns",
    "code_calls"} (verl logs the extra keys)."""
    from factory.answers.r1ci import r1ci_reward

    r = r1ci_reward(solution_str, ground_truth)
    return {"score": r.reward, "acc": float(r.correct), "format_ok": float(r.format_ok), "turns": r.turns,
            "code_calls": r.code_calls}


def _r1ci_turns(completion) -> list[dict] | None:
    """Conversational completions (TRL multi-turn: assistant and tool messages) as R1-CI turns; None for text."""
    if not isinstance(completion, list):
        return None
    return [{"role": "assistant" if m.get("role") == "assistant" else "interpreter", "text": str(m.get("content") or "")}
            for m in completion if isinstance(m, dict)]


def r1ci_trl_reward(completions, ground_truth, **kwargs) -> list[float]:
    """TRL GRPOTrainer reward for final-answer rows (dataset column ``ground_truth``)."""
    from factory.answers.r1ci import r1ci_reward, score_trajectory

    out = []
    for c, gt in zip(completions, ground_truth):
        turns = _r1ci_turns(c)
        out.append((score_trajectory(turns, gt) if turns is not None else r1ci_reward(_text(c), gt)).reward)
    return out


def r1ci_reward_func(queries, prompts, labels, **kwargs) -> dict:
    """OpenRLHF custom reward for final-answer rows (labels = the ground truths)."""
    import torch

    from factory.answers.r1ci import r1ci_reward

    scored = [r1ci_reward(_response(q, p), gt) for q, p, gt in zip(queries, prompts, labels)]
    rewards = torch.tensor([s.reward for s in scored], dtype=torch.float32)
    correct = torch.tensor([float(s.correct) for s in scored], dtype=torch.float32)
    return {"rewards": rewards, "scores": correct, "extra_logs": {"correct": correct.clone(),
            "format_ok": torch.tensor([float(s.format_ok) for s in scored])}}
