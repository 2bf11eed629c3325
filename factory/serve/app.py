"""`factory serve`: the HTTP verifier (Starlette on uvicorn) in front of :class:`VerifierEngine`.

Endpoints
- ``POST /run_code``  SandboxFusion RunCodeRequest -> RunCodeResponse (verl's ``sandbox_fusion`` utility and
  the ``sandbox-fusion`` client call it unchanged)
- ``POST /submit``    SandboxFusion SubmitRequest -> EvalResult, tests from ``config.provided_data``
- ``POST /v1/judge``  native batch: many (program or completion, tests) in one request; per item the
  ``silver.executions`` rows and the reward; ``"stream": true`` answers NDJSON, one line per finished item
- ``GET /health`` (alive), ``GET /ready`` (pool warm and not draining), ``GET /metrics`` (Prometheus),
  ``GET /v1/stats`` (the same as JSON)

Status codes: 400 names the field (malformed JSON, a missing, mistyped, non-finite, negative or over-cap field,
an unsupported language with the supported list); 413 body (``--max-body-mb``) or batch too large; 429 queue full
and 503 draining, both with Retry-After; 504 (``/run_code`` only) the program did not start before its client's
deadline (verl's client retries a 504; the retry keeps its place in the queue). An infrastructure failure the
service could not fix by retrying is a SandboxError (``/run_code``) or an item ``error`` - never a failed test.

A request whose client has gone (disconnected, or timed out and closed the connection) takes its programs back:
those not started leave the queue; started ones run out and their verdicts are dropped (``/v1/stats`` counters
``client_gone_queued`` / ``client_gone_running``; expired ones ``expired_queued``).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections import OrderedDict

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route

from factory.sandbox import Job

from .engine import Overloaded, ServerShutdown, Ticket, TooLarge, VerifierEngine
from .protocol import (BadRequest, Caps, _flag, _get, _positive, check_language, parse_run_code,
                       program_from_completion, request_limits, run_code_response, score, tests_from_provided,
                       verdict_rows)

MAX_BODY_MB = 8.0
MAX_BODY_BYTES = int(MAX_BODY_MB * (1 << 20))
START_MARGIN_S = 2.0        # a /run_code program must start this long before (its client's deadline - its run)
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

    def __init__(self, engine: VerifierEngine, tickets: list[Ticket], waiter: "Waiter", names: dict[str, str]):
        self.engine, self.waiter, self.names = engine, waiter, names
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
                    get = asyncio.ensure_future(self.waiter.queue.get())
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


def _error(status: int, message: str, request_id: str, field: str | None = None, retry_after: int | None = None,
           **extra):
    headers = {"X-Request-ID": request_id}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    body = {"error": message, "request_id": request_id, **extra}
    if field:
        body["field"] = field
    return JSONResponse(body, status_code=status, headers=headers)


class Waiter:
    """Finished tickets handed from pump threads to one request's event loop."""

    def __init__(self):
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()

    def __call__(self, ticket: Ticket) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, ticket)


