"""vLLM data-parallel replicas on a GPU node: runs only where vLLM, CUDA GPUs and a local model exist.

Set FACTORY_VLLM_MODEL to a model directory (or an HF id when the hub is reachable), e.g.
``FACTORY_VLLM_MODEL=/models/Qwen2.5-Coder-0.5B-Instruct python -m pytest tests/gpu``.
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
    pytest.skip("FACTORY_VLLM_MODEL is not set (a local model for vLLM)", allow_module_level=True)

from factory.generation import ChatRequest, SamplingParams, make_backend  # noqa: E402
from factory.generation.replicas import visible_gpus  # noqa: E402

GPUS = visible_gpus()
pytestmark = pytest.mark.skipif(not GPUS, reason="no CUDA GPU visible")
ENGINE = {"gpu_memory_utilization": float(os.environ.get("FACTORY_VLLM_MEM", "0.35")), "max_model_len": 2048,
          "enforce_eager": True}


def _requests():
    return [ChatRequest([{"role": "user", "content": f"Write a Python function that returns {i} squared."}],
                        SamplingParams(n=2, temperature=0, max_tokens=48)) for i in range(8)]


def test_vllm_replicas_match_one_engine_greedy():
    gpus = GPUS[:2] if len(GPUS) > 1 else GPUS * 2  # on one GPU, two replicas share it at low memory
    pool = make_backend("vllm", MODEL, replicas=2, gpus=gpus, chunk_size=2, **ENGINE)
    try:
        got = pool.generate(_requests())
    finally:
        pool.close()
    assert all(r.ok and len(r.completions) == 2 and r.completion_tokens > 0 for r in got)
    assert all(n > 0 for n in pool.stats["per_replica_requests"])
    ref = make_backend("vllm", MODEL, **ENGINE)
    try:
        want = ref.generate(_requests())
    finally:
        del ref
    assert [r.completions for r in got] == [r.completions for r in want]


def test_sample_stage_on_vllm_replicas(tmp_path):
    lake = str(tmp_path / "lake")
    run = lambda *a: subprocess.run([sys.executable, "-m", "factory.cli", *a, "--lake", lake],  # noqa: E731
                                    capture_output=True, text=True, timeout=1200)
    assert run("init").returncode == 0
    assert run("ingest", "humaneval").returncode == 0
    r = run("sample", "--backend", "vllm", "--model", MODEL, "--replicas", str(min(2, len(GPUS))),
            "--limit", "8", "--n", "4", "--max-tokens", "256",
            *[f"--engine-arg={k}={json.dumps(v)}" for k, v in ENGINE.items()])
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["programs"] == 32 and report["new_calls"] == 8
