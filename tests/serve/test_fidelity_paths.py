"""The byte-level comparison on every path that judges a stdio test (issue 42's false pass: a program printing
the byte 0xFF matched an expected U+FFFD): /submit, /v1/judge, factory.reward.compute_score (through the
verifier and in-process) and `ingest jsonl --map language=...` + `factory execute`. The same program printing
the character's real UTF-8 bytes passes everywhere."""
from __future__ import annotations

import json

import pytest

from factory.sandbox import languages

from tests.serve.conftest import post

pytestmark = pytest.mark.skipif(languages.toolchain("cpp") is None, reason=languages.missing_message("cpp"))

BYTE_FF = "#include <cstdio>\nint main(){ fputs(\"\\xff\\n\", stdout); }"           # not UTF-8: one raw byte
REAL_FFFD = "#include <cstdio>\nint main(){ fputs(\"\\xef\\xbf\\xbd\\n\", stdout); }"   # U+FFFD in UTF-8
EXPECTED = "\ufffd\n"


def fenced(code: str) -> str:
    return f"```cpp\n{code}\n```"


def test_submit_compares_bytes(server):
    data = {"id": 1, "test": [{"input": {"stdin": ""}, "output": {"stdout": EXPECTED}}]}
    for code, accepted in ((BYTE_FF, False), (REAL_FFFD, True)):
        status, _, got = post(server.url + "/submit", {"dataset": "x", "id": 1, "completion": fenced(code),
                                                       "config": {"language": "cpp", "provided_data": data}})
        assert status == 200 and got["accepted"] is accepted, got


def test_v1_judge_compares_bytes(server):
    gt = {"inputs": [""], "outputs": [EXPECTED], "language": "cpp", "comparison": "exact"}
    status, _, got = post(server.url + "/v1/judge", {"items": [{"id": "ff", "completion": fenced(BYTE_FF),
                                                                "ground_truth": gt},
                                                               {"id": "ok", "completion": fenced(REAL_FFFD),
                                                                "ground_truth": gt}]})
    assert status == 200, got
    rewards = {item["id"]: item["reward"] for item in got["items"]}
    assert rewards == {"ff": 0.0, "ok": 1.0}, got


def test_compute_score_compares_bytes_through_the_verifier_and_in_process(server):
    from factory import reward

    gt = json.dumps({"inputs": [""], "outputs": [EXPECTED], "language": "cpp"})
    reward.use_verifier(server.url)
    try:
        assert reward.compute_score("codecontests", fenced(BYTE_FF), gt) == 0.0
        assert reward.compute_score("codecontests", fenced(REAL_FFFD), gt) == 1.0
    finally:
        reward.use_verifier(None)
    assert reward.compute_score("codecontests", fenced(BYTE_FF), gt) == 0.0   # the in-process pool


def test_ingest_and_execute_compare_bytes(tmp_path):
    from factory.stages.execute import execute
    from factory.stages.ingest import ingest_source
    from tests.lakeutil import init_lake, query

    lake = init_lake(tmp_path / "lake")
    src = tmp_path / "rows.jsonl"
    with src.open("w") as f:
        for pid, code in (("ff", BYTE_FF), ("real", REAL_FFFD)):
            f.write(json.dumps({"id": pid, "q": "print the replacement character", "lang": "cpp", "sol": code,
                                "tests": [{"input": "", "output": EXPECTED}]}) + "\n")
    ingest_source("jsonl", [src], lake=lake, source="bytes", test_format="stdio",
                  mapping={"id": "id", "question": "q", "tests": "tests", "solution": "sol", "language": "lang"})
    execute(lake, workers=1)
    got = dict(query(lake, """SELECT pb.source_id, e.status FROM silver.executions e
                              JOIN silver.programs p USING (program_id) JOIN silver.problems pb USING (problem_id)"""))
    assert got == {"ff": "fail", "real": "pass"}, got
