"""Trainer rows made from released rows: the user turn, the verl / TRL-GRPO / preference-pair rows, the release's
reward spec, and the format rules every exported ground truth must meet (:func:`check_truth`)."""
from __future__ import annotations

from factory.errors import FactoryError
from factory.release.prompts import ground_truth, problem_prompt, truth_json


def user_turn(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def release_reward(manifest: dict) -> dict:
    """The release's reward spec for the ground truths: manifest["reward"] (recorded at release time), else the
    recipe's (releases cut before the spec was recorded), else soft over the hidden tests."""
    spec = manifest.get("reward") or (manifest.get("recipe") or {}).get("reward") or {}
    return {"kind": spec.get("kind") or "soft", "tests": spec.get("tests") or "hidden"}


def problem_row(fmt: str, p: dict, i: int, truth: str | bytes) -> dict:
    """Problem ``p``'s row in format ``fmt`` (verl, trl-grpo, else openrlhf's prompts); ``truth``: its ground truth
    JSON (:func:`truth_json`), ``i``: its position in the view (verl's extra_info.index)."""
    prompt = user_turn(problem_prompt(p))
    if fmt == "verl":
        return {"data_source": p["source"], "prompt": prompt, "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": truth},
                "extra_info": {"index": i, "split": p.get("split"), "problem_id": p["problem_id"],
                               "source_id": p["source_id"], "entry_point": p.get("entry_point"),
                               "test_format": p.get("test_format"), "n_tests": p.get("n_tests")}}
    if fmt == "trl-grpo":
        return {"prompt": prompt, "ground_truth": truth, "data_source": p["source"], "problem_id": p["problem_id"],
                "entry_point": p.get("entry_point"), "test_format": p.get("test_format"), "split": p.get("split")}
    # openrlhf prompts: `datasource` is the key OpenRLHF's PromptDataset reads
    return {"input": prompt, "label": truth, "datasource": p["source"], "problem_id": p["problem_id"]}


def problem_rows(fmt: str, problems: list[dict], reward: dict | None = None) -> list[dict]:
    return [problem_row(fmt, p, i, truth_json(ground_truth(p, reward))) for i, p in enumerate(problems)]


RM_COLUMNS = ("prompt", "chosen", "rejected", "margin", "pair_id")   # openrlhf's rm/ rows: a pair row's columns


def pair_rows(pairs: list[dict]) -> list[dict]:
    """Preference pairs in conversational form: the RL prompt as the user turn, each program as the reply."""
    return [{"prompt": user_turn(p["prompt"]), "chosen": [{"role": "assistant", "content": p["chosen"]}],
             "rejected": [{"role": "assistant", "content": p["rejected"]}],
             "margin": p["chosen_pass_rate"] - p["rejected_pass_rate"], "pair_id": p["pair_id"],
             "problem_id": p["problem_id"]} for p in pairs]


def check_truth(rel: str, i: int, gt: dict) -> None:
    """A ground truth's format rules (row ``i`` of file ``rel``): the reward reads it (:meth:`GroundTruth.parse`,
    as `factory.reward` and `factory serve` do), it holds a test and a reward spec; FactoryError naming the row if
    one fails."""
    from factory.judging.ground_truth import GroundTruth

    try:
        truth = GroundTruth.parse(gt)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise FactoryError(f"{rel} row {i}: ground_truth the reward cannot read: {type(exc).__name__}: {exc}") from None
    if truth.answer:   # a final-answer task (gold.answer_tasks): its rule and reward spec
        from factory.answers.checks import parse_ground_truth
        from factory.answers.r1ci import answer_reward_kind
        try:
            parse_ground_truth(gt)
            answer_reward_kind(gt)
        except ValueError as exc:
            raise FactoryError(f"{rel} row {i}: final-answer ground_truth: {exc}") from None
        if "reward" not in gt:
            raise FactoryError(f"{rel} row {i}: final-answer ground_truth carries no reward spec (reward.kind)")
    elif "inputs" in gt and len(gt["inputs"]) != len(gt["outputs"]):
        raise FactoryError(f"{rel} row {i}: ground_truth inputs/outputs differ in length")
    elif not truth.tests:
        raise FactoryError(f"{rel} row {i}: ground_truth holds no test")
    elif truth.reward is None:
        raise FactoryError(f"{rel} row {i}: ground_truth carries no reward spec (reward.kind binary|soft)")
