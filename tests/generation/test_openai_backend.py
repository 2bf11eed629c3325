"""OpenAI backend against a real HTTP server on 127.0.0.1 (no client patching)."""
from __future__ import annotations

import json
import time

import pytest

from factory.generation import (Budget, BudgetExhausted, ChatRequest, JsonlCache, MemoryCache, SamplingParams,
                                make_backend)


def _req(text: str, **params) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}], SamplingParams(**params))


def _backend(srv, **kw):
    kw.setdefault("backoff_base_s", 0.01)
    kw.setdefault("timeout_s", 5.0)
    return make_backend("openai", "fake-model", base_url=srv.base_url, api_key="k", **kw)


def test_basic_roundtrip_and_params(fake_server):
    b = _backend(fake_server)
    res = b.generate([_req("hello", n=2, seed=7, temperature=0.3, top_p=0.9, max_tokens=11, stop=["\n#"]),
                      _req("world")])
    assert res[0].completions == ["echo[hello] seed=7 i=0", "echo[hello] seed=7 i=1"]
    assert res[0].finish_reasons == ["stop", "stop"] and res[0].error is None
    assert res[0].prompt_tokens == 1 and res[0].completion_tokens == 6 and res[0].latency_s > 0
    assert res[1].completions == ["echo[world] seed=None i=0"]
    body = next(x for x in fake_server.bodies if x["messages"][0]["content"] == "hello")
    assert body["model"] == "fake-model" and body["n"] == 2 and body["seed"] == 7
    assert body["temperature"] == 0.3 and body["top_p"] == 0.9 and body["max_tokens"] == 11
    assert body["stop"] == ["\n#"]


def test_retries_5xx_then_succeeds(fake_server):
    fake_server.plan = [500, 503, 502]
    b = _backend(fake_server, concurrency=1, max_retries=4)
    (res,) = b.generate([_req("x")])
    assert res.error is None and res.completions == ["echo[x] seed=None i=0"]
    assert len(fake_server.bodies) == 4


def test_backoff_is_exponential(fake_server):
    fake_server.plan = [500, 500, 500]
    b = _backend(fake_server, concurrency=1, backoff_base_s=0.1, max_retries=3)
    t0 = time.perf_counter()
    (res,) = b.generate([_req("x")])
    elapsed = time.perf_counter() - t0
    assert res.error is None
    assert elapsed >= (0.1 + 0.2 + 0.4) * 0.5  # jitter factor in [0.5, 1]
    assert elapsed < 3


def test_retries_exhausted_gives_error_result(fake_server):
    fake_server.plan = [500] * 3
    b = _backend(fake_server, concurrency=1, max_retries=2)
    res = b.generate([_req("x"), _req("y")])
    assert res[0].error and "500" in res[0].error and res[0].completions == []
    assert res[1].error is None
    assert len(fake_server.bodies) == 4


def test_client_error_not_retried(fake_server):
    fake_server.plan = [400]
    b = _backend(fake_server, max_retries=5)
    (res,) = b.generate([_req("x")])
    assert res.error and "400" in res.error
    assert len(fake_server.bodies) == 1


def test_429_retry_after_honoured(fake_server):
    fake_server.plan = [("status", 429, 0.3)]
    b = _backend(fake_server, backoff_base_s=0.001)
    t0 = time.perf_counter()
    (res,) = b.generate([_req("x")])
    assert res.error is None and time.perf_counter() - t0 >= 0.3
    assert len(fake_server.bodies) == 2


def test_timeout_is_retried(fake_server):
    fake_server.plan = [("sleep", 2.0)]
    b = _backend(fake_server, timeout_s=0.4, max_retries=2)
    t0 = time.perf_counter()
    (res,) = b.generate([_req("slow")])
    assert res.error is None and res.completions == ["echo[slow] seed=None i=0"]
    assert len(fake_server.bodies) == 2 and time.perf_counter() - t0 < 1.8


