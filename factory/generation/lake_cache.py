"""LLM calls cached in the lake: a GenerationCache over silver.llm_calls for the stages that call models (sample,
synth, gentests). Known results are read once; new ones are buffered and written by the stage's commit."""
from __future__ import annotations

import json

from factory.generation.types import ChatRequest, GenerationResult
from factory.lake import connect
from factory.lake.commit import utcnow


class LakeCallCache:
    """GenerationCache backed by silver.llm_calls; new results are buffered until the chunk commits."""

    def __init__(self, lake, backend: str, model: str, purpose: str):
        with connect(lake, read_only=True) as con:
            rows = con.execute("SELECT request_hash, response, finish_reasons, prompt_tokens, completion_tokens, "
                               "latency_s FROM silver.llm_calls WHERE backend = ? AND model = ? AND error IS NULL",
                               [backend, model]).fetchall()
        self.known = {r[0]: GenerationResult(json.loads(r[1]), r[3] or 0, r[4] or 0, r[5] or 0.0, None,
                                             json.loads(r[2]) if r[2] else []) for r in rows}
        self.pending: dict[str, dict] = {}
        self.backend, self.model, self.purpose = backend, model, purpose

    def get(self, request_hash: str) -> GenerationResult | None:
        return self.known.get(request_hash)

    def put(self, request_hash: str, request: ChatRequest, result: GenerationResult) -> None:
        self.known[request_hash] = result
        self.pending[request_hash] = {
            "request_hash": request_hash, "backend": self.backend, "model": self.model, "purpose": self.purpose,
            "params": json.dumps(request.params.to_dict()), "prompt": json.dumps(list(request.messages)),
            "response": json.dumps(result.completions), "finish_reasons": json.dumps(result.finish_reasons),
            "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "latency_s": result.latency_s, "error": result.error, "created_at": utcnow()}

    def flush(self, run) -> int:
        rows = list(self.pending.values())
        self.pending = {}
        return run.write("silver.llm_calls", rows)
