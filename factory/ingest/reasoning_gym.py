"""ReasoningGym tasks as final-answer problems (R1-Code-Interpreter's 84 ReasoningGym tasks).

`factory ingest reasoning-gym --tasks basic_arithmetic,count_primes --size N --seed S` generates N items of each
named task with reasoning_gym's own seeded generator (same seed -> same items), checks that the task's verifier
(``score_answer``) accepts each stored item's answer after the JSON round trip the lake makes (a task whose
verifier needs state the item does not carry is refused, naming it), and ingests each task as the source
``reasoning-gym-<task>``: one problem per item with one test of kind ``answer`` (expected = the reference
answer, comparison = ``reasoning_gym``); the item itself (question, answer, metadata) rides in the problem's
metadata for the verifier. The problems' ``metadata.task`` is ``answer``: code-generation views leave them out
(gold.training_exclusions ``other_task``); gold.answer_tasks and `factory interpreter-rollouts` read them.
"""
from __future__ import annotations

import json
from pathlib import Path

from factory.errors import FactoryError
from factory.ingest.normalize import Normalized, TestRow, input_error, require

RG_LICENSE = "Apache-2.0 (reasoning-gym generators)"


def available_tasks() -> list[str]:
    import reasoning_gym

    return sorted(reasoning_gym.factory.DATASETS)


def generate_records(task: str, size: int, seed: int) -> list[dict]:
    """The task's first ``size`` items for ``seed`` as JSON-safe records, each verified by the task's verifier."""
    try:
        import reasoning_gym
    except ImportError as exc:
        raise FactoryError("ingest reasoning-gym needs the `reasoning-gym` package "
                           "(pip install 'code-rl-factory[reasoning]')") from exc
    if task not in reasoning_gym.factory.DATASETS:
        close = [t for t in available_tasks() if task.split("_")[0] in t][:8]
        raise FactoryError(f"unknown reasoning-gym task {task!r}" + (f"; close: {', '.join(close)}" if close else
                                                                      f"; {len(available_tasks())} tasks known"))
    if size < 1:
        raise FactoryError("--size must be >= 1")
    try:
        ds = reasoning_gym.create_dataset(task, size=size, seed=seed)
    except Exception as exc:  # noqa: BLE001 - the task's own generator refused its configuration
        raise FactoryError(f"reasoning-gym task {task!r} cannot generate (size={size}, seed={seed}): "
                           f"{type(exc).__name__}: {exc}") from None
    scorer = reasoning_gym.get_score_answer_fn(task)
    out = []
    for i in range(size):
        entry = json.loads(json.dumps(ds[i], default=str, sort_keys=True))
        if entry.get("answer") is None:
            raise FactoryError(f"reasoning-gym task {task!r} item {i}: no reference answer (not a final-answer task)")
        score = scorer(entry["answer"], entry)
        if score != 1.0:
            raise FactoryError(f"reasoning-gym task {task!r} item {i}: its own verifier scores the stored reference "
                               f"answer {score!r}, not 1.0 (the item needs state the lake cannot keep); task not "
                               "supported")
        out.append({"id": f"{task}/{seed}/{i}", "task": task, "seed": seed, "size": size, "index": i,
                    "question": entry["question"], "answer": str(entry["answer"]), "entry": entry})
    return out


def write_task_file(folder: Path, task: str, size: int, seed: int) -> Path:
    """The generated records as JSONL (sorted keys: same seed -> same bytes -> re-ingest is a no-op)."""
    path = Path(folder) / f"{task}-size{size}-seed{seed}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for rec in generate_records(task, size, seed):
            fh.write(json.dumps(rec, sort_keys=True, ensure_ascii=False) + "\n")
    return path


def convert(rec: dict, ctx: tuple[str, int], opts: dict) -> Normalized:
    """One generated record -> a final-answer problem (adapter ``reasoning-gym``)."""
    task = require(rec, "task", ctx)
    entry = require(rec, "entry", ctx, dict)
    answer = require(rec, "answer", ctx)
    if not isinstance(entry.get("metadata", {}), dict):
        raise input_error(ctx, "entry.metadata must be an object", "entry")
    return Normalized(
        source_id=str(require(rec, "id", ctx)), question=require(rec, "question", ctx), test_format="answer",
        tests=[TestRow("answer", expected=answer, comparison="reasoning_gym")],
        metadata={"task": "answer", "answer_rule": "reasoning_gym",
                  "reasoning_gym": {"task": task, "seed": rec.get("seed"), "size": rec.get("size"),
                                    "index": rec.get("index"), "entry": entry}},
    )


def answer_ground_truth(expected: str, rule: str, metadata: dict | None, atol: float | None = None) -> dict:
    """The reward's ground truth of a final-answer problem (factory.answers.checks format); sql/gold/answer_tasks.sql
    builds the same JSON (tests/release/test_r1ci_export.py compares them row by row)."""
    gt: dict = {"rule": rule, "answer": expected}
    rg = (metadata or {}).get("reasoning_gym") or {}
    if rule == "reasoning_gym":
        gt.update(task=rg.get("task"), entry=rg.get("entry"))
    if atol is not None:
        gt["atol"] = atol
    return gt
