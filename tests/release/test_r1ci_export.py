"""R1-CI tasks without local rollouts (#43 goal 5): ReasoningGym final-answer tasks generated from a fixed seed
reach gold.answer_tasks, `factory release create --view gold.answer_tasks` freezes them and `factory export
--format verl | trl-grpo` writes RL sets whose ground truths the trainers' reward entry points score - a right
final answer 1.0, a wrong one 0.0 - called the way verl's reward loop and TRL's GRPOTrainer call them. Prompts hold
the question and the answer-format instruction only. The rollout path still fills potential / curriculum."""
from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from factory.answers.tasks import INSTRUCTION
from factory.stages.ingest import ingest_reasoning_gym
from factory.stages.interpreter_rollouts import answer_problems
from tests.lakeutil import factory_cli, init_lake, query

reasoning_gym = pytest.importorskip("reasoning_gym")
TASKS = ["basic_arithmetic", "count_primes", "letter_counting", "spell_backward"]
SIZE, SEED = 10, 42
# tasks whose question cannot hold its answer by coincidence (arithmetic can: "Calculate ( 6 / 3 + 5 + -1 )." = 6)
NO_ANSWER_IN_QUESTION = {"count_primes", "letter_counting", "spell_backward"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A lake with the tasks, one release of gold.answer_tasks and its verl and trl-grpo exports, all through the
    real CLI."""
    root = tmp_path_factory.mktemp("r1ci_export")
    lake = init_lake(root / "lake")
    ingest_reasoning_gym(TASKS, SIZE, SEED, lake=lake)
    rel = root / "releases"
    out = {}
    r = factory_cli("release", "create", "rg-tasks", "--view", "gold.answer_tasks", lake=lake, releases=rel)
    assert r.returncode == 0, r.stderr
    for fmt in ("verl", "trl-grpo"):
        r = factory_cli("export", "rg-tasks", "--format", fmt, "--out", str(root / fmt), lake=lake, releases=rel)
        assert r.returncode == 0, r.stderr
        out[fmt] = root / fmt
    return {"lake": lake, "releases": rel, "root": root, **out}


def test_the_release_records_the_answer_reward(exported):
    manifest = json.loads((exported["releases"] / "rg-tasks" / "manifest.json").read_text())
    assert manifest["reward"] == {"kind": "binary", "tests": "final answer"}


def _generated() -> dict[str, dict]:
    """The items reasoning_gym itself generates for the tasks and seed: source_id -> item."""
    out = {}
    for task in TASKS:
        ds = reasoning_gym.create_dataset(task, size=SIZE, seed=SEED)
        for i in range(SIZE):
            out[f"{task}/{SEED}/{i}"] = ds[i]
    return out


def _wrong(answer: str) -> str:
    return f"{answer}7"     # a number with one more digit, a word with one more letter: never the answer


def test_answer_tasks_view_needs_no_rollouts(exported):
    lake = exported["lake"]
    rows = query(lake, "SELECT problem_id, source, task, answer_rule, ground_truth, r1ci_recipe, pass_rate, potential, "
                       "curriculum_stage FROM gold.answer_tasks ORDER BY problem_id")
    assert len(rows) == len(TASKS) * SIZE
    assert {r[2] for r in rows} == set(TASKS) and {r[3] for r in rows} == {"reasoning_gym"}
    assert query(lake, "SELECT count(*) FROM silver.interpreter_rollouts") == [(0,)]
    assert all(r[5:] == (None, None, None, None) for r in rows)         # the rollout path's columns wait for it
    # the SQL view's ground truth is the one the rollout stage builds in Python (factory.ingest.reasoning_gym)
    from factory.lake import connect
    con = connect(lake, read_only=True)
    try:
        python_side = {p["problem_id"]: p["ground_truth"] for p in answer_problems(con)}
    finally:
        con.close()
    assert {r[0]: json.loads(r[4]) for r in rows} == python_side
    # they stay out of the code views (reported as other_task) yet are released from this one
    assert query(lake, "SELECT count(*) FROM gold.training_exclusions WHERE reason = 'other_task' AND source LIKE "
                       "'reasoning-gym-%'") == [(len(TASKS) * SIZE,)]


def test_verl_export_is_scored_by_compute_score_as_verl_calls_it(exported):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from factory.generation.tiny import build_tiny_tokenizer
    from tests.trainer_clients import verl_reward_fn

    path = exported["verl"] / "train.parquet"
    rows = pq.read_table(path).to_pylist()
    assert len(rows) == len(TASKS) * SIZE and not (exported["verl"] / "test.parquet").exists()
    meta = json.loads((exported["verl"] / "export.json").read_text())
    assert meta["answer_reward"]["kind"] == "binary" and meta["files"] == {"train.parquet": len(rows)}
    cfg = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 4096, "truncation": "error",
                            "filter_overlong_prompts": False, "return_raw_chat": True})
    ds = RLHFDataset(data_files=[str(path)], tokenizer=build_tiny_tokenizer(), config=cfg)
    assert len(ds) == len(rows)
    compute_score = verl_reward_fn("compute_score")    # reward.custom_reward_function, resolved by verl itself
    right = wrong = 0
    for i, row in enumerate(rows):
        item = ds[i]
        assert [m["role"] for m in item["raw_prompt"]] == ["system", "user"] and row["ability"] == "reasoning"
        truth, source, extra = item["reward_model"]["ground_truth"], item["data_source"], item["extra_info"]
        assert item["reward_model"]["style"] == "rule" and extra["test_format"] == "answer"
        answer = json.loads(truth)["answer"]
        right += compute_score(source, f"Let me work it out.\n<<<{answer}>>>", truth, extra) == 1.0
        wrong += compute_score(source, f"Let me work it out.\n<<<{_wrong(answer)}>>>", truth, extra) == 0.0
        assert compute_score(source, answer, truth, extra) == 0.0          # no <<<final answer>>>: no answer
        # an interpreter block printing the answer does not answer for the policy
        leaked = (f"```python\nprint('<<<{answer}>>>')\n```\nCode Execution Results:\n```output\n<<<{answer}>>>\n"
                  f"```\nSo <<<{_wrong(answer)}>>>")
        assert compute_score(source, leaked, truth, extra) == 0.0
    assert (right, wrong) == (len(rows), len(rows))


def test_trl_grpo_export_is_scored_by_trl_reward_as_grpotrainer_calls_it(exported):
    import datasets

    from factory.reward import trl_reward

    ds = datasets.load_dataset("parquet", data_files={"train": str(exported["trl-grpo"] / "train.parquet")},
                               split="train", cache_dir=str(exported["root"] / "hf-cache"))
    assert ds.num_rows == len(TASKS) * SIZE
    cols = {c: ds[c] for c in ds.column_names if c != "prompt"}   # every dataset column reaches the reward
    answers = [json.loads(t)["answer"] for t in cols["ground_truth"]]
    n = len(answers)

    def call(texts):   # TRL 1.x: reward_func(prompts=, completions=, completion_ids=, **columns, trainer_state=...)
        completions = [[{"role": "assistant", "content": t}] for t in texts]
        return trl_reward(prompts=ds["prompt"], completions=completions, completion_ids=[[1]] * n, **cols,
                          trainer_state=None, log_extra=lambda *a, **k: None, log_metric=lambda *a, **k: None)

    assert call([f"<<<{a}>>>" for a in answers]) == [1.0] * n
    assert call([f"<<<{_wrong(a)}>>>" for a in answers]) == [0.0] * n
    # plain-text completions (TRL without a chat template) score the same
    assert trl_reward([f"<<<{a}>>>" for a in answers], cols["ground_truth"]) == [1.0] * n


def test_grpotrainer_trains_one_step_on_the_trl_export(exported, tmp_path):
    """TRL's GRPOTrainer itself reads the trl-grpo export and calls factory.reward.trl_reward with its columns: a
    tiny random policy writes no <<<answer>>> (reward 0.0); the same call with the right answers pays 1.0."""
    import datasets
    from trl import GRPOConfig, GRPOTrainer

    from factory.generation.tiny import build_tiny_model, build_tiny_tokenizer
    from factory.reward import trl_reward

    calls = []

    def reward(**kw):     # the trainer's own call, recorded, then scored by the factory's reward
        calls.append(kw)
        return trl_reward(**kw)

    policy, tok = build_tiny_model(build_tiny_tokenizer())
    ds = datasets.load_dataset("parquet", data_files=str(exported["trl-grpo"] / "train.parquet"), split="train",
                               cache_dir=str(tmp_path / "hf")).select(range(2))
    trainer = GRPOTrainer(model=policy, processing_class=tok, reward_funcs=[reward], train_dataset=ds,
                          args=GRPOConfig(output_dir=str(tmp_path / "grpo"), max_steps=1, per_device_train_batch_size=2,
                                          num_generations=2, max_completion_length=16, report_to=[], use_cpu=True,
                                          logging_steps=1, save_strategy="no"))
    assert trainer.train().global_step == 1
    logged = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    assert logged == [0.0]
    kw = calls[0]
    assert set(ds.column_names) - {"prompt"} <= set(kw) and set(kw["ground_truth"]) <= set(ds["ground_truth"])
    right = [[{"role": "assistant", "content": f"<<<{json.loads(t)['answer']}>>>"}] for t in kw["ground_truth"]]
    assert trl_reward(**{**kw, "completions": right}) == [1.0] * len(right)


def test_prompts_never_hold_the_answer(exported):
    """Principle 8: the prompt is the answer-format instruction and the generator's own question - nothing of the
    ground truth (answer, generated item, its metadata) is added."""
    items = _generated()
    verl = pq.read_table(exported["verl"] / "train.parquet").to_pylist()
    grpo = pq.read_table(exported["trl-grpo"] / "train.parquet").to_pylist()
    by_id = {r["problem_id"]: r for r in grpo}
    answers = {str(e["answer"]) for e in items.values()}
    assert not [a for a in answers if re.search(rf"(?<!\w){re.escape(a)}(?!\w)", INSTRUCTION)]
    for row in verl:
        gt = json.loads(row["reward_model"]["ground_truth"])
        item = items[row["extra_info"]["source_id"]]
        assert gt["answer"] == str(item["answer"])
        for prompt in (row["prompt"], by_id[row["extra_info"]["problem_id"]]["prompt"]):
            assert prompt == [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": item["question"]}]
            text = "\n".join(m["content"] for m in prompt)
            assert "<<<" + gt["answer"] not in text and "metadata" not in text and "source_dataset" not in text
            if gt["task"] in NO_ANSWER_IN_QUESTION:
                assert not re.search(rf"(?<!\w){re.escape(gt['answer'])}(?!\w)", text), (gt["task"], text)


def test_a_verifier_float_drift_is_no_right_answer():
    """reasoning_gym's spell_backward adds 1/len per matching letter: the right word plus any suffix can sum to
    1.0000000000000002 (the verifier's own 'exactly 1.0 -> minus 0.2' guard misses it). Found by this file's
    wrong-answer check; the reward pays exactly 1.0 only."""
    from factory.answers import check_answer
    from factory.reward import compute_score

    task = "spell_backward"
    items = reasoning_gym.create_dataset(task, size=30, seed=SEED)
    verifier = reasoning_gym.get_score_answer_fn(task)
    drift = [e for e in items if verifier(e["answer"] + "7", e) > 1.0]
    assert len(drift) == 4                                   # seed 42: 4 of 30 items
    for e in drift:
        truth = {"rule": "reasoning_gym", "answer": e["answer"], "task": task, "entry": e, "reward": {"kind": "binary"}}
        check = check_answer(e["answer"] + "7", truth)
        assert not check.correct and 0.99 < check.score < 1.0
        assert compute_score("reasoning-gym-spell_backward", f"<<<{e['answer']}7>>>", json.dumps(truth)) == 0.0
        assert compute_score("reasoning-gym-spell_backward", f"<<<{e['answer']}>>>", json.dumps(truth)) == 1.0


def test_trl_pair_format_points_at_the_rl_format(exported, tmp_path):
    r = factory_cli("export", "rg-tasks", "--format", "trl", "--out", str(tmp_path / "trl"), lake=exported["lake"],
                    releases=exported["releases"])
    assert r.returncode != 0 and "trl-grpo" in r.stderr and "gold.answer_tasks" in r.stderr
    assert not (tmp_path / "trl").exists()


def test_empty_r1ci_tasks_release_names_the_no_rollout_view(exported, tmp_path):
    lake, rel = exported["lake"], exported["releases"]
    r = factory_cli("release", "create", "r1ci-empty", "--view", "gold.r1ci_tasks", lake=lake, releases=rel)
    assert r.returncode == 0, r.stderr
    # create already says the view is empty and where the tasks are (warning, not an error: an empty freeze is
    # a valid release)
    assert "gold.r1ci_tasks froze 0 rows" in r.stderr and "gold.answer_tasks" in r.stderr, r.stderr
    r = factory_cli("export", "r1ci-empty", "--format", "verl", "--out", str(tmp_path / "v"), lake=lake, releases=rel)
    assert r.returncode != 0 and "gold.answer_tasks" in r.stderr and "interpreter-rollouts" in r.stderr
    assert not (tmp_path / "v").exists()


def test_rollout_path_still_fills_potential_and_curriculum(tmp_path):
    """With rollouts (a scripted policy answering in text, right on half the tasks), the curriculum step writes
    gold.r1ci_tasks and gold.answer_tasks shows the same pass rate, potential and stage; a release of
    gold.r1ci_tasks exports with the same answer reward."""
    from factory.generation.base import Backend
    from factory.generation.types import GenerationResult
    from factory.stages.interpreter_rollouts import build_curriculum, sample_rollouts
    from factory_train.rl.multiturn import BackendPolicy
    from factory_train.tiny import byte_tokenizer

    lake = init_lake(tmp_path / "lake")
    ingest_reasoning_gym(["spell_backward"], 4, SEED, lake=lake)

    class Speller(Backend):     # spells the word backward on even word lengths, forward otherwise
        name = "speller"

        def __init__(self):
            super().__init__("speller")

        def _run_one(self, req):
            word = req.messages[1]["content"].rsplit(":", 1)[1].strip()
            return GenerationResult(completions=[f"<<<{word[::-1] if len(word) % 2 == 0 else word}>>>"],
                                    finish_reasons=["stop"])

    res = sample_rollouts(lake, model="speller", policy=BackendPolicy(Speller(), byte_tokenizer()), modes=("text",),
                          answers=2, log=lambda *_: None)
    assert res["new_rollouts"] == 8
    build_curriculum(lake, model="speller", log=lambda *_: None)
    got = query(lake, "SELECT a.problem_id, a.r1ci_model, a.pass_rate, a.potential, a.curriculum_stage, r.pass_rate, "
                      "r.potential, r.curriculum_stage FROM gold.answer_tasks a JOIN gold.r1ci_tasks r USING "
                      "(problem_id) ORDER BY 1")
    assert len(got) == 4 and all(g[1] == "speller" and g[2:5] == g[5:8] for g in got)
    assert {g[2] for g in got} <= {0.0, 1.0} and all(g[3] == 0.0 for g in got)   # all-or-nothing: no potential
    rel = tmp_path / "releases"
    r = factory_cli("release", "create", "r1ci", "--view", "gold.r1ci_tasks", lake=lake, releases=rel)
    assert r.returncode == 0, r.stderr
    r = factory_cli("export", "r1ci", "--format", "verl", "--out", str(tmp_path / "v"), lake=lake, releases=rel)
    assert r.returncode == 0, r.stderr
    from factory.reward import compute_score
    rows = pq.read_table(tmp_path / "v" / "train.parquet").to_pylist()
    assert len(rows) == 4
    for row in rows:
        truth = row["reward_model"]["ground_truth"]
        answer = json.loads(truth)["answer"]
        assert compute_score(row["data_source"], f"<<<{answer}>>>", truth) == 1.0
        assert compute_score(row["data_source"], f"<<<{_wrong(answer)}>>>", truth) == 0.0


@pytest.mark.slow   # 38 s at load 15 on 2 cores (curate of HumanEval); the CI's slow step runs it
def test_a_release_mixing_code_problems_and_answer_tasks(shared_data, tmp_path):
    """HumanEval (a code benchmark: test split, sandbox reward) and the answer tasks in one release: one verl
    export holds both, and a batch mixing them is scored per item - references and right answers 1.0 on verl's
    batch entry, TRL's and OpenRLHF's, wrong answers 0.0."""
    from factory.stages.curate import curate
    from factory.stages.ingest import ingest_source
    from tests.trainer_clients import openrlhf_reward_module, verl_reward_fn

    lake = init_lake(tmp_path / "lake")
    ingest_source("humaneval", [shared_data / "humaneval"], lake=lake)
    ingest_reasoning_gym(["count_primes"], 4, SEED, lake=lake)
    curate(lake)
    rel = tmp_path / "releases"
    r = factory_cli("release", "create", "mix", "--view", "gold.rl_problems", "--view", "gold.answer_tasks",
                    lake=lake, releases=rel)
    assert r.returncode == 0, r.stderr
    r = factory_cli("export", "mix", "--format", "verl", "--out", str(tmp_path / "v"), lake=lake, releases=rel)
    assert r.returncode == 0, r.stderr
    test = pq.read_table(tmp_path / "v" / "test.parquet").to_pylist()
    train = pq.read_table(tmp_path / "v" / "train.parquet").to_pylist()
    assert len(test) == 164 and {r["data_source"] for r in test} == {"humaneval"}
    assert len(train) == 4 and {r["extra_info"]["test_format"] for r in train} == {"answer"}
    assert sorted(r["extra_info"]["index"] for r in test + train) == list(range(168))
    refs = dict(query(lake, "SELECT problem_id, code FROM silver.programs WHERE origin = 'reference'"))
    code = test[:3]
    truths = [r["reward_model"]["ground_truth"] for r in code + train]
    right = [f"```python\n{refs[r['extra_info']['problem_id']]}\n```" for r in code] + \
            [f"<<<{json.loads(r['reward_model']['ground_truth'])['answer']}>>>" for r in train]
    wrong = ["```python\ndef nothing():\n    return None\n```"] * 3 + \
            [f"<<<{_wrong(json.loads(r['reward_model']['ground_truth'])['answer'])}>>>" for r in train]
    batch, orl = verl_reward_fn("compute_score_batch"), openrlhf_reward_module()
    from factory.reward import trl_reward
    for fn in (lambda a: batch(["s"] * len(a), a, truths, [{}] * len(a)),
               lambda a: trl_reward([[{"role": "assistant", "content": x}] for x in a], truths),
               lambda a: orl.reward_func(["P" + x for x in a], ["P"] * len(a), truths)["rewards"].tolist()):
        assert fn(right) == [1.0] * 7 and fn(wrong) == [0.0] * 7
