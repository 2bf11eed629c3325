"""Types, hashing, cache/budget plumbing, transformers backend on a tiny random model, vllm wiring."""
from __future__ import annotations

import sys
import types

import pytest

from factory.generation import (Budget, BudgetExhausted, ChatRequest, GenerationResult, JsonlCache, MemoryCache,
                                SamplingParams, make_backend, request_hash)

MSG = [{"role": "user", "content": "hi"}]


def test_request_hash_stable_and_sensitive():
    h = request_hash("openai", "m", MSG, SamplingParams())
    assert h == "9d10afe299bd0800db1249e115dd1ae64aefec0277046eb069dfe7223d293493"  # golden: never change
    assert request_hash("openai", "m", [dict(content="hi", role="user")], SamplingParams()) == h
    others = {request_hash("vllm", "m", MSG, SamplingParams()), request_hash("openai", "m2", MSG, SamplingParams()),
              request_hash("openai", "m", MSG, SamplingParams(seed=1)),
              request_hash("openai", "m", MSG, SamplingParams(stop=["x"])),
              request_hash("openai", "m", [{"role": "user", "content": "hi "}], SamplingParams())}
    assert h not in others and len(others) == 5


def test_params_validation_and_roundtrip(tmp_path):
    assert SamplingParams(stop="x").stop == ("x",)
    with pytest.raises(ValueError):
        SamplingParams(n=0)
    r = GenerationResult(["a"], 3, 4, 0.5, None, ["stop"])
    assert GenerationResult.from_dict(r.to_dict()) == r and r.total_tokens == 7
    c = JsonlCache(tmp_path / "c.jsonl")
    req = ChatRequest(MSG)
    c.put("h1", req, r)
    (tmp_path / "c.jsonl").open("a").write('{"hash": "torn')  # crash mid-line
    assert JsonlCache(tmp_path / "c.jsonl").get("h1") == r


def test_make_backend_errors():
    with pytest.raises(ValueError):
        make_backend("nope", "m")
    with pytest.raises(ValueError):
        make_backend("openai", None)


def test_vllm_module_imports_without_vllm_and_errors_clearly(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    b = make_backend("vllm", "some/model")
    with pytest.raises(ImportError, match="vLLM"):
        b.generate([ChatRequest(MSG)])


def test_vllm_wiring_with_stub_module(monkeypatch):
    """Checks how LLM.chat is called (prefix modes, per-request params) using a stand-in vllm module."""
    calls = []

    class SP:
        def __init__(self, **kw):
            self.kw = kw

    class LLM:
        def __init__(self, model, **kw):
            self.model = model

        def chat(self, convs, sampling_params, use_tqdm, add_generation_prompt, continue_final_message):
            calls.append((len(convs), add_generation_prompt, continue_final_message))
            return [types.SimpleNamespace(prompt_token_ids=[1, 2, 3], outputs=[
                types.SimpleNamespace(text=f"{c[-1]['content']}#{k}", token_ids=[9] * 2, finish_reason="stop")
                for k in range(sp.kw["n"])]) for c, sp in zip(convs, sampling_params)]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SP))
    b = make_backend("vllm", "m", cache=MemoryCache())
    reqs = [ChatRequest(MSG, SamplingParams(n=2)),
            ChatRequest(MSG + [{"role": "assistant", "content": "pre"}]),
            ChatRequest([{"role": "user", "content": "x"}], SamplingParams(seed=3))]
    res = b.generate(reqs)
    assert calls == [(2, True, False), (1, False, True)]
    assert res[0].completions == ["hi#0", "hi#1"] and res[1].completions == ["pre#0"]
    assert res[0].prompt_tokens == 3 and res[0].completion_tokens == 4
    assert all(r.cached for r in b.generate(reqs)) and len(calls) == 2


# ---------------------------------------------------------------- transformers, tiny random model

@pytest.fixture(scope="module")
def tiny():
    from factory.generation.tiny import build_tiny_model
    return build_tiny_model(seed=0)


def _hf(tiny, **kw):
    model, tok = tiny
    return make_backend("transformers", "tiny-llama", model_obj=model, tokenizer=tok, device="cpu", **kw)


def test_tiny_generate_shapes_and_seed_determinism(tiny):
    b = _hf(tiny)
    p = SamplingParams(n=3, max_tokens=12, seed=5, temperature=1.0)
    reqs = [ChatRequest(MSG, p), ChatRequest([{"role": "user", "content": "def add(a, b):"}], p)]
    r1 = b.generate(reqs)
    r2 = b.generate(list(reversed(reqs)))
    assert [len(r.completions) for r in r1] == [3, 3]
    assert r1[0].completions == r2[1].completions and r1[1].completions == r2[0].completions
    assert r1[0].prompt_tokens > 0 and 0 < r1[0].completion_tokens <= 36
    assert all(f in ("stop", "length") for f in r1[0].finish_reasons)


def test_tiny_batched_unseeded_and_greedy(tiny):
    b = _hf(tiny, batch_size=2)
    reqs = [ChatRequest([{"role": "user", "content": "q" * (i + 1)}], SamplingParams(n=2, max_tokens=6))
            for i in range(3)]
    res = b.generate(reqs)
    assert [len(r.completions) for r in res] == [2, 2, 2]
    g = b.generate([ChatRequest(MSG, SamplingParams(n=3, temperature=0, max_tokens=6))])[0]
    assert len(set(g.completions)) == 1 and len(g.completions) == 3
    g2 = b.generate([ChatRequest(MSG, SamplingParams(n=1, temperature=0, max_tokens=6))])[0]
    assert g2.completions[0] == g.completions[0]


def test_tiny_chat_template_and_prefix(tiny):
    b = _hf(tiny)
    text = b.render(ChatRequest(MSG + [{"role": "assistant", "content": "```python\n"}]))
    assert text.endswith("<|im_start|>assistant\n```python\n")
    assert b.render(ChatRequest(MSG)).endswith("<|im_start|>assistant\n")


def test_tiny_stop_strings(tiny):
    b = _hf(tiny)
    p = SamplingParams(temperature=1.0, max_tokens=12, seed=3)
    full = b.generate([ChatRequest(MSG, p)])[0].completions[0]
    cut_at = next((full[i:i + 2] for i in range(1, len(full) - 1) if full[i:i + 2].isprintable()
                   and full[i:i + 2].strip()), None)
    assert cut_at is not None, full
    res = b.generate([ChatRequest(MSG, SamplingParams(temperature=1.0, max_tokens=12, seed=3, stop=[cut_at]))])[0]
    assert cut_at not in res.completions[0] and full.startswith(res.completions[0])
    assert res.finish_reasons == ["stop"]


def test_tiny_cache_and_budget(tiny):
    b = _hf(tiny, cache=MemoryCache(), budget=Budget(max_calls=1))
    reqs = [ChatRequest([{"role": "user", "content": f"p{i}"}], SamplingParams(max_tokens=4, seed=i))
            for i in range(3)]
    with pytest.raises(BudgetExhausted) as ei:
        b.generate(reqs)
    assert [r is not None for r in ei.value.results] == [True, False, False]
    b.budget = Budget(max_calls=2)
    res = b.generate(reqs)
    assert [r.cached for r in res] == [True, False, False]
    assert res[0].completions == ei.value.results[0].completions
