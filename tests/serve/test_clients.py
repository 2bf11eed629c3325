"""`factory serve` driven by the clients trainers use, unchanged: the `sandbox-fusion` package and verl's
`sandbox_fusion` utility (real HTTP, real sandbox, real CodeContests / HumanEval data)."""
from __future__ import annotations

import gzip
import json
import threading

import pytest

from tests.serve.conftest import post

WRONG_STDIO = "print('no answer here')\n"


@pytest.fixture(scope="module")
def contests(shared_data):
    cc = shared_data / "codecontests_subset300"
    ok = {t for t, p, k in json.loads((cc / "verify_reference_solutions.json").read_text()) if p == k}
    rows = [json.loads(x) for x in (cc / "codecontests_subset300.jsonl").open()]
    return [r for r in rows if r["task_id"] in ok][:5]


def test_sandbox_fusion_client_run_code(server):
    import sandbox_fusion as sf

    ok = sf.run_code(sf.RunCodeRequest(code="print(sum(map(int, input().split())))", stdin="2 3\n",
                                       language="python"), endpoint=server.url)
    assert ok.status == sf.RunStatus.Success and ok.run_result.stdout == "5\n" and ok.run_result.return_code == 0
    assert sf.summary_run_code_result(ok, sf.SummaryMapping()) == "Success"
    crash = sf.run_code(sf.RunCodeRequest(code="raise SystemExit(4)", language="python"), endpoint=server.url)
    assert crash.status == sf.RunStatus.Failed and crash.run_result.return_code == 4
    slow = sf.run_code(sf.RunCodeRequest(code="while True: pass", language="python", run_timeout=1),
                       endpoint=server.url)
    assert slow.run_result.status == sf.CommandRunStatus.TimeLimitExceeded
    assert sf.summary_run_code_result(slow, sf.SummaryMapping(RunTimeout="TLE")) == "TLE"


def test_sandbox_fusion_submit_judges_codecontests(server, contests):
    import sandbox_fusion as sf

    for row in contests:
        data = {"id": row["task_id"], "test": [{"input": {"stdin": t["input"]}, "output": {"stdout": t["output"]}}
                                                for t in row["tests"]]}
        good = sf.submit(sf.SubmitRequest(dataset="code_contests", id=row["task_id"],
                                          completion=f"```python\n{row['reference_solution_python']}\n```",
                                          config=sf.TestConfig(provided_data=data)), endpoint=server.url)
        assert good.accepted, (row["task_id"], [t.test_info for t in good.tests if not t.passed])
        assert len(good.tests) == len(row["tests"]) and good.extracted_type == "fenced"
        bad = sf.submit(sf.SubmitRequest(dataset="code_contests", id=row["task_id"],
                                         completion=f"```python\n{WRONG_STDIO}```",
                                         config=sf.TestConfig(provided_data=data)), endpoint=server.url)
        assert not bad.accepted and not any(t.passed for t in bad.tests)


def test_verl_sandbox_fusion_compute_score(server, contests):
    from verl.utils.reward_score import default_compute_score

    sem = threading.Semaphore(8)
    for row in contests:
        truth = json.dumps({"inputs": [t["input"] for t in row["tests"]], "outputs": [t["output"] for t in row["tests"]]})
        for answer, expected in ((row["reference_solution_python"], 1.0), (WRONG_STDIO, 0.0)):
            res = default_compute_score("codecontests", f"```python\n{answer}\n```", truth,
                                        sandbox_fusion_url=server.url + "/run_code", concurrent_semaphore=sem,
                                        memory_limit_mb=1024)
            score, meta = res if isinstance(res, tuple) else (res, None)
            score = score["score"] if isinstance(score, dict) else score
            assert score == expected, (row["task_id"], expected, meta and meta[:2])


def test_verl_check_correctness_statuses(server):
    from verl.utils.reward_score.sandbox_fusion.utils import check_correctness

    url = server.url + "/run_code"
    io = {"inputs": ["1\n", "2\n"], "outputs": ["2\n", "4\n"]}
    assert check_correctness(url, io, "print(int(input()) * 2)")[0] == [True, True]
    assert check_correctness(url, io, "print(int(input()) + 1)")[0] == [True, False]
    assert check_correctness(url, io, "raise ValueError('x')")[0] == [-2, -2]          # runtime error
    assert check_correctness(url, io, "while True: pass", timeout=1)[0] == [-3, -3]   # timeout
    fn = {"inputs": ["1\n2"], "outputs": ["3"], "fn_name": "add"}   # verl wraps: one JSON argument per line
    assert check_correctness(url, fn, "def add(a, b):\n    return a + b\n")[0] == [True]


