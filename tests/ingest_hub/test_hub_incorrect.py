"""CodeContests' incorrect solutions as programs with origin 'incorrect', judged by the real sandbox: each test
subset's TPR / TNR (CodeContests+ style) on a fixture in the published layout."""
from __future__ import annotations

import os
import subprocess
import sys

from factory.ingest.hub.suites import suite_rates
from factory.lake import connect
from tests.ingest_hub import hubfixtures as fx
from tests.lakeutil import init_lake


def test_incorrect_solutions_score_each_suite(tmp_path, monkeypatch):
    from factory.stages.ingest import ingest_source

    cache = tmp_path / "hub"
    fx.write_hub_cache(cache, "deepmind/code_contests", {"data/train-00000-of-00001.parquet": fx.write_parquet(
        tmp_path / "s/train.parquet", fx.code_contests_rows(), fx.CODE_CONTESTS_SCHEMA)})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lake = init_lake(tmp_path / "lake")
    ingest_source("hf-code-contests", ["hf://datasets/deepmind/code_contests"], lake=lake)
    r = subprocess.run([sys.executable, "-m", "factory.cli", "execute", "--select", "all", "--workers", "1",
                        "--lake", str(lake)], capture_output=True, text=True, timeout=900, env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-3000:]
    con = connect(lake, read_only=True)
    try:
        rates = {x["suite"]: x for x in suite_rates(con, "code_contests")}
    finally:
        con.close()
    # 3 correct programs (1_A in Python and C++, 1_B in Python), 3 wrong ones: a - b (caught by the public test),
    # a + b that breaks at >= 100 and "print the first number" (both pass public and private tests, caught only by
    # CodeContests' generated tests)
    assert {k: (v["tests"], v["correct"], v["incorrect"]) for k, v in rates.items()} == {
        "public": (2, 3, 3), "public+private": (5, 3, 3), "public+private+generated": (9, 3, 3),
        "dataset+augmented": (9, 3, 3)}
    assert all(v["tpr"] == 1.0 for v in rates.values())
    assert [round(rates[k]["tnr"], 3) for k in ("public", "public+private", "public+private+generated")] == [
        0.333, 0.333, 1.0]
