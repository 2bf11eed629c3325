"""Releases in the trainers' own hands (real libraries, no mocks): verl's RLHFDataset and get_custom_reward_fn,
TRL's RewardTrainer (2 steps) and GRPOTrainer (1 step) on a tiny random model, OpenRLHF's RewardDataset and
PromptDataset in chat mode, and every reward entry point scoring references 1.0 and known-wrong programs 0.0
for HumanEval (check), MBPP (assert), CodeContests (stdio) and KodCode (pytest)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

import factory.reward as reward_module
from factory.stages.execute import execute
from factory.stages.curate import curate
from factory.stages.ingest import ingest_source
from factory.stages.mutate import run_mutate
from factory.release import create_release
from factory.release.export import export_release
from factory.sandbox import Limits
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

WRONG = {  # a known-wrong answer per test style: right shape, fails every test
    "humaneval": "def {fn}(*args, **kwargs):\n    raise NotImplementedError\n",
    "mbpp": "def {fn}(*args, **kwargs):\n    raise NotImplementedError\n",
    "codecontests": "print('no answer here')\n",
    "kodcode": "def {fn}(*args, **kwargs):\n    raise NotImplementedError\n",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_data):
    base = tmp_path_factory.mktemp("trainers")
    lake = init_lake(base / "lake")
    cc = shared_data / "codecontests_subset300"
    ok = {t for t, p, k in json.loads((cc / "verify_reference_solutions.json").read_text()) if p == k}
    rows = [json.loads(x) for x in (cc / "codecontests_subset300.jsonl").open()]
    (base / "cc").mkdir()
    (base / "cc" / "codecontests_subset300.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in [r for r in rows if r["task_id"] in ok][:6]))
    kod = json.loads((shared_data / "kodcode_demo" / "Verified_KodCode_algorithm_100_1741212598_Complete.json")
                     .read_text())[:6]
    (base / "kod").mkdir()
    (base / "kod" / "Verified_KodCode_x_Complete.json").write_text(json.dumps(kod))
    ingest_source("humaneval", None, lake=lake)
    ingest_source("mbpp", [shared_data / "mbpp" / "mbpp.jsonl"], lake=lake)
    ingest_source("codecontests", [base / "cc" / "codecontests_subset300.jsonl"], lake=lake)
    ingest_source("kodcode", [base / "kod" / "Verified_KodCode_x_Complete.json"], lake=lake)
    # preference pairs from references vs their mutants on a few HumanEval problems
    run_mutate(lake, ["humaneval"], max_per_program=4)
    ids = [r[0] for r in q(lake, "SELECT p.program_id FROM silver.programs p JOIN silver.problems b USING "
                                 "(problem_id) WHERE b.source = 'humaneval' AND b.source_id IN "
                                 "('HumanEval/0', 'HumanEval/2', 'HumanEval/4', 'HumanEval/7', 'HumanEval/12')")]
    execute(lake, selection="all", program_ids=ids, limits=Limits(cpu_s=4.0))
    # train problems enter only with tests a reference validated (#31: unvalidated sources are held out)
    execute(lake, selection="reference", sources=["mbpp", "codecontests", "kodcode"], limits=Limits(cpu_s=4.0))
    curate(lake)
    root = base / "releases"
    create_release("both", ["gold.rl_problems", "gold.rm_pairs"], lake=lake, releases_dir=root)
    refs = dict(q(lake, "SELECT problem_id, code FROM silver.programs WHERE origin = 'reference'"))
    return SimpleNamespace(lake=lake, root=root, base=base, refs=refs)


def _rows(built, fmt):
    out = built.base / f"export-{fmt}"
    if not out.exists():
        export_release("both", fmt, out, releases_dir=built.root)
    return out


def _cases(built):
    """(source, ground truth JSON, reference answer, wrong answer) for every problem of the verl export."""
    out = _rows(built, "verl")
    cases = []
    for split in ("train", "test"):
        for r in pq.read_table(out / f"{split}.parquet").to_pylist():
            src, info = r["data_source"], r["extra_info"]
            ref = built.refs.get(info["problem_id"])
            if ref is None:
                continue
            fn = (info["entry_point"] or "f").split(".")[-1]
            cases.append((src, r["reward_model"]["ground_truth"], f"```python\n{ref}\n```",
                          f"```python\n{WRONG[src].format(fn=fn)}```"))
    by_source = {}
    for c in cases:
        by_source.setdefault(c[0], []).append(c)
    return [c for cs in by_source.values() for c in cs[:4]]


def test_splits_and_prompts_match_across_exports(built):
    out = _rows(built, "verl")
    test = pq.read_table(out / "test.parquet").to_pylist()
    train = pq.read_table(out / "train.parquet").to_pylist()
    assert {r["data_source"] for r in test} >= {"humaneval", "codecontests"}   # benchmarks: test only
    assert "humaneval" not in {r["data_source"] for r in train} and "mbpp" in {r["data_source"] for r in train}
    pairs = pq.read_table(_rows(built, "trl") / "test.parquet").to_pylist()   # pairs of HumanEval: test split
    assert pairs and not (_rows(built, "trl") / "train.parquet").exists()
    rl_prompt = {r["extra_info"]["problem_id"]: r["prompt"][0]["content"] for r in test}
    assert all(p["prompt"][0]["content"] == rl_prompt[p["problem_id"]] for p in pairs)


def test_every_reward_entry_point_agrees(built):
    from tests.trainer_clients import openrlhf_reward_module, verl_reward_fn

    cases = _cases(built)
    assert {c[0] for c in cases} == {"humaneval", "mbpp", "codecontests", "kodcode"}
    # verl 0.9's keys: reward.custom_reward_function.{path,name}; OpenRLHF loads the file by path
    verl_fn, verl_batch, orl = verl_reward_fn(), verl_reward_fn("compute_score_batch"), openrlhf_reward_module()
    answers = [a for c in cases for a in (c[2], c[3])]
    truths = [c[1] for c in cases for _ in (0, 1)]
    sources = [c[0] for c in cases for _ in (0, 1)]
    expected = [1.0, 0.0] * len(cases)
    got = {
        "verl compute_score": [verl_fn(s, a, t, {}) for s, a, t in zip(sources, answers, truths)],
        "verl compute_score_batch": verl_batch(data_sources=sources, solution_strs=answers, ground_truths=truths,
                                               extra_infos=[{}] * len(answers)),
        "trl reward_funcs": reward_module.trl_reward([[{"role": "assistant", "content": a}] for a in answers],
                                                     ground_truth=truths),
        "openrlhf reward_func": orl.reward_func(["PROMPT" + a for a in answers], ["PROMPT"] * len(answers),
                                                truths)["rewards"].tolist(),
    }
    for name, scores in got.items():
        bad = [(sources[i], answers[i][:60], s) for i, s in enumerate(scores) if s != expected[i]]
        assert not bad, (name, bad)


def test_verl_rlhf_dataset_reads_the_export(built):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from factory.generation.tiny import build_tiny_tokenizer

    out = _rows(built, "verl")
    cfg = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 4096, "truncation": "error",
                            "filter_overlong_prompts": False, "return_raw_chat": True})
    ds = RLHFDataset(data_files=[str(out / "train.parquet")], tokenizer=build_tiny_tokenizer(), config=cfg)
    assert len(ds) == pq.read_metadata(out / "train.parquet").num_rows
    item = ds[0]   # verl 0.9 hands raw chat messages on (the rollout tokenizes them)
    assert item["raw_prompt"][0]["role"] == "user" and item["data_source"] == "mbpp"
    assert json.loads(item["reward_model"]["ground_truth"])["tests"]


def test_openrlhf_datasets_in_chat_mode(built):
    import datasets
    from openrlhf.datasets import PromptDataset, RewardDataset

    from factory.generation.tiny import build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    out = _rows(built, "openrlhf")
    args = SimpleNamespace(data=SimpleNamespace(input_key="input", label_key="label", apply_chat_template=True,
                                                prompt_key="prompt", chosen_key="chosen", rejected_key="rejected"))
    strategy = SimpleNamespace(args=args, is_rank_0=lambda: True)
    prompts = datasets.load_dataset("parquet", data_files=str(out / "prompts" / "train.parquet"), split="train")
    pd = PromptDataset(prompts, tok, strategy)
    assert len(pd) == prompts.num_rows and set(pd.datasources) == {"mbpp", "kodcode"}   # not "default"
    source, prompt, label, _ = pd[0]
    assert "<|im_start|>user" in prompt and json.loads(label)
    pairs = datasets.load_dataset("parquet", data_files=str(out / "rm" / "test.parquet"), split="train")
    rd = RewardDataset(pairs, tok, 4096, strategy, num_processors=1)
    assert len(rd) == pairs.num_rows > 0


def test_trl_reward_trainer_two_steps_and_grpo_one_step(built, tmp_path):
    import datasets
    import torch
    from transformers import LlamaConfig, LlamaForSequenceClassification
    from trl import GRPOConfig, GRPOTrainer, RewardConfig, RewardTrainer

    from factory.generation.tiny import build_tiny_model, build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, num_labels=1, pad_token_id=tok.pad_token_id)
    rm = LlamaForSequenceClassification(cfg)
    pairs = datasets.load_dataset("parquet", data_files=str(_rows(built, "trl") / "test.parquet"), split="train")
    trainer = RewardTrainer(model=rm, processing_class=tok, train_dataset=pairs, args=RewardConfig(
        output_dir=str(tmp_path / "rm"), max_steps=2, per_device_train_batch_size=2, report_to=[],
        use_cpu=True, max_length=2048, logging_steps=1, save_strategy="no"))
    result = trainer.train()
    assert result.global_step == 2 and torch.isfinite(torch.tensor(result.training_loss))

    policy, tok = build_tiny_model(build_tiny_tokenizer())
    grpo = datasets.load_dataset("parquet", data_files=str(_rows(built, "trl-grpo") / "train.parquet"),
                                 split="train").select(range(2))
    trainer = GRPOTrainer(model=policy, processing_class=tok, reward_funcs=[reward_module.trl_reward],
                          train_dataset=grpo, args=GRPOConfig(
                              output_dir=str(tmp_path / "grpo"), max_steps=1, per_device_train_batch_size=2,
                              num_generations=2, max_completion_length=16, report_to=[], use_cpu=True,
                              logging_steps=1, save_strategy="no"))
    result = trainer.train()
    assert result.global_step == 1
    rewards = [h for h in trainer.state.log_history if "reward" in h]
    assert rewards and 0.0 <= rewards[0]["reward"] <= 1.0


def test_killed_mutants_score_below_one_and_zero_when_binary(built):
    """Mutants the sandbox saw fail a test lose reward through the same path (soft < 1, binary 0)."""
    out = _rows(built, "verl")
    truth = {r["extra_info"]["problem_id"]: r["reward_model"]["ground_truth"]
             for r in pq.read_table(out / "test.parquet").to_pylist()}
    killed = q(built.lake, """SELECT p.problem_id, p.code FROM silver.programs p JOIN gold.latest_executions e
                              USING (program_id) WHERE p.origin = 'mutant' GROUP BY ALL
                              HAVING bool_or(e.status <> 'pass') ORDER BY 1, 2""")
    killed = [(pid, code) for pid, code in killed if pid in truth][:12]
    assert len(killed) >= 6
    answers = [f"```python\n{code}\n```" for _, code in killed]
    truths = [truth[pid] for pid, _ in killed]
    soft = reward_module.score_completions(answers, truths)
    binary = reward_module.score_completions(answers, truths, binary=True)
    assert all(s < 1.0 for s in soft), soft
    assert binary == [0.0] * len(killed)