def test_timeout_exhausted(fake_server):
    fake_server.plan = [("sleep", 1.0)] * 2
    b = _backend(fake_server, timeout_s=0.3, max_retries=1)
    (res,) = b.generate([_req("slow")])
    assert res.error and "Timeout" in res.error


def test_concurrency_bounded_and_parallel(fake_server):
    fake_server.delay_s = 0.25
    b = _backend(fake_server, concurrency=4)
    t0 = time.perf_counter()
    res = b.generate([_req(f"q{i}") for i in range(8)])
    elapsed = time.perf_counter() - t0
    assert [r.completions[0] for r in res] == [f"echo[q{i}] seed=None i=0" for i in range(8)]
    assert fake_server.max_in_flight == 4
    assert elapsed < 8 * 0.25 * 0.75


def test_server_ignoring_n_is_topped_up(fake_server):
    fake_server.ignore_n = True
    b = _backend(fake_server)
    (res,) = b.generate([_req("x", n=3, seed=10)])
    assert res.completions == ["echo[x] seed=10 i=0", "echo[x] seed=11 i=0", "echo[x] seed=12 i=0"]
    assert len(fake_server.bodies) == 3


def test_continue_final_message_extra_body(fake_server):
    b = _backend(fake_server, continue_final_message=True, extra_body={"top_k": 5})
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "```python\n"}]
    b.generate([ChatRequest(msgs)])
    body = fake_server.bodies[-1]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["top_k"] == 5


