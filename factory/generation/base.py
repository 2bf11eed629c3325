"""Backend base class: cache lookup, budget gating and result bookkeeping around a backend's own calls."""
from __future__ import annotations

from typing import Iterable

from .cache import Budget, BudgetExhausted, GenerationCache
from .types import ChatRequest, GenerationResult, request_hash


class Gate:
    """Per-``generate`` helper handed to backends: ``start()`` before each request, ``done()`` after it."""

    def __init__(self, backend: "Backend", hashes: dict[int, str]):
        self._backend, self._hashes = backend, hashes

    def start(self) -> bool:
        budget = self._backend.budget
        return budget.try_start() if budget is not None else True

    def done(self, request: ChatRequest, result: GenerationResult) -> None:
        if self._backend.budget is not None:
            self._backend.budget.charge(result.total_tokens)
        cache = self._backend.cache
        if cache is not None and result.error is None:
            cache.put(self._hashes[id(request)], request, result)


class Backend:
    """Base for all backends. Subclasses implement ``_run_one`` or override ``_run_many``."""

    name = "base"

    def __init__(self, model: str, *, cache: GenerationCache | None = None, budget: Budget | None = None):
        self.model = model
        self.cache = cache
        self.budget = budget

    @property
    def parallel_requests(self) -> int:
        """How many requests this engine works on at once; stages hand it at least this many per chunk."""
        return 1

    def request_hash(self, request: ChatRequest) -> str:
        return request_hash(self.name, self.model, request.messages, request.params)

    def generate(self, requests: Iterable[ChatRequest]) -> list[GenerationResult]:
        """Results in request order. Raises :class:`BudgetExhausted` (carrying partial results) when the
        budget stops the run before every request was served."""
        requests = [r if isinstance(r, ChatRequest) else ChatRequest(*r) for r in requests]
        results: list[GenerationResult | None] = [None] * len(requests)
        hashes: dict[int, str] = {}
        pending: list[int] = []
        for i, req in enumerate(requests):
            hit = None
            if self.cache is not None:
                h = hashes[id(req)] = self.request_hash(req)
                hit = self.cache.get(h)
            if hit is not None:
                hit.cached = True
                results[i] = hit
            else:
                pending.append(i)
        if pending:
            for i, res in zip(pending, self._run_many([requests[i] for i in pending], Gate(self, hashes))):
                results[i] = res
        if missing := sum(r is None for r in results):
            raise BudgetExhausted(f"budget exhausted ({self.budget}); {missing} request(s) not run", results)
        return results  # type: ignore[return-value]

    def _run_many(self, requests: list[ChatRequest], gate: Gate) -> list[GenerationResult | None]:
        """Default: sequential ``_run_one`` calls; stop at the first refused start."""
        out: list[GenerationResult | None] = [None] * len(requests)
        for i, req in enumerate(requests):
            if not gate.start():
                break
            out[i] = self._run_one(req)
            gate.done(req, out[i])
        return out

    def _run_one(self, request: ChatRequest) -> GenerationResult:
        raise NotImplementedError

    def warm(self) -> None:
        """Load what the first request would load (a lazily built engine); default no-op."""

    def close(self) -> None:
        """Release resources (servers, models); default no-op."""


def apply_stop(text: str, stop) -> tuple[str, bool]:
    """Cut ``text`` at the earliest stop string; returns (text, stopped)."""
    cut = min((i for i in (text.find(s) for s in stop or ()) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)
