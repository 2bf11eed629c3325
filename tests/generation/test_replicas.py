"""Data-parallel generation: N engine replicas in their own processes (factory.generation.replicas).

The replicas here are real transformers engines on a tiny random-init model saved to disk, each in a spawned
process with its share of the CPU cores; the vLLM replica path is the same pool with GPUs (tests/gpu).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from factory.errors import FactoryError
from factory.generation import ChatRequest, MemoryCache, SamplingParams, make_backend
from factory.generation.replicas import ReplicaPool, plan_replicas


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from factory.generation.tiny import build_tiny_model

    model, tok = build_tiny_model(seed=3)
    d = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return str(d)


def _requests(k: int = 10) -> list[ChatRequest]:
    reqs = []
    for i in range(k):
        params = SamplingParams(n=2, temperature=0.8, max_tokens=6 + i % 5, seed=i) if i % 2 else \
            SamplingParams(n=1, temperature=0, max_tokens=8)
        reqs.append(ChatRequest([{"role": "user", "content": f"write add number {i}"}], params))
    return reqs


@pytest.fixture(scope="module")
def pool(tiny_dir):
    p = make_backend("transformers", tiny_dir, replicas=2, chunk_size=2)
    yield p
    p.close()


def test_replicas_answer_exactly_like_one_engine(tiny_dir, pool):
    single = make_backend("transformers", tiny_dir)
    reqs = _requests()
    want = single.generate(reqs)
    got = pool.generate(reqs)
    assert isinstance(pool, ReplicaPool) and pool.replicas == 2
    assert [r.completions for r in got] == [r.completions for r in want]
    assert [r.completion_tokens for r in got] == [r.completion_tokens for r in want]
    assert [r.finish_reasons for r in got] == [r.finish_reasons for r in want]
    # same cache keys as one engine, so answers cached by either are reused by the other
    assert [pool.request_hash(r) for r in reqs] == [single.request_hash(r) for r in reqs]
    assert pool.model == single.model == tiny_dir
    # both replicas did work (chunks go to whichever is free)
    assert all(n > 0 for n in pool.stats["per_replica_requests"])
    assert sum(pool.stats["per_replica_requests"]) == len(reqs)


def test_each_replica_is_its_own_process_with_its_share_of_cores(pool):
    pids = [rep.process.pid for rep in pool._replicas]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    envs = [rep.env for rep in pool._replicas]
    assert all(e["CUDA_VISIBLE_DEVICES"] == "" for e in envs)
    assert sum(int(e["FACTORY_REPLICA_THREADS"]) for e in envs) <= max(2, os.cpu_count())


def test_cache_and_budget_apply_around_the_pool(pool):
    reqs = _requests(4)
    pool.cache = MemoryCache()
    try:
        first = pool.generate(reqs)
        again = pool.generate(reqs)
    finally:
        pool.cache = None
    assert not any(r.cached for r in first) and all(r.cached for r in again)
    assert [r.completions for r in again] == [r.completions for r in first]


def test_a_replica_lost_mid_run_gives_its_work_to_the_others(tiny_dir):
    p = make_backend("transformers", tiny_dir, replicas=2, chunk_size=1)
    try:
        reqs = _requests(6)
        victim = p._replicas[0].process
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(10)
        got = p.generate(reqs)
        want = make_backend("transformers", tiny_dir).generate(reqs)
        assert [r.completions for r in got] == [r.completions for r in want]
        assert p.stats["requeued_chunks"] == 1
        assert p.stats["per_replica_requests"] == [0, 6]
        os.kill(p._replicas[1].process.pid, signal.SIGKILL)
        p._replicas[1].process.join(10)
        with pytest.raises(FactoryError, match="replica"):
            p.generate(_requests(3))
    finally:
        p.close()


def test_a_replica_that_cannot_load_its_engine_is_named(tmp_path):
    with pytest.raises(FactoryError, match=r"replica 0 .*could not build its engine"):
        make_backend("transformers", str(tmp_path / "no-such-model"), replicas=2)


def test_placement_plan_and_its_errors():
    assert plan_replicas("vllm", 2, 2, gpus=["0", "1", "2", "3"]) == [
        {"CUDA_VISIBLE_DEVICES": "0,1"}, {"CUDA_VISIBLE_DEVICES": "2,3"}]
    assert plan_replicas("vllm", 3, 1, gpus=["4", "5", "6", "7"])[2] == {"CUDA_VISIBLE_DEVICES": "6"}
    with pytest.raises(FactoryError, match="needs 6 GPUs; 4 visible"):
        plan_replicas("vllm", 3, 2, gpus=["0", "1", "2", "3"])
    cpu_vllm = plan_replicas("vllm", 2, 1, gpus=[], cpus=4)   # vLLM's CPU build: each copy on its own cores
    assert [e["VLLM_CPU_OMP_THREADS_BIND"] for e in cpu_vllm] == ["0-1", "2-3"]
    with pytest.raises(FactoryError, match="at most one replica per core"):
        plan_replicas("vllm", 5, 1, gpus=[], cpus=4)
    with pytest.raises(FactoryError, match="--base-url"):
        plan_replicas("openai", 2, 1, gpus=[])
    cpu = plan_replicas("transformers", 2, 1, gpus=[], cpus=8)
    assert [e["FACTORY_REPLICA_THREADS"] for e in cpu] == ["4", "4"]


def test_sample_stage_with_replicas_writes_the_same_programs(tiny_dir, tmp_path):
    """`factory sample --replicas 2` on HumanEval problems: the same programs as one engine, and a re-run is
    answered from the lake's call ledger (a one-engine re-run: tests/pipeline/test_sample_stage.py)."""
    from factory.stages.ingest import ingest_source
    from tests.lakeutil import copy_lake, init_lake, query

    ingest_source("humaneval", None, lake=init_lake(tmp_path / "ingested"))   # once; each run gets a copy
    outputs = {}
    for replicas in (1, 2):
        lake = tmp_path / f"lake{replicas}"
        copy_lake(tmp_path / "ingested", lake)
        run = lambda *a: subprocess.run([sys.executable, "-m", "factory.cli", *a, "--lake", str(lake)],  # noqa
                                        capture_output=True, text=True, timeout=600)
        args = ["sample", "--model", tiny_dir, "--n", "2", "--max-tokens", "12", "--limit", "4", "--replicas", str(replicas)]
        r = run(*args)
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout.strip().splitlines()[-1])
        assert report["programs"] == 8 and report["new_calls"] == 4
        if replicas > 1:
            again = json.loads(run(*args).stdout.strip().splitlines()[-1])
            assert again["programs"] == 0 and again["cached_calls"] == 4 and again["new_calls"] == 0
        outputs[replicas] = query(lake, "SELECT problem_id, sample_index, raw_completion FROM silver.programs "
                                        "WHERE origin = 'sample' ORDER BY ALL")
    assert outputs[1] == outputs[2] and len(outputs[1]) == 8


def test_cli_rejects_replicas_for_remote_servers(tmp_path):
    r = subprocess.run([sys.executable, "-m", "factory.cli", "sample", "--lake", str(tmp_path / "l"), "--backend",
                        "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--replicas", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "--data-parallel-size" in r.stderr
    r = subprocess.run([sys.executable, "-m", "factory.cli", "sample", "--lake", str(tmp_path / "l"),
                        "--engine-arg", "1bad=2"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "1bad=2" in r.stderr
