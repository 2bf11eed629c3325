"""`factory train rl`: verl/TRL hand-off modules score real programs through the sandbox; the local loop runs."""
from __future__ import annotations

import importlib.util
import json

import pyarrow.parquet as pq
import pytest

from factory.stages.ingest import ingest_source
from factory.lake import connect
from factory.release import create_release
from factory.stages.train.rl import run_train_rl
from tests.lakeutil import init_lake


@pytest.fixture(scope="module")
def released(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("rl")
    lake, releases = root / "lake", root / "releases"
    init_lake(lake)
    ingest_source("humaneval", None, lake=lake)
    # MBPP has a train split; HumanEval is a decontamination benchmark, so it only ever lands in test
    ingest_source("mbpp", [shared_data / "mbpp" / "mbpp.jsonl"], lake=lake)
    # train problems enter with tests their reference validated (#31): run MBPP's references, then curate
    from factory.sandbox import Limits
    from factory.stages.curate import curate
    from factory.stages.execute import execute
    execute(lake, selection="reference", sources=["mbpp"], limits=Limits(cpu_s=4.0))
    curate(lake)
    create_release("rl-v1", ["gold.rl_problems"], lake=lake, releases_dir=releases)
    con = connect(lake, read_only=True)
    refs = dict(con.execute("SELECT pb.problem_id, p.code FROM silver.programs p JOIN silver.problems pb "
                            "USING (problem_id) WHERE p.origin = 'reference'").fetchall())
    con.close()
    return lake, releases, refs


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fenced(code):
    return f"Here is my solution:\n```python\n{code}\n```"


def test_verl_handoff_scores_real_programs(released, tmp_path):
    lake, releases, refs = released
    out = run_train_rl(lake, "rl-v1", launcher="verl", out_dir=str(tmp_path / "verl"), releases_dir=releases)
    assert (tmp_path / "verl" / "run_verl.sh").is_file()
    reward = _load(tmp_path / "verl" / "factory_reward.py", "factory_reward_gen")
    rows = pq.read_table(tmp_path / "verl" / "data" / "test.parquet").to_pylist()[:12]
    assert rows and out["launcher"] == "verl"
    for row in rows:
        gt = row["reward_model"]["ground_truth"]
        ref = refs[row["extra_info"]["problem_id"]]
        assert reward.compute_score(row["data_source"], fenced(ref), gt) == 1.0
        assert reward.compute_score(row["data_source"], fenced("def nothing():\n    return None\n"), gt) == 0.0
        assert reward.compute_score(row["data_source"], "no code at all", gt) == 0.0


def test_trl_handoff_reward_function(released, tmp_path):
    lake, releases, refs = released
    run_train_rl(lake, "rl-v1", launcher="trl", out_dir=str(tmp_path / "trl"), releases_dir=releases)
    module = _load(tmp_path / "trl" / "trl_reward.py", "trl_reward_gen")
    data = pq.read_table(tmp_path / "trl" / "data" / "train.parquet").to_pylist()[:6]
    completions = [[{"role": "assistant", "content": fenced(refs[r["problem_id"]])}] for r in data]
    broken = [[{"role": "assistant", "content": fenced(refs[r["problem_id"]].replace("return", "return None #", 1))}]
              for r in data]
    truths = [r["ground_truth"] for r in data]
    assert module.reward_fn(completions, ground_truth=truths) == [1.0] * len(data)
    assert all(x < 1.0 for x in module.reward_fn(broken, ground_truth=truths))
    assert json.loads(truths[0])


def test_local_grpo_loop_logs_metrics(released):
    lake, releases, _ = released
    out = run_train_rl(lake, "rl-v1", model="tiny", steps=2, n=2, problems=4, max_new_tokens=8,
                       releases_dir=releases)
    assert out["steps"] == 2 and len(out["reward"]) == 2
    con = connect(lake, read_only=True)
    metrics = {r[0] for r in con.execute("SELECT metric FROM ops.train_metrics WHERE run_id = ?",
                                         [out["run_id"]]).fetchall()}
    con.close()
    assert {"reward_mean", "entropy"} <= metrics
