"""What every route of `factory serve` shares: reading a bounded JSON body, mapping errors to status codes and
metrics (:meth:`Service.endpoint`), and running sandbox jobs for a request whose client may go away
(:class:`Running`, :class:`RetryPlaces`)."""
from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import OrderedDict

from starlette.requests import Request
from starlette.responses import JSONResponse

from factory.sandbox import Job

from .engine import Overloaded, ServerShutdown, Ticket, TooLarge, VerifierEngine
from .protocol import BadRequest, Caps

MAX_BODY_MB = 8.0
MAX_BODY_BYTES = int(MAX_BODY_MB * (1 << 20))
RETRY_PLACE_S = 300.0       # how long a 504'd request keeps its place in the queue for its retry


class ClientGone(Exception):
    """The client disconnected (or timed out and closed the connection) before its answer was ready."""


class NotStarted(Exception):
    """Programs of a request did not start before its deadline (HTTP 504: retry)."""


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the body is already read: the next ASGI message is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
        await asyncio.sleep(0)


class Running:
    """The tickets of one request, awaited: results as they finish; the client's departure or a start deadline
    takes the rest back from the engine (:meth:`VerifierEngine.cancel`)."""

    def __init__(self, engine: VerifierEngine, tickets: list[Ticket], done: asyncio.Queue, names: dict[str, str]):
        self.engine, self.done, self.names = engine, done, names
        self.left = {t.job.program_id: t for t in tickets}

    async def results(self, request: Request | None = None, deadline: float | None = None):
        """(caller's program id, ticket) as each finishes. ``request``: watch for its client going away
        (raises :class:`ClientGone`). ``deadline`` (monotonic): programs not started by then are taken back and
        :class:`NotStarted` raised; started ones are still awaited."""
        watch = asyncio.ensure_future(_disconnected(request)) if request is not None else None
        get = None
        try:
            while self.left:
                if get is None:
                    get = asyncio.ensure_future(self.done.get())
                wait = {get} | ({watch} if watch is not None else set())
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                done, _ = await asyncio.wait(wait, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                if get in done:
                    ticket, get = get.result(), None
                    if self.left.pop(ticket.job.program_id, None) is not None:
                        yield self.names[ticket.job.program_id], ticket
                    continue
                if watch is not None and watch in done:
                    raise ClientGone()
                # the deadline passed: what has not started goes back; what runs is awaited
                removed = self.engine.take_back_waiting(list(self.left.values()), "expired")
                deadline = None
                if removed:
                    raise NotStarted(f"{len(removed)} of this request's programs had not started")
        finally:
            if get is not None:
                get.cancel()
            if watch is not None:
                watch.cancel()
            if self.left:   # the client went away, the request was cancelled or failed: nobody reads the rest
                self.engine.cancel(list(self.left.values()), "client_gone")
                self.left = {}


class RetryPlaces:
    """Bodies answered 504 keep their queue position (priority) for a while: verl's client retries a 504 with
    the same body, and the retry should not go to the back of the line. Also counts the 504s of a body, so its
    client's last attempt is not answered 504 (a 504 there would only turn into a lost answer)."""

    def __init__(self, ttl: float = RETRY_PLACE_S, size: int = 100_000):
        self.ttl, self.size = ttl, size
        self.places: OrderedDict[str, tuple[float, int, float]] = OrderedDict()

    def take(self, key: str) -> tuple[float | None, int]:
        """(priority, 504s so far) of a body answered 504 before, else (None, 0)."""
        hit = self.places.pop(key, None)
        if hit is None or hit[2] < time.monotonic():
            return None, 0
        return hit[0], hit[1]

    def keep(self, key: str, priority: float, times: int) -> None:
        self.places[key] = (priority, times, time.monotonic() + self.ttl)
        while len(self.places) > self.size:
            self.places.popitem(last=False)


def error_response(status: int, message: str, request_id: str, field: str | None = None,
                   retry_after: int | None = None, **extra):
    headers = {"X-Request-ID": request_id, **({"Retry-After": str(retry_after)} if retry_after is not None else {})}
    body = {"error": message, "request_id": request_id, **extra, **({"field": field} if field else {})}
    return JSONResponse(body, status_code=status, headers=headers)


class Service:
    """The engine, the caps and the body limit one app's routes share, with the request plumbing around them."""

    def __init__(self, engine: VerifierEngine, caps: Caps = Caps(), max_body_bytes: int = MAX_BODY_BYTES):
        self.engine, self.caps, self.max_body_bytes = engine, caps, max_body_bytes
        self.metrics = engine.metrics

    async def read_body(self, request: Request) -> bytes:
        chunks, size, cap = [], 0, self.max_body_bytes
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                chunks = []
                if size > 8 * cap:   # no more reading: the client sees the connection close
                    break
                continue             # read the rest (discarded) so the client gets a clean 413
            chunks.append(chunk)
        if size > cap:
            raise BadRequest(f"request body of {size}+ bytes is over this server's limit of "
                             f"{cap / (1 << 20):g} MB ({cap} bytes; factory serve --max-body-mb): split the batch",
                             None, 413)
        return b"".join(chunks)

    async def read_json(self, request: Request, raw: bytes | None = None, needs: str | None = None):
        """The parsed body; with ``needs`` (" with 'code'"), a 400 unless it is a JSON object."""
        raw = await self.read_body(request) if raw is None else raw
        if not raw.strip():
            raise BadRequest("empty request body: send a JSON object", None, 400)
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise BadRequest(f"malformed JSON: {exc}", None, 400) from None
        if needs is not None and not isinstance(body, dict):
            raise BadRequest(f"request body must be a JSON object{needs}", None)
        return body

    def endpoint(self, name: str):
        """Decorator: ``fn(request, request_id)`` becomes a Starlette handler; known failures become their status
        codes (400/413/429/499/503/504), anything else a 500 naming it; each request is counted under ``name``."""
        def wrap(fn):
            async def handler(request: Request):
                rid = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
                t0 = time.perf_counter()
                try:
                    response = await fn(request, rid)
                except BadRequest as exc:
                    extra = {"limit_bytes": self.max_body_bytes} if exc.status == 413 and exc.field is None else {}
                    response = error_response(exc.status, str(exc), rid, exc.field, **extra)
                except ClientGone:   # nobody reads this; 499 (client closed request) for the metrics
                    response = error_response(499, "client closed the connection", rid)
                except NotStarted as exc:
                    response = error_response(504, f"not started in time ({exc}): the server is busy, retry", rid,
                                              retry_after=1)
                except Overloaded as exc:
                    response = error_response(503 if exc.draining else 429, str(exc), rid,
                                              retry_after=exc.retry_after)
                except TooLarge as exc:
                    response = error_response(413, str(exc), rid)
                except ServerShutdown as exc:
                    response = error_response(503, str(exc), rid, retry_after=5)
                except Exception as exc:  # noqa: BLE001 - a bug of ours is a 500 naming it, never a verdict
                    response = error_response(500, f"verifier error (not your code): {type(exc).__name__}: {exc}",
                                              rid)
                response.headers.setdefault("X-Request-ID", rid)
                self.metrics.request_done(name, response.status_code, time.perf_counter() - t0)
                return response
            return handler
        return wrap

    def start_jobs(self, jobs: list[Job], limits, priority: float | None = None) -> Running:
        """Admit and queue every job."""
        self.engine.admit(len(jobs))
        loop, done = asyncio.get_running_loop(), asyncio.Queue()   # finished tickets, from the pump threads
        on_done = lambda ticket: loop.call_soon_threadsafe(done.put_nowait, ticket)
        tickets = self.engine.submit(jobs, limits, on_done, priority=priority) if jobs else []
        return Running(self.engine, tickets, done,
                       {t.job.program_id: j.program_id for t, j in zip(tickets, jobs)})

    async def run_jobs(self, jobs: list[Job], limits, request: Request, deadline: float | None = None,
                       priority: float | None = None) -> dict[str, Ticket]:
        """Admit, queue and await every job (taken back if the client goes); keyed by the caller's program id."""
        return {pid: t async for pid, t in self.start_jobs(jobs, limits, priority).results(request, deadline)}
