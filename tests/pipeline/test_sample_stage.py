"""`factory sample` with a real (tiny, random-init) transformers model: ledger, resume, budget."""
from __future__ import annotations

from factory.stages.ingest import ingest_source
from factory.stages.sample import run_sample
from tests.lakeutil import init_lake
from tests.lakeutil import query as q


def test_sampling_is_cached_resumable_and_budgeted(tmp_path):
    from factory.generation.tiny import build_tiny_model

    model, tok = build_tiny_model(seed=0)
    lake = tmp_path / "lake"
    init_lake(lake)
    ingest_source("humaneval", None, lake=lake)
    kw = dict(backend="transformers", model="tiny-test", model_obj=model, tokenizer=tok, source="humaneval",
              n=2, max_tokens=16, temperature=0.8)
    # a budget of 1 call stops cleanly after the first problem
    first = run_sample(lake, limit=3, chunk=1, budget_calls=1, **kw)
    assert first["stopped"] and first["problems"] == 1 and first["programs"] == 2
    # the re-run serves the first problem from the ledger and samples only the other two
    second = run_sample(lake, limit=3, chunk=1, **kw)
    assert second["cached_calls"] == 1 and second["new_calls"] == 2 and second["programs"] == 4
    third = run_sample(lake, limit=3, chunk=1, **kw)
    assert third["new_calls"] == 0 and third["programs"] == 0
    assert q(lake, "SELECT count(*), count(DISTINCT program_id) FROM silver.programs WHERE origin = 'sample'") == [(6, 6)]
    assert q(lake, "SELECT count(*), sum(completion_tokens) > 0 FROM silver.llm_calls") == [(3, True)]
    statuses = q(lake, "SELECT count(*) FROM silver.programs WHERE origin = 'sample' AND extraction_status IS NULL")
    assert statuses == [(0,)]


def test_kill_9_mid_sampling_then_rerun(tmp_path):
    """A sampling run killed mid-way keeps its committed chunks; the re-run reuses cached calls, no duplicates."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from factory.generation.tiny import build_tiny_model

    # 96 problems: the run outlasts the poll on an idle machine (24 once committed every chunk
    # between two polls, and the kill hit a finished run)
    LIMIT = 96
    model_dir = tmp_path / "tiny"
    model, tok = build_tiny_model(seed=0)
    model.save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    lake = tmp_path / "lake"
    init_lake(lake)
    ingest_source("humaneval", None, lake=lake)
    cmd = [sys.executable, "-m", "factory.cli", "sample", "--model", str(model_dir), "--source", "humaneval",
           "--limit", str(LIMIT), "--n", "2", "--max-tokens", "16"]
    env = dict(os.environ, FACTORY_LAKE=str(lake))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if q(lake, "SELECT count(*) FROM silver.llm_calls")[0][0] >= 6:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "sampling finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    calls_before = q(lake, "SELECT count(*) FROM silver.llm_calls")[0][0]
    programs_before = q(lake, "SELECT count(*) FROM silver.programs WHERE origin = 'sample'")[0][0]
    assert 6 <= calls_before < LIMIT and programs_before == 2 * calls_before  # only whole chunks were committed
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    import json
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["cached_calls"] == calls_before and report["new_calls"] == LIMIT - calls_before
    assert q(lake, "SELECT count(*), count(DISTINCT program_id) FROM silver.programs WHERE origin = 'sample'") == \
        [(2 * LIMIT, 2 * LIMIT)]
    assert q(lake, "SELECT count(*) FROM silver.llm_calls") == [(LIMIT,)]