@pytest.fixture(scope="module")
def humaneval(shared_data):
    return [json.loads(x) for x in gzip.open(shared_data / "humaneval" / "HumanEval.jsonl.gz", "rt")][:8]


def _truth(r) -> dict:
    return {"tests": [{"test_id": "check", "kind": "check", "code": r["test"]}], "entry_point": r["entry_point"]}


def test_native_batch_rows_and_rewards_match_in_process(server, humaneval, monkeypatch):
    import factory.reward as reward

    completions = [f"```python\n{r['prompt'] + r['canonical_solution']}\n```" for r in humaneval]
    completions += [f"```python\n{humaneval[(i + 1) % len(humaneval)]['prompt']}"
                    f"{humaneval[(i + 1) % len(humaneval)]['canonical_solution']}\n```" for i in range(len(humaneval))]
    truths = [json.dumps(_truth(r)) for r in humaneval] * 2
    local = reward.score_completions(completions, truths)
    monkeypatch.setenv("FACTORY_VERIFIER_URL", server.url)
    remote = reward.score_completions(completions, truths)
    assert local == remote == [1.0] * len(humaneval) + [0.0] * len(humaneval)
    code, _, body = post(server.url + "/v1/judge", {"items": [{"id": "h0", "completion": completions[0],
                                                               "ground_truth": _truth(humaneval[0])}]})
    row = body["items"][0]["rows"][0]
    assert code == 200 and row["program_id"] == "h0" and row["status"] == "pass"
    assert {"test_id", "limits_hash", "cpu_ms", "wall_ms", "sandbox_version", "judged_in_process"} <= set(row)


def test_streamed_batch_answers_every_item(server, humaneval):
    import urllib.request

    items = [{"id": r["task_id"], "code": r["prompt"] + r["canonical_solution"], "ground_truth": _truth(r)}
             for r in humaneval]
    items.append({"id": "no-code", "completion": "I cannot answer that.", "ground_truth": _truth(humaneval[0])})
    req = urllib.request.Request(server.url + "/v1/judge", data=json.dumps({"items": items, "stream": True}).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        assert r.headers["Content-Type"].startswith("application/x-ndjson")
        lines = [json.loads(x) for x in r.read().decode().splitlines()]
    assert lines[-1]["type"] == "end" and lines[-1]["items"] == len(items)
    by_id = {x["id"]: x for x in lines[:-1]}
    assert set(by_id) == {i["id"] for i in items}
    assert all(by_id[r["task_id"]]["reward"] == 1.0 for r in humaneval)
    assert by_id["no-code"]["reward"] == 0.0 and by_id["no-code"]["extraction"] != "ok"


def test_native_batch_per_item_time_limit_and_checker(server):
    """An item's `cpu_s` (its problem's calibrated limit) and a ground truth's `checker` (any valid answer)."""
    spin = ("import time\nt = time.process_time()\nwhile time.process_time() - t < 1.5:\n    pass\n"
            "print(int(input()) * 2)\n")
    truth = {"inputs": ["2\n"], "outputs": ["4\n"]}
    any_order = {"inputs": ["3\n"], "outputs": ["1 2 3\n"],
                 "checker": "def check(i, e, a):\n    return sorted(a.split()) == sorted(e.split())\n"}
    items = [{"id": "slow-default", "code": spin, "ground_truth": truth},
             {"id": "slow-calibrated", "code": spin, "ground_truth": truth, "cpu_s": 3.0},
             {"id": "slow-exported", "code": spin, "ground_truth": dict(truth, cpu_s=3.0)},
             {"id": "other-order", "code": "print(3, 1, 2)", "ground_truth": any_order},
             {"id": "wrong", "code": "print(3, 3, 2)", "ground_truth": any_order}]
    code, _, body = post(server.url + "/v1/judge", {"items": items, "limits": {"cpu_s": 1.0}})
    assert code == 200, body
    got = {i["id"]: (i["reward"], i["rows"][0]["status"]) for i in body["items"]}
    assert got == {"slow-default": (0.0, "timeout"), "slow-calibrated": (1.0, "pass"), "slow-exported": (1.0, "pass"),
                   "other-order": (1.0, "pass"), "wrong": (0.0, "fail")}
    assert json.loads(next(i for i in body["items"] if i["id"] == "slow-calibrated")["rows"][0]["limits"])["cpu_s"] == 3
    code, _, body = post(server.url + "/v1/judge", {"items": [dict(items[1], cpu_s=-1)]})
    assert code == 400 and "items[0].cpu_s" in json.dumps(body)
    code, _, body = post(server.url + "/v1/judge", {"items": [{"code": "print(1)", "ground_truth":
                                                                dict(truth, checker=3)}]})
    assert code == 400 and "checker" in json.dumps(body)