def test_env_base_url(fake_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    b = make_backend("openai", "fake-model")
    assert b.generate([_req("env")])[0].completions == ["echo[env] seed=None i=0"]


def test_cache_memory_and_jsonl(fake_server, tmp_path):
    path = tmp_path / "cache.jsonl"
    b = _backend(fake_server, cache=JsonlCache(path))
    first = b.generate([_req("a", seed=1), _req("b", seed=1)])
    assert len(fake_server.bodies) == 2 and not first[0].cached
    again = _backend(fake_server, cache=JsonlCache(path)).generate([_req("b", seed=1), _req("a", seed=1)])
    assert len(fake_server.bodies) == 2
    assert all(r.cached for r in again)
    assert again[1].completions == first[0].completions
    # failures are not cached
    fake_server.plan = [400]
    mem = MemoryCache()
    b2 = _backend(fake_server, cache=mem)
    assert b2.generate([_req("c")])[0].error and len(mem) == 0


def test_budget_calls_and_resume_from_cache(fake_server):
    cache = MemoryCache()
    b = _backend(fake_server, concurrency=1, cache=cache, budget=Budget(max_calls=2))
    reqs = [_req(f"r{i}") for i in range(5)]
    with pytest.raises(BudgetExhausted) as ei:
        b.generate(reqs)
    done = ei.value.results
    assert [r is not None for r in done] == [True, True, False, False, False]
    assert len(fake_server.bodies) == 2
    b.budget = Budget(max_calls=3)  # cached hits are free: the 3 remaining fit exactly
    res = b.generate(reqs)
    assert len(fake_server.bodies) == 5 and [r.cached for r in res] == [True, True, False, False, False]


def test_budget_tokens_finishes_in_flight(fake_server):
    fake_server.delay_s = 0.1
    budget = Budget(max_tokens=1)
    b = _backend(fake_server, concurrency=3, budget=budget)
    with pytest.raises(BudgetExhausted) as ei:
        b.generate([_req(f"r{i}") for i in range(12)])
    done = [r for r in ei.value.results if r is not None]
    assert 1 <= len(done) <= 3 + 2  # in-flight calls complete; no new ones start once exhausted
    assert all(r.error is None for r in done)
    assert budget.tokens_used >= 1


def test_synth_and_sample_roundtrip_over_http(fake_server):
    """Synthesis prompt -> server -> parser, then sampling prompt -> server -> code extraction."""
    from factory.generation.sample import build_sample_messages, extract_code
    from factory.generation.synth import build_synth_messages, parse_synth_output

    tests = [f"assert inc({i}) == {i + 1}" for i in range(6)]

    def reply(body, i):
        user = body["messages"][-1]["content"] if body["messages"][-1]["role"] == "user" else ""
        if "LeetCode-style" in user:
            return "```json\n" + json.dumps({"question": "Write a function inc(x) that returns x plus one.",
                                             "tests": tests}) + "\n```"
        return f"Sure!\n```python\ndef inc(x):\n    return x + {1 if i == 0 else 2}\n\nprint(inc(3))\n```"

    fake_server.reply = reply
    b = _backend(fake_server)
    (syn,) = b.generate([ChatRequest(build_synth_messages("def f(x):\n    return x + 1\n"))])
    parsed = parse_synth_output(syn.completions[0])
    assert parsed.ok and parsed.entry_point == "inc" and parsed.tests == tests
    (smp,) = b.generate([ChatRequest(build_sample_messages(parsed.question, tests=parsed.tests,
                                                           assistant_prefix=False), SamplingParams(n=2))])
    codes = [extract_code(c, parsed.entry_point) for c in smp.completions]
    assert codes == [("def inc(x):\n    return x + 1\n", "ok"), ("def inc(x):\n    return x + 2\n", "ok")]


def test_several_endpoints_share_the_load_and_fail_over():
    """`--base-url A --base-url B`: requests spread over both real servers; one endpoint failing every call
    (after its retries) costs nothing, its requests are answered by the other."""
    from tests.generation.conftest import FakeOpenAIServer

    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        a.delay_s = b.delay_s = 0.05
        backend = make_backend("openai", "fake-model", base_url=[a.base_url, b.base_url], api_key="k",
                               concurrency=2, backoff_base_s=0.01, timeout_s=5.0, max_retries=1)
        out = backend.generate([_req(f"p{i}", max_tokens=5) for i in range(12)])
        assert all(r.error is None and r.completions for r in out)
        assert len(a.bodies) >= 3 and len(b.bodies) >= 3 and len(a.bodies) + len(b.bodies) == 12
        a.plan = [500] * 100                      # A is down: everything goes to B after A's retries
        out = backend.generate([_req(f"q{i}", max_tokens=5) for i in range(6)])
        assert all(r.error is None and r.completions == [f"echo[q{i}] seed=None i=0"] for i, r in enumerate(out))
        assert backend.failures[0] >= 1 and backend.failures[1] == 0


def test_sample_stage_keeps_every_server_at_its_concurrency(tmp_path):
    """`factory sample --base-url A --base-url B --concurrency 3` on HumanEval: each commit chunk holds enough
    problems that both real servers reach 3 requests in flight (a fixed chunk of 4 problems would cap them at 2)."""
    from factory.stages.ingest import ingest_source
    from factory.stages.sample import run_sample
    from tests.generation.conftest import FakeOpenAIServer
    from tests.lakeutil import init_lake
    from tests.lakeutil import query as q

    lake = tmp_path / "lake"
    init_lake(lake)
    ingest_source("humaneval", None, lake=lake)
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        a.delay_s = b.delay_s = 0.3
        report = run_sample(lake, backend="openai", model="fake-model", base_url=[a.base_url, b.base_url],
                            api_key="k", concurrency=3, source="humaneval", limit=12, n=1, max_tokens=8)
        assert report["new_calls"] == 12 and report["problems"] == 12
        assert a.max_in_flight == 3 and b.max_in_flight == 3
        assert len(a.bodies) + len(b.bodies) == 12
    assert q(lake, "SELECT count(*) FROM silver.programs WHERE origin = 'sample'") == [(12,)]
    # the chunking is what ops.runs shows: 12 problems at 6 in flight -> 2 commits
    assert q(lake, "SELECT count(*) FROM ops.runs WHERE stage = 'sample'") == [(2,)]
