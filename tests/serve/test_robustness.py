"""`factory serve` under attack and under load: hacks fail, bad requests get a 4xx naming the problem, a burst
over the queue bound gets 429s and loses nothing, a killed server is an explicit client error (never a 0
reward), SIGTERM finishes in-flight work, metrics report what happened."""
from __future__ import annotations

import json
import signal
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.serve.conftest import ROOT, Server, post

ADD_TESTS = {"tests": [{"kind": "assert", "code": "assert add(2, 3) == 5"},
                       {"kind": "assert", "code": "assert add(-1, 1) == 0"}], "entry_point": "add"}
HACKS = {
    "early exit(0)": "import sys\ndef add(a, b):\n    return 7\nsys.exit(0)\n",
    "os._exit(0) at import": "import os\nos._exit(0)\ndef add(a, b):\n    return 7\n",
    "rigged __eq__": "class Any:\n    def __eq__(self, o):\n        return True\n    __ne__ = lambda s, o: False\n"
                     "def add(a, b):\n    return Any()\n",
    "patched assert via builtins": "import builtins\nbuiltins.AssertionError = type('X', (Exception,), {})\n"
                                   "def add(a, b):\n    return 7\n",
    "fork bomb": "import os\ndef add(a, b):\n    while True:\n        try:\n            os.fork()\n"
                 "        except OSError:\n            pass\n",
    "network": "import socket\ndef add(a, b):\n    s = socket.create_connection(('127.0.0.1', 22), timeout=1)\n"
               "    return a + b\n",
}


@pytest.mark.parametrize("name", list(HACKS))
def test_hacks_score_zero(server, name):
    code, _, body = post(server.url + "/v1/judge", {"items": [{"id": name, "code": HACKS[name],
                                                               "ground_truth": ADD_TESTS}]})
    item = body["items"][0]
    assert code == 200 and item["error"] is None and item["reward"] == 0.0, item
    ok_code, _, ok = post(server.url + "/v1/judge", {"items": [{"code": "def add(a, b):\n    return a + b\n",
                                                                "ground_truth": ADD_TESTS}]})
    assert ok["items"][0]["reward"] == 1.0       # the server is still healthy after the hack


def test_run_code_cannot_reach_the_network_or_the_host(server):
    code, _, body = post(server.url + "/run_code", {"language": "python", "code":
                                                    "import socket\nsocket.create_connection(('127.0.0.1', "
                                                    f"{server.port}), timeout=2)\nprint('reached')"})
    assert body["status"] == "Failed" and "reached" not in (body["run_result"]["stdout"] or "")
    # the project (its source, the lake) and the datasets are not in the program's filesystem view
    probes = [str(ROOT / "factory"), str(ROOT / "data_catalog.yaml"), str(ROOT.parent / "shared"), "/home"]
    code, _, body = post(server.url + "/run_code", {"language": "python", "code":
                                                    f"import os\nprint([os.path.exists(p) for p in {probes!r}])"})
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "[False, False, False, False]\n"


@pytest.mark.parametrize("body,status,needle", [
    (b"{not json", 400, "malformed JSON"),
    (b"", 400, "empty request body"),
    (b"[1, 2]", 400, "JSON object"),
    (json.dumps({"language": "python"}).encode(), 400, "'code'"),
    (json.dumps({"code": "print(1)", "language": "go"}).encode(), 400, "supported languages are python, python3, cpp"),
    (json.dumps({"code": "print(1)", "language": "klingon"}).encode(), 400, "not a known language"),
    (json.dumps({"code": 5, "language": "python"}).encode(), 400, "'code' must be a string"),
    (json.dumps({"code": "print(1)", "language": "python", "run_timeout": -1}).encode(), 400, "run_timeout"),
    (json.dumps({"code": "print(1)", "language": "python", "run_timeout": 10_000}).encode(), 400, "cap"),
    (json.dumps({"code": "print(1)", "language": "python", "files": {"../a.txt": "eA=="}}).encode(), 400, "files"),
    (json.dumps({"code": "print(1)", "language": "python", "fetch_files": ["/etc/passwd"]}).encode(), 400, "fetch_files"),
])
def test_bad_run_code_requests_get_clear_4xx(server, body, status, needle):
    code, headers, answer = post(server.url + "/run_code", body)
    assert code == status and needle in answer["error"], answer
    assert answer["request_id"] and headers.get("x-request-id") == answer["request_id"]


