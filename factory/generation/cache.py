"""Result caches (in-memory, JSONL file) and a token/call budget shared by all backends.

Cache protocol: ``get(request_hash) -> GenerationResult | None`` and
``put(request_hash, request, result)``. Failed results (``error`` set) are never stored.
"""
from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Protocol

from .types import ChatRequest, GenerationResult, canonical_json


class GenerationCache(Protocol):
    def get(self, request_hash: str) -> GenerationResult | None: ...

    def put(self, request_hash: str, request: ChatRequest, result: GenerationResult) -> None: ...


class MemoryCache:
    """Dict-backed cache; thread-safe."""

    def __init__(self):
        self._data: dict[str, dict] = {}
        self._lock = threading.Lock()

    def get(self, request_hash: str) -> GenerationResult | None:
        with self._lock:
            d = self._data.get(request_hash)
        return GenerationResult.from_dict(d) if d is not None else None

    def put(self, request_hash: str, request: ChatRequest, result: GenerationResult) -> None:
        if result.error is None:
            with self._lock:
                self._data[request_hash] = result.to_dict()

    def __len__(self) -> int:
        return len(self._data)


class JsonlCache(MemoryCache):
    """Append-only JSONL file: one ``{"hash", "request", "result"}`` line per put; last line wins on load.

    A torn final line (crash mid-write) is ignored on load.
    """

    def __init__(self, path: str | Path):
        super().__init__()
        self.path = Path(path)
        if self.path.exists():
            with self.path.open(encoding="utf-8") as f:
                for line in f:
                    with contextlib.suppress(ValueError, KeyError, TypeError):
                        rec = json.loads(line)
                        self._data[rec["hash"]] = rec["result"]

    def put(self, request_hash: str, request: ChatRequest, result: GenerationResult) -> None:
        if result.error is not None:
            return
        rec = {"hash": request_hash, "request": request.to_dict(), "result": result.to_dict()}
        line = canonical_json(rec) + "\n"
        with self._lock:
            self._data[request_hash] = rec["result"]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)


class BudgetExhausted(RuntimeError):
    """Raised by ``Backend.generate`` when the budget ran out; ``results`` holds what was done (None = not run)."""

    def __init__(self, message: str, results: list[GenerationResult | None] | None = None):
        super().__init__(message)
        self.results = results or []


class Budget:
    """Caps on backend calls and tokens (prompt + completion). Cache hits cost nothing.

    New calls are refused once a cap is reached; calls already in flight finish and are charged, so the
    token cap can be overshot by at most the in-flight calls.
    """

    def __init__(self, max_tokens: int | None = None, max_calls: int | None = None):
        self.max_tokens, self.max_calls = max_tokens, max_calls
        self.tokens_used = 0
        self.calls_started = 0
        self._lock = threading.Lock()

    def try_start(self) -> bool:
        """Reserve one call; False when the budget is exhausted."""
        with self._lock:
            if self.exhausted:
                return False
            self.calls_started += 1
            return True

    def charge(self, tokens: int) -> None:
        with self._lock:
            self.tokens_used += max(0, int(tokens))

    @property
    def exhausted(self) -> bool:
        return ((self.max_calls is not None and self.calls_started >= self.max_calls)
                or (self.max_tokens is not None and self.tokens_used >= self.max_tokens))

    def __repr__(self) -> str:
        return (f"Budget(calls={self.calls_started}/{self.max_calls}, "
                f"tokens={self.tokens_used}/{self.max_tokens})")