def create_app(engine: VerifierEngine, caps: Caps = Caps(), max_body_bytes: int = MAX_BODY_BYTES,
               queue_timeout_s: float | None = None, client_retries: int = 2) -> Starlette:
    """``queue_timeout_s``: how long a /run_code program may wait to start; None: derived per request from its
    client's deadline (compile_timeout + run_timeout + 10 s, minus prefetch x (the run's CPU limit + 1 s) - what
    a program handed to the sandboxes may still take - and a 2 s margin). ``client_retries``: how many 504s of
    one body its client retries (verl: 2); the attempt after those waits for its program instead."""
    metrics = engine.metrics
    places = RetryPlaces()

    async def read_body(request: Request) -> bytes:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body_bytes:
                chunks = []
                if size > 8 * max_body_bytes:   # no more reading: the client sees the connection close
                    break
                continue                        # read the rest (discarded) so the client gets a clean 413
            chunks.append(chunk)
        if size > max_body_bytes:
            raise BadRequest(f"request body of {size}+ bytes is over this server's limit of "
                             f"{max_body_bytes / (1 << 20):g} MB ({max_body_bytes} bytes; factory serve "
                             f"--max-body-mb): split the batch", None, 413)
        return b"".join(chunks)

    async def read_json(request: Request, raw: bytes | None = None):
        raw = await read_body(request) if raw is None else raw
        if not raw.strip():
            raise BadRequest("empty request body: send a JSON object", None, 400)
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise BadRequest(f"malformed JSON: {exc}", None, 400) from None

    def endpoint(name: str):
        def wrap(fn):
            async def handler(request: Request):
                rid = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
                t0 = time.perf_counter()
                try:
                    response = await fn(request, rid)
                except BadRequest as exc:
                    extra = {"limit_bytes": max_body_bytes} if exc.status == 413 and exc.field is None else {}
                    response = _error(exc.status, str(exc), rid, exc.field, **extra)
                except ClientGone:   # nobody reads this; 499 (client closed request) for the metrics
                    response = _error(499, "client closed the connection", rid)
                except NotStarted as exc:
                    response = _error(504, f"not started in time ({exc}): the server is busy, retry", rid,
                                      retry_after=1)
                except Overloaded as exc:
                    response = _error(503 if exc.draining else 429, str(exc), rid, retry_after=exc.retry_after)
                except TooLarge as exc:
                    response = _error(413, str(exc), rid)
                except ServerShutdown as exc:
                    response = _error(503, str(exc), rid, retry_after=5)
                except Exception as exc:  # noqa: BLE001 - a bug of ours is a 500 naming it, never a verdict
                    response = _error(500, f"verifier error (not your code): {type(exc).__name__}: {exc}", rid)
                response.headers.setdefault("X-Request-ID", rid)
                metrics.request_done(name, response.status_code, time.perf_counter() - t0)
                return response
            return handler
        return wrap

    def start_jobs(jobs: list[Job], limits, priority: float | None = None) -> Running:
        """Admit and queue every job."""
        engine.admit(len(jobs))
        waiter = Waiter()
        tickets = engine.submit(jobs, limits, waiter, priority=priority) if jobs else []
        return Running(engine, tickets, waiter, {t.job.program_id: j.program_id for t, j in zip(tickets, jobs)})

    async def run_jobs(jobs: list[Job], limits, request: Request, deadline: float | None = None,
                       priority: float | None = None) -> dict[str, Ticket]:
        """Admit, queue and await every job (taken back if the client goes); keyed by the caller's program id."""
        running = start_jobs(jobs, limits, priority)
        return {pid: t async for pid, t in running.results(request, deadline)}

    @endpoint("run_code")
    async def run_code(request: Request, rid: str):
        arrived = time.monotonic()
        raw = await read_body(request)
        body = await read_json(request, raw)
        job, limits, client_wait = parse_run_code(body, engine, caps)
        budget = queue_timeout_s
        if budget is None:   # start early enough that even a program using its whole CPU limit answers in time
            run_s = engine.prefetch * (job.limits_for(limits).cpu_s + 1.0)
            budget = max(1.0, client_wait - run_s - START_MARGIN_S)
        key = hashlib.sha1(raw).hexdigest()
        priority, expired_before = places.take(key)
        if priority is None:
            priority = arrived
        # the client's last attempt: no 504 (it would be scored as an error); it waits, taken back if the client
        # gives up
        deadline = arrived + budget if expired_before < client_retries else None
        try:
            ticket = (await run_jobs([job], limits, request, deadline=deadline, priority=priority))[job.program_id]
        except NotStarted:
            places.keep(key, priority, expired_before + 1)   # the retry of this body starts where this one stood
            raise
        return JSONResponse(run_code_response(ticket, rid))

    @endpoint("submit")
    async def submit(request: Request, rid: str):
        body = await read_json(request)
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object", None)
        _get(body, "dataset", str, required=True)
        sub_id = _get(body, "id", (str, int), required=True)
        completion = _get(body, "completion", str, required=True)
        config = _get(body, "config", dict, required=True)
        check_language(config, where="config.")
        for key in ("dataset_type", "locale"):
            _get(config, key, str, where="config.")
        _get(config, "is_fewshot", bool, where="config.")
        if _get(config, "custom_extract_logic", str, where="config."):
            raise BadRequest("field 'config.custom_extract_logic' is not supported by this verifier (it extracts "
                             "the code itself)", "config.custom_extract_logic")
        extra = _get(config, "extra", dict, default={}, where="config.")
        _get(extra, "entry_point", str, where="config.extra.")
        _positive(config.get("compile_timeout"), "config.compile_timeout", 3600.0, zero_ok=True)
        provided = config.get("provided_data")
        if provided is None:
            raise BadRequest("config.provided_data is required: this verifier judges the tests you send "
                             "(registered SandboxFusion datasets are not served)", "config.provided_data")
        if isinstance(provided, list):   # a list of problems: the one with this id
            match = [p for p in provided if isinstance(p, dict) and str(p.get("id")) == str(sub_id)]
            if not match:
                raise BadRequest(f"config.provided_data has no problem with id {sub_id!r}", "config.provided_data")
            provided = match[0]
        tests, entry, preamble = tests_from_provided(provided)
        from factory.reward import is_binary
        try:   # extra.reward follows the ground truth's reward spec, as /v1/judge does
            submit_binary = is_binary(provided)
        except ValueError as exc:
            raise BadRequest(f"'config.provided_data.reward': {exc}"[:300], "config.provided_data.reward") from None
        entry = extra.get("entry_point") or entry
        limits = request_limits(engine, caps, cpu_s=config.get("run_timeout"), memory_mb=extra.get("memory_limit_MB"),
                                where="config.", names=("run_timeout", "extra.memory_limit_MB"))
        code, status, kind = program_from_completion(completion, entry, tests)
        base = {"id": sub_id, "extracted_code": code or "", "full_code": code, "test_code": None,
                "extracted_type": kind}
        if code is None:
            return JSONResponse({**base, "accepted": False, "tests": [],
                                 "extra": {"request_id": rid, "extraction": status}})
        job = Job("submit", code, tests, entry_point=entry, preamble=preamble)
        ticket = (await run_jobs([job], limits, request))["submit"]
        if ticket.error or any(v.status == "infra_error" for v in ticket.verdicts):
            why = ticket.error or next(f"{v.error_type}: {v.error_message}" for v in ticket.verdicts
                                       if v.status == "infra_error")
            return _error(503, f"verifier failed, not your code: {why}", rid, retry_after=2)
        rows = verdict_rows(ticket, str(sub_id))
        cases = []
        for row in rows:
            ok = row["status"] == "pass"
            exec_info = {"status": "Success" if ok else "Failed", "message": row["error_message"] or "",
                         "compile_result": None, "executor_pod_name": None, "files": {},
                         "run_result": {"status": "TimeLimitExceeded" if row["status"] == "timeout" else "Finished",
                                        "execution_time": (row["wall_ms"] or 0) / 1000, "return_code": 0 if ok else 1,
                                        "stdout": row["stdout"], "stderr": row["stderr"]}}
            cases.append({"passed": ok, "exec_info": exec_info, "test_info": {"test_id": row["test_id"],
                                                                              "status": row["status"]}})
        accepted = bool(rows) and all(c["passed"] for c in cases) and len(rows) == len(tests)
        return JSONResponse({**base, "accepted": accepted, "tests": cases,
                             "extra": {"request_id": rid, "infra_retries": ticket.infra_retries,
                                       "reward": score(rows, [t.test_id for t in tests], binary=submit_binary)}})

    def parse_items(body) -> tuple[list, list[dict], object, dict]:
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object with 'items'", None)
        items = _get(body, "items", list, required=True)
        if len(items) > caps.max_items:
            raise BadRequest(f"{len(items)} items is over this server's batch cap of {caps.max_items}; split it",
                             "items", 413)
        lim = _get(body, "limits", dict, default={})
        limits = request_limits(engine, caps, cpu_s=lim.get("cpu_s"), memory_mb=lim.get("memory_mb"),
                                output_bytes=lim.get("max_output_bytes"), where="limits.")
        _flag(body, "stream", False)
        # binary absent: each item is scored by its ground truth's reward spec ("reward": {"kind": ...}, else soft)
        opts = {"exclude_in_process": _flag(body, "exclude_in_process", True), "binary": _flag(body, "binary", None)}
        jobs, meta = [], []
        for i, item in enumerate(items):
            where = f"items[{i}]."
            if not isinstance(item, dict):
                raise BadRequest(f"items[{i}] must be an object", f"items[{i}]")
            item_id = str(_get(item, "id", (str, int), default=i, where=where))
            truth = _get(item, "ground_truth", (dict, str), where=where)
            if truth is None and "tests" in item:
                truth = {k: item[k] for k in ("tests", "entry_point", "test_preamble") if k in item}
            if truth is None:
                raise BadRequest(f"missing required field '{where}ground_truth' (or '{where}tests')",
                                 f"{where}ground_truth")
            tests, entry, preamble = tests_from_provided(truth, where=f"{where}ground_truth")
            if item.get("code") is not None:
                code, status = _get(item, "code", str, where=where), "given"
            elif item.get("completion") is None:
                raise BadRequest(f"missing required field '{where}code' (or '{where}completion')", f"{where}code")
            else:
                completion = _get(item, "completion", str, required=True, where=where)
                code, status, _ = program_from_completion(completion, entry, tests)
            from factory.reward import is_binary
            try:   # the release's reward spec travels in the ground truth: binary (all pass) or soft (fraction)
                item_binary = is_binary(truth, opts["binary"])
            except ValueError as exc:
                raise BadRequest(f"'{where}ground_truth.reward': {exc}"[:300], f"{where}ground_truth.reward") from None
            meta.append({"id": item_id, "extraction": status, "test_ids": [t.test_id for t in tests],
                         "binary": item_binary})
            # this problem's calibrated limit (silver.time_limits): the item's, else the exported ground truth's
            # (as factory.reward uses it in process); capped by the server
            from factory.reward import ground_truth_cpu_s
            cpu_s = item["cpu_s"] if item.get("cpu_s") is not None else ground_truth_cpu_s(truth)
            if cpu_s is not None:
                cpu_s = _positive(cpu_s, f"{where}cpu_s", caps.max_cpu_s)
            if code is not None and tests:
                jobs.append(Job(f"{i}", code, tests, entry_point=entry, preamble=preamble, cpu_s=cpu_s))
        return jobs, meta, limits, opts

    def item_result(m: dict, ticket: Ticket | None, opts: dict) -> dict:
        out = {"id": m["id"], "extraction": m["extraction"], "tests": len(m["test_ids"])}
        if ticket is None:
            return {**out, "reward": 0.0, "passed": False, "rows": [], "infra_retries": 0, "error": None}
        rows = verdict_rows(ticket, m["id"])
        infra = [r for r in rows if r["status"] == "infra_error"]
        error = ticket.error or (f"infra_error after {ticket.infra_retries} retries: {infra[0]['error_type']}: "
                                 f"{infra[0]['error_message']}" if infra else None)
        reward = None if error else score(rows, m["test_ids"], opts["exclude_in_process"], m["binary"])
        return {**out, "reward": reward, "passed": reward == 1.0 if reward is not None else None, "rows": rows,
                "infra_retries": ticket.infra_retries, "error": error}

    @endpoint("judge")
    async def judge(request: Request, rid: str):
        body = await read_json(request)
        jobs, meta, limits, opts = parse_items(body)
        if not body.get("stream"):
            done = await run_jobs(jobs, limits, request)
            results = [item_result(m, done.get(str(i)), opts) for i, m in enumerate(meta)]
            return JSONResponse({"request_id": rid, "items": results})
        running = start_jobs(jobs, limits)
        queued = {j.program_id for j in jobs}

        async def lines():
            sent = 0
            for i, m in enumerate(meta):   # unextractable items answer at once
                if str(i) not in queued:
                    sent += 1
                    yield json.dumps({"type": "item", "index": i, **item_result(m, None, opts)}) + "\n"
            # Starlette cancels this generator when the client disconnects: Running takes the rest back
            async for pid, t in running.results():
                i = int(pid)
                sent += 1
                yield json.dumps({"type": "item", "index": i, **item_result(meta[i], t, opts)}) + "\n"
            yield json.dumps({"type": "end", "request_id": rid, "items": sent}) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson", headers={"X-Request-ID": rid})

    async def health(request: Request):
        return JSONResponse({"status": "ok"})

    async def ready(request: Request):
        ok = engine.ready
        return JSONResponse({"ready": ok, "draining": engine.draining, "queue_depth": engine.queue_depth()},
                            status_code=200 if ok else 503)

    def state() -> dict:
        return {"queue_depth": engine.queue_depth(), "waiting": engine.waiting(), "pools": len(engine.pools),
                "workers": engine.workers, "ready": engine.ready}

    async def prometheus(request: Request):
        return PlainTextResponse(metrics.prometheus(**state()), media_type="text/plain; version=0.0.4")

    async def stats(request: Request):
        body = metrics.snapshot(**state())
        if engine.cluster is not None:   # --engine ray: the nodes serving, and what node losses cost
            body["cluster"] = {"nodes": engine.cluster.nodes, "lost_nodes": len(engine.cluster.lost_nodes),
                               "retried_batches": engine.cluster.retried_batches}
        return JSONResponse(body)

    async def not_found(request: Request, exc):
        return JSONResponse({"error": f"no endpoint {request.method} {request.url.path}; endpoints: "
                             "POST /run_code, /submit, /v1/judge; GET /health, /ready, /metrics, /v1/stats"},
                            status_code=exc.status_code if hasattr(exc, "status_code") else 404)

    routes = [Route("/run_code", run_code, methods=["POST"]), Route("/submit", submit, methods=["POST"]),
              Route("/v1/judge", judge, methods=["POST"]), Route("/health", health), Route("/ready", ready),
              Route("/metrics", prometheus), Route("/v1/stats", stats)]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    app.state.engine = engine
    return app


