"""`factory synth` against a real OpenAI-compatible HTTP server on 127.0.0.1: parsed, failed and cached attempts."""
from __future__ import annotations

import json

from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from factory.lake import connect
from tests.lakeutil import init_lake
from factory.stages.synth import run_synth
from tests.generation.conftest import FakeOpenAIServer

GOOD = json.dumps({"question": "Given a list of integers, return the sum of the elements that are even.",
                   "tests": [f"assert has_close_elements([{i}.0, {i + 2}.0], 0.5) == False" for i in range(6)]
                   + ["assert has_close_elements([1.0, 1.2], 0.5) == True"]})


def test_synth_records_parsed_and_failed_attempts(tmp_path):
    lake = tmp_path / "lake"
    init_lake(lake)
    ingest_source("humaneval", None, lake=lake)
    server = FakeOpenAIServer()
    calls = []

    def reply(body, index):
        calls.append(body)
        return GOOD if "has_close_elements" in body["messages"][-1]["content"] else "Sure! Here you go: {not json"
    server.reply = reply
    with server:
        kw = dict(backend="openai", model="fake-model", base_url=server.base_url, api_key="x", source="humaneval",
                  limit=3, chunk=2)
        report = run_synth(lake, **kw)
        assert report["seeds"] == 3 and report["ok"] == 1 and report["tests"] == 7
        assert sum(report["failures"].values()) == 2
        n_calls = len(calls)
        again = run_synth(lake, **kw)  # served from silver.llm_calls
        assert len(calls) == n_calls and again["cached_calls"] == 3
    con = connect(lake, read_only=True)
    attempts = con.execute("SELECT status, count(*) FROM silver.synth_attempts GROUP BY 1 ORDER BY 1").fetchall()
    synth = con.execute("SELECT count(*) FROM silver.tests WHERE origin = 'synth'").fetchone()[0]
    con.close()
    assert dict(attempts)["ok"] == 1 and sum(n for _, n in attempts) == 3 and synth == 7
    # the seed is the synthesized problem's reference: it passes the synthesized tests
    report = execute(lake, selection="reference", sources=["synth"])
    assert dict(report.status_counts) == {"pass": 7}
