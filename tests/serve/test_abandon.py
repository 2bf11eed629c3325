"""Work nobody waits for is not done: a client that times out or disconnects takes its not-yet-started programs
out of the queue (counted in /v1/stats and /metrics), so the server is free again at once instead of running an
abandoned backlog; and a /run_code program that cannot start before its client's deadline is answered 504 in
time, which verl's own client retries, so no answer is lost to a client read timeout."""
from __future__ import annotations

import json
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import requests

from tests.serve.conftest import Server, post

ADD = {"tests": [{"kind": "assert", "code": "assert add(2, 3) == 5"}], "entry_point": "add"}


def _burn(seconds: float) -> str:
    return f"import time\nt = time.process_time()\nwhile time.process_time() - t < {seconds}: pass\n"


def _slow_items(n: int, seconds: float) -> list[dict]:
    code = _burn(seconds) + "def add(a, b):\n    return a + b\n"
    return [{"id": str(i), "code": code, "ground_truth": ADD} for i in range(n)]


def _stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/v1/stats", timeout=10) as r:
        return json.loads(r.read())


def _wait_idle(url: str, within: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        if _stats(url)["queue_depth"] == 0:
            return time.monotonic() - t0
        time.sleep(0.1)
    raise AssertionError(f"queue not empty {within} s after the client left: {_stats(url)}")


@pytest.fixture(scope="module")
def one_worker():
    s = Server("--workers", "1", "--prefetch", "1", "--cpu-s", "5")
    yield s
    s.stop()


def test_batch_client_timeout_takes_its_queue_back(one_worker):
    url = one_worker.url
    before = _stats(url)["cancelled"]
    with pytest.raises(httpx.ReadTimeout):   # 24 x 0.5 s of work on one worker; the client waits 1.5 s
        httpx.post(url + "/v1/judge", json={"items": _slow_items(24, 0.5)}, timeout=httpx.Timeout(1.5))
    _wait_idle(url, within=3.0)             # not the ~10 s the abandoned backlog would take
    after = _stats(url)["cancelled"]
    gone = after["client_gone_queued"] - before["client_gone_queued"]
    assert gone >= 15, after                 # removed before they ran
    assert after["client_gone_running"] - before["client_gone_running"] <= 2
    t0 = time.monotonic()                    # the server serves the next client at once
    code, _, body = post(url + "/v1/judge", {"items": _slow_items(1, 0.1)})
    assert code == 200 and body["items"][0]["reward"] == 1.0 and time.monotonic() - t0 < 3
    with urllib.request.urlopen(url + "/metrics") as r:
        text = r.read().decode()
    assert f'factory_verifier_cancelled_total{{reason="client_gone_queued"}} {after["client_gone_queued"]}' in text
    assert 'factory_verifier_responses_total{endpoint="judge",code="499"}' in text


def test_run_code_clients_that_time_out_leave_nothing_behind(one_worker):
    url = one_worker.url
    before = _stats(url)["cancelled"]
    body = {"language": "python", "code": _burn(0.5) + "print('done')", "run_timeout": 5}

    def call(_):
        try:
            return requests.post(url + "/run_code", json=body, timeout=1.0).status_code
        except requests.exceptions.ReadTimeout:
            return "timeout"
    with ThreadPoolExecutor(16) as ex:
        outcomes = list(ex.map(call, range(16)))
    assert outcomes.count("timeout") >= 10, outcomes
    _wait_idle(url, within=3.0)
    after = _stats(url)["cancelled"]
    assert after["client_gone_queued"] - before["client_gone_queued"] >= 8, after


def test_stream_closed_after_the_first_item_cancels_the_rest(one_worker):
    url = one_worker.url
    before = _stats(url)["cancelled"]
    with httpx.stream("POST", url + "/v1/judge", json={"items": _slow_items(20, 0.4), "stream": True},
                      timeout=60) as r:
        first = json.loads(next(r.iter_lines()))
    assert first["type"] == "item" and first["reward"] == 1.0
    _wait_idle(url, within=3.0)
    after = _stats(url)["cancelled"]
    assert after["client_gone_queued"] - before["client_gone_queued"] >= 14, after


def test_verl_client_gets_504_in_time_and_retries_without_losing_an_answer():
    """One worker busy with a 1.8 s program (same limits, so the same pool); 6 verl `check_correctness` calls
    arrive behind it. They cannot start within the server's 1 s queue timeout, so they get a 504 (not a
    client read timeout); verl's client retries a 504 (1 s, then 2 s later) and every answer arrives."""
    from verl.utils.reward_score.sandbox_fusion.utils import check_correctness

    srv = Server("--workers", "1", "--prefetch", "1", "--queue-timeout-s", "1")
    try:
        blocker = threading.Thread(target=post, args=(srv.url + "/run_code", {"language": "python",
                                                                               "code": _burn(1.8), "run_timeout": 2}))
        blocker.start()
        time.sleep(0.2)
        sem = threading.Semaphore(64)
        io = {"inputs": ["4\n"], "outputs": ["8\n"]}
        code = _burn(0.05) + "print(int(input()) * 2)\n"
        with ThreadPoolExecutor(6) as ex:
            results = list(ex.map(lambda _: check_correctness(srv.url + "/run_code", io, code, timeout=2,
                                                              concurrent_semaphore=sem)[0], range(6)))
        blocker.join()
        assert results == [[True]] * 6, results
        stats = _stats(srv.url)
        assert stats["cancelled"]["expired_queued"] >= 6 and stats["responses"].get("run_code 504", 0) >= 6, stats
        assert stats["responses"]["run_code 200"] == 7
    finally:
        srv.stop()


def test_a_504_retry_keeps_its_place_in_the_queue():
    """A body answered 504 and sent again starts before requests that arrived after it first did."""
    srv = Server("--workers", "1", "--prefetch", "1", "--queue-timeout-s", "2")
    stamp = "import time\nprint(time.time())\n"
    try:
        blocker = threading.Thread(target=post, args=(srv.url + "/run_code", {
            "language": "python", "code": "import time\ntime.sleep(3)\n", "run_timeout": 5}))
        blocker.start()
        time.sleep(0.2)
        first = {"language": "python", "code": stamp, "run_timeout": 5}
        code, _, _ = post(srv.url + "/run_code", first)          # waits 2 s behind the blocker: 504
        assert code == 504
        later = {"language": "python", "code": stamp, "stdin": "x", "run_timeout": 5}
        ex = ThreadPoolExecutor(4)
        newer = [ex.submit(post, srv.url + "/run_code", later) for _ in range(2)]   # arrive after `first`
        time.sleep(0.2)
        retry = post(srv.url + "/run_code", first, timeout=30)       # verl resends the same body
        others = [f.result() for f in newer]
        blocker.join()
        ex.shutdown()
        assert retry[0] == 200 and all(o[0] == 200 for o in others), (retry, others)
        ran_at = float(retry[2]["run_result"]["stdout"])
        started_later = [float(o[2]["run_result"]["stdout"]) for o in others]
        assert all(ran_at < t for t in started_later), (ran_at, started_later)
    finally:
        srv.stop()


def test_the_clients_last_attempt_is_not_answered_504():
    """With --client-retries 1, a body already answered 504 once is its client's last attempt: it waits for its
    program (here behind a 2 s one) instead of getting a 504 its client would score as an error."""
    srv = Server("--workers", "1", "--prefetch", "1", "--queue-timeout-s", "0.5", "--client-retries", "1")
    try:
        blocker = threading.Thread(target=post, args=(srv.url + "/run_code", {
            "language": "python", "code": "import time\ntime.sleep(2.5)\n", "run_timeout": 5}))
        blocker.start()
        time.sleep(0.2)
        body = {"language": "python", "code": "print('here')", "run_timeout": 5}
        assert post(srv.url + "/run_code", body)[0] == 504
        code, _, answer = post(srv.url + "/run_code", body)
        assert code == 200 and answer["run_result"]["stdout"] == "here\n", answer
        other = {"language": "python", "code": "print('other')", "run_timeout": 5}   # a first attempt still gets 504s
        blocker2 = threading.Thread(target=post, args=(srv.url + "/run_code", {
            "language": "python", "code": "import time\ntime.sleep(1.5)\n", "run_timeout": 5}))
        blocker2.start()
        time.sleep(0.2)
        assert post(srv.url + "/run_code", other)[0] == 504
        blocker.join()
        blocker2.join()
    finally:
        srv.stop()