def serve(host: str = "127.0.0.1", port: int = 8080, workers: int | None = None, *, max_queue: int = 4096,
          infra_retries: int = 2, drain_s: float = 30.0, caps: Caps = Caps(), log_level: str = "warning",
          base_limits=None, on_ready=None, ray_address: str | None = None, max_body_mb: float = MAX_BODY_MB,
          queue_timeout_s: float | None = None, prefetch: int = 1, client_retries: int = 2) -> int:
    """Run the service until SIGINT/SIGTERM; then stop admitting (503), finish in-flight work for up to drain_s
    seconds, fail the rest explicitly. Returns the number of programs failed at shutdown."""
    import uvicorn

    engine = VerifierEngine(workers, max_queue=max_queue, infra_retries=infra_retries, base_limits=base_limits,
                            ray_address=ray_address, prefetch=prefetch)
    engine.warm()
    app = create_app(engine, caps, max_body_bytes=int(max_body_mb * (1 << 20)), queue_timeout_s=queue_timeout_s,
                     client_retries=client_retries)

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            engine.draining = True          # new requests get 503 at once; in-flight ones keep running
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=drain_s,
                            access_log=False, lifespan="off")
    server = Server(config)
    if on_ready is not None:
        on_ready(engine)
    try:
        server.run()
    except KeyboardInterrupt:   # uvicorn re-raises the signal it handled, after its graceful shutdown
        pass
    finally:
        failed = engine.drain(timeout=1.0)
    return failed
