"""OpenAI-compatible chat backend (vLLM serve, llama.cpp server, OpenAI): thread pool, retries, timeouts."""
from __future__ import annotations

import contextlib
import itertools
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .base import Backend, Gate
from .types import ChatRequest, GenerationResult

RETRY_STATUS = {408, 409, 425, 429}


class OpenAIBackend(Backend):
    """Chat completions over HTTP with ``concurrency`` worker threads.

    Transient failures (connection errors, timeouts, 408/409/429, 5xx) are retried up to ``max_retries``
    times with exponential backoff (``backoff_base_s * 2**attempt``, capped, with jitter; a ``Retry-After``
    header is honoured up to the cap). A request that still fails yields a result with ``error`` set.
    Servers that ignore ``n`` (llama.cpp) are topped up with extra calls (seed + k when a seed is set).
    ``continue_final_message=True`` sends vLLM's ``continue_final_message`` / ``add_generation_prompt``
    extras when the last message is an assistant prefix.
    """

    name = "openai"

    def __init__(self, model: str, *, base_url: str | list[str] | None = None, api_key: str | None = None,
                 concurrency: int = 8, max_retries: int = 4, timeout_s: float = 120.0,
                 backoff_base_s: float = 0.5, backoff_max_s: float = 30.0,
                 continue_final_message: bool = False, extra_body: dict | None = None,
                 client=None, cache=None, budget=None):
        super().__init__(model, cache=cache, budget=budget)
        self.concurrency = max(1, int(concurrency))
        self.max_retries, self.timeout_s = max_retries, timeout_s
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self.continue_final_message = continue_final_message
        self.extra_body = dict(extra_body or {})
        urls = [base_url] if isinstance(base_url, str) or base_url is None else list(base_url)
        # several endpoints: each request goes to the endpoint with the fewest requests in flight
        # (``concurrency`` per endpoint); one that still fails after its retries moves to the next endpoint
        self.clients = [client]
        if client is None:
            try:
                import openai
            except ImportError as e:  # pragma: no cover - depends on environment
                raise ImportError("the openai backend needs `pip install openai`") from e
            self.clients = [openai.OpenAI(base_url=u or os.environ.get("OPENAI_BASE_URL"),
                                          api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
                                          timeout=timeout_s, max_retries=0) for u in urls]
        self.in_flight = [0] * len(self.clients)
        self.failures = [0] * len(self.clients)
        self._lb = threading.Lock()

    @property
    def parallel_requests(self) -> int:
        return self.concurrency * len(self.clients)

    def _run_many(self, requests: list[ChatRequest], gate: Gate) -> list[GenerationResult | None]:
        def task(req: ChatRequest) -> GenerationResult | None:
            if not gate.start():
                return None
            res = self._run_one(req)
            gate.done(req, res)
            return res

        if (width := self.parallel_requests) == 1 or len(requests) == 1:
            return [task(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(width, len(requests))) as pool:
            return list(pool.map(task, requests))

    def _run_one(self, request: ChatRequest) -> GenerationResult:
        t0 = time.perf_counter()
        p = request.params
        result = GenerationResult()
        k = 0
        while len(result.completions) < p.n:
            seed = None if p.seed is None else p.seed + k
            try:
                resp = self._with_retries(request, p.n - len(result.completions), seed)
            except Exception as e:  # noqa: BLE001 - reported in the result, never raised
                result.error = f"{type(e).__name__}: {e}"
                break
            choices = sorted(resp.choices, key=lambda c: c.index)[: p.n - len(result.completions)]
            if not choices:
                result.error = "server returned no choices"
                break
            result.completions += [(c.message.content or "") for c in choices]
            result.finish_reasons += [c.finish_reason for c in choices]
            if resp.usage is not None:
                result.prompt_tokens += resp.usage.prompt_tokens or 0
                result.completion_tokens += resp.usage.completion_tokens or 0
            k += 1
        result.latency_s = time.perf_counter() - t0
        return result

    def _pick(self, tried: set[int]) -> int:
        with self._lb:
            free = [i for i in range(len(self.clients)) if i not in tried]
            i = min(free, key=lambda k: (self.in_flight[k], self.failures[k]))
            self.in_flight[i] += 1
            return i

    def _with_retries(self, request: ChatRequest, n: int, seed: int | None):
        tried: set[int] = set()
        while True:
            i = self._pick(tried)
            try:
                return self._with_retries_on(self.clients[i], request, n, seed)
            except Exception:
                with self._lb:
                    self.failures[i] += 1
                tried.add(i)
                if len(tried) == len(self.clients):
                    raise
            finally:
                with self._lb:
                    self.in_flight[i] -= 1

    def _with_retries_on(self, client, request: ChatRequest, n: int, seed: int | None):
        for attempt in itertools.count():
            try:
                return self._create(client, request, n, seed)
            except Exception as e:  # noqa: BLE001
                retryable, retry_after = _classify(e)
                if not retryable or attempt >= self.max_retries:
                    raise
                delay = min(self.backoff_max_s, self.backoff_base_s * 2 ** attempt)
                delay *= 0.5 + 0.5 * random.random()
                if retry_after is not None:
                    delay = min(self.backoff_max_s, max(delay, retry_after))
                time.sleep(delay)

    def _create(self, client, request: ChatRequest, n: int, seed: int | None):
        p = request.params
        kwargs = dict(model=self.model, messages=[dict(m) for m in request.messages],
                      temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_tokens, n=n,
                      timeout=self.timeout_s)
        if seed is not None:
            kwargs["seed"] = seed
        if p.stop:
            kwargs["stop"] = list(p.stop)
        extra = dict(self.extra_body)
        if self.continue_final_message and request.continues_assistant:
            extra.update(continue_final_message=True, add_generation_prompt=False)
        if extra:
            kwargs["extra_body"] = extra
        return client.chat.completions.create(**kwargs)


def _classify(exc: Exception) -> tuple[bool, float | None]:
    """(retryable, retry-after seconds) for an exception raised by the openai client."""
    try:
        import openai
    except ImportError:  # pragma: no cover
        return False, None
    if isinstance(exc, (openai.APIConnectionError,)):  # includes APITimeoutError
        return True, None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = None
        with contextlib.suppress(TypeError, ValueError, AttributeError):
            retry_after = float(exc.response.headers.get("retry-after"))
        return (status >= 500 or status in RETRY_STATUS), retry_after
    return False, None