def test_bad_batch_requests_name_the_field(server):
    code, _, answer = post(server.url + "/v1/judge", {"items": [{"code": "x = 1"}]})
    assert code == 400 and answer["field"] == "items[0].ground_truth"
    code, _, answer = post(server.url + "/v1/judge", {"items": [{"code": "x = 1", "ground_truth": {"foo": 1}}]})
    assert code == 400 and "items[0].ground_truth" in answer["error"] and "foo" in answer["error"]
    code, _, answer = post(server.url + "/v1/judge", {"items": [], "limits": {"memory_mb": "lots"}})
    assert code == 400 and answer["field"] == "limits.memory_mb" and "must be a number" in answer["error"]
    code, _, answer = post(server.url + "/submit", {"dataset": "x", "id": 1, "completion": "print(1)",
                                                    "config": {}})
    assert code == 400 and answer["field"] == "config.provided_data"
    code, _, answer = post(server.url + "/nope", {})
    assert code == 404 and "/run_code" in answer["error"]


def test_oversized_body_is_413(server):
    code, _, answer = post(server.url + "/run_code", json.dumps({"language": "python",
                                                                  "code": "#" * (40 << 20)}).encode())
    assert code == 413 and "limit" in answer["error"]


def test_burst_over_the_queue_bound_gets_429_and_loses_nothing():
    srv = Server("--workers", "1", "--max-queue", "3")
    try:
        def one(i):
            body = {"language": "python", "code": f"import time\nt = time.process_time()\n"
                                                  f"while time.process_time() - t < 0.2: pass\nprint({i})"}
            first = post(srv.url + "/run_code", body)
            answer, tries = first, 0
            while answer[0] == 429 and tries < 200:
                time.sleep(min(float(answer[1].get("retry-after", 1)), 0.5))
                answer, tries = post(srv.url + "/run_code", body), tries + 1
            return i, first, answer
        with ThreadPoolExecutor(16) as ex:
            results = list(ex.map(one, range(16)))
        firsts = [f[0] for _, f, _ in results]
        assert firsts.count(429) >= 5 and firsts.count(200) >= 3, firsts
        assert all(int(f[1]["retry-after"]) >= 1 for _, f, _ in results if f[0] == 429)
        for i, _, (code, _, body) in results:   # every request, retried after its 429, got its own verdict
            assert code == 200 and body["status"] == "Success" and body["run_result"]["stdout"] == f"{i}\n"
        with urllib.request.urlopen(srv.url + "/metrics") as r:
            text = r.read().decode()
        assert 'factory_verifier_responses_total{endpoint="run_code",code="429"}' in text
        assert 'factory_verifier_events_total{event="rejected"}' in text
        assert 'factory_verifier_request_seconds{endpoint="run_code",quantile="0.99"}' in text
        assert "factory_verifier_queue_depth 0" in text
    finally:
        srv.stop()


def _slow_items(n: int, seconds: float) -> list[dict]:
    code = ("import time\ndef add(a, b):\n    t = time.process_time()\n"
            f"    while time.process_time() - t < {seconds}: pass\n    return a + b\n")
    return [{"id": str(i), "code": code, "ground_truth": ADD_TESTS} for i in range(n)]


def test_killed_server_is_an_explicit_error_never_a_zero_reward():
    from factory.sandbox.remote import VerifierClient, VerifierError

    srv = Server("--workers", "1")
    outcome = {}

    def call():
        try:
            outcome["rewards"] = [r["reward"] for r in VerifierClient(srv.url).judge(_slow_items(12, 0.3))]
        except VerifierError as exc:
            outcome["error"] = str(exc)
    t = threading.Thread(target=call)
    t.start()
    time.sleep(1.5)
    srv.stop(signal.SIGKILL)
    t.join(60)
    assert "rewards" not in outcome and "error" in outcome, outcome


def test_sigterm_finishes_in_flight_work_and_refuses_new():
    srv = Server("--workers", "1", "--drain-s", "60")
    answer = {}
    t = threading.Thread(target=lambda: answer.update(r=post(srv.url + "/v1/judge", {"items": _slow_items(6, 0.3)})))
    t.start()
    time.sleep(1.0)
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    try:
        late = post(srv.url + "/run_code", {"language": "python", "code": "print(1)"}, timeout=5)[0]
    except OSError:
        late = "refused"
    t.join(120)
    log = srv.stop()
    code, _, body = answer["r"]
    assert code == 200 and [i["reward"] for i in body["items"]] == [1.0] * 6    # no verdict lost
    assert late in (503, "refused")
    assert "0 in-flight programs failed" in log
