"""gold.answer_tasks rows as trainer RL rows: the no-rollout path of R1-Code-Interpreter tasks.

A final-answer task needs no reference program and no local rollouts to be trained on: its ground truth is the
answer check (factory.answers.checks). `factory export` writes these rows for a release holding gold.answer_tasks:

- verl: ``data_source``, ``prompt`` ([system, user] chat messages), ``ability`` 'reasoning', ``reward_model``
  {style 'rule', ground_truth}, ``extra_info`` (test_format 'answer');
- trl-grpo: ``prompt`` + a ``ground_truth`` column GRPOTrainer passes to ``factory.reward.trl_reward``;
- openrlhf: ``prompts/`` rows (``input``, ``label`` = ground truth, ``datasource``).

The ground truth is the view's answer check plus the reward spec ``{"kind": "binary"}`` (1.0 for a right final
answer, 0.0 otherwise; a release whose recipe names ``soft`` or ``r1ci`` gets that kind instead), which
``factory.reward.compute_score`` / ``trl_reward`` / ``reward_func`` route to :func:`factory.answers.r1ci.answer_reward`.

The prompt is the instruction below and the task's question, nothing else: the answer and the generated item
(whose metadata often holds the solution) stay in the ground truth.
"""
from __future__ import annotations

import json

from factory.answers.checks import parse_ground_truth
from factory.answers.r1ci import ANSWER_REWARD_KINDS

VIEW = "gold.answer_tasks"
DEFAULT_KIND = "binary"
INSTRUCTION = ("Solve the task. Reason step by step; when computing or checking helps, you may write one ```python "
               "block at a time (if a code interpreter is attached, its output is shown to you). End your reply "
               "with the final answer inside triple angle brackets: <<<your final answer>>>.")


def answer_messages(question: str) -> list[dict]:
    """The prompt of a final-answer task: the answer-format instruction (system) and the question (user)."""
    return [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": question}]


def reward_kind(manifest: dict) -> str:
    """The answer reward the release asks for: its recipe's ``reward.kind`` when that is an answer kind
    (binary | soft | r1ci), else binary."""
    kind = (((manifest.get("recipe") or {}).get("reward")) or {}).get("kind")
    return kind if kind in ANSWER_REWARD_KINDS else DEFAULT_KIND


def task_ground_truth(row: dict, kind: str) -> str:
    """The exported ground truth (JSON) of a gold.answer_tasks row: its answer check + the reward spec. A row
    whose check is malformed raises ValueError naming the problem (the lake's fault, not the trainer's)."""
    try:
        gt = parse_ground_truth(row["ground_truth"])
    except ValueError as exc:
        raise ValueError(f"{VIEW} row {row.get('problem_id')!r} (source {row.get('source')!r}), field "
                         f"ground_truth: {exc}") from None
    return json.dumps({**gt, "reward": {"kind": kind}}, sort_keys=True)


def task_row(fmt: str, t: dict, kind: str, index: int) -> dict:
    """One gold.answer_tasks row as a row of ``fmt`` (verl, trl-grpo or openrlhf; ``index``: verl's row index)."""
    prompt, truth = answer_messages(t["question"]), task_ground_truth(t, kind)
    if fmt == "verl":
        return {"data_source": t["source"], "prompt": prompt, "ability": "reasoning",
                "reward_model": {"style": "rule", "ground_truth": truth},
                "extra_info": {"index": index, "split": t.get("split"), "problem_id": t["problem_id"],
                               "source_id": t["source_id"], "entry_point": None, "test_format": "answer",
                               "n_tests": 1}}
    if fmt == "trl-grpo":
        return {"prompt": prompt, "ground_truth": truth, "data_source": t["source"], "problem_id": t["problem_id"],
                "entry_point": None, "test_format": "answer", "split": t.get("split")}
    return {"input": prompt, "label": truth, "datasource": t["source"], "problem_id": t["problem_id"]}


def export_files(fmt: str, tasks: list[dict], manifest: dict, code_files: dict[str, list[dict]] | None = None,
                 view: str = VIEW) -> dict[str, list[dict]]:
    """{relative file: rows} of a release's final-answer tasks (``view``: gold.answer_tasks, or gold.r1ci_tasks
    of the rollout path, one row per problem) in format ``fmt``, appended to the rows the release's other views
    yield (``code_files``; a task already there is not repeated). Formats without a final-answer form raise a
    FactoryError naming the ones that have it."""
    from factory.errors import FactoryError

    kind = reward_kind(manifest)
    files = {k: list(v) for k, v in (code_files or {}).items()}
    if not tasks and not files:
        why = ("gold.r1ci_tasks is filled by the rollout path (`factory interpreter-rollouts sample` + "
               "`curriculum`); without rollouts, release gold.answer_tasks instead" if view == "gold.r1ci_tasks"
               else "ingest final-answer tasks first (`factory ingest reasoning-gym --tasks ...`), then "
                    "`factory transform`")
        raise FactoryError(f"the release's {view} has no rows: {why}")
    seen = {r.get("problem_id") or (r.get("extra_info") or {}).get("problem_id")
            for rows in files.values() for r in rows}
    first: dict = {}
    for t in tasks:
        first.setdefault(t["problem_id"], t)
    tasks = [t for pid, t in first.items() if pid not in seen]
    if fmt not in ("verl", "trl-grpo", "openrlhf"):
        if files:   # a format of code rows only (pairs, acecode): the release's code rows, as without the tasks
            return files
        hint = (" (TRL's RL set of these tasks is --format trl-grpo: prompt + ground_truth for "
                "factory.reward.trl_reward)" if fmt == "trl" else "")
        raise FactoryError(f"--format {fmt} has no final-answer form: the release's {view} rows export as "
                           f"--format verl, trl-grpo or openrlhf{hint}")
    start, prefix = sum(len(v) for v in files.values()), "prompts/" if fmt == "openrlhf" else ""
    rows = [task_row(fmt, t, kind, start + i) for i, t in enumerate(tasks)]
    for t, r in zip(tasks, rows):
        files.setdefault(f"{prefix}{'test' if t.get('split') == 'test' else 'train'}.parquet", []).append(r)
    return {k: v for k, v in files.items() if v}
