"""`factory serve`: the HTTP verifier (Starlette on uvicorn) in front of :class:`VerifierEngine` (docs/serve.md).

Endpoints, each described in its route module: SandboxFusion's ``POST /run_code`` and ``POST /submit``
(:mod:`.fusion_routes`), the native batch ``POST /v1/judge`` (:mod:`.batch_routes`), ``GET /health``, ``/ready``,
``/metrics``, ``/v1/stats`` (:mod:`.ops_routes`), and interpreter sessions (:mod:`.session_routes`;
``--max-sessions 0`` turns them off): ``POST /run_jupyter``, ``/get_observation``, ``/v1/sessions/{id}/run``,
``DELETE /v1/sessions/{id}``, ``GET /v1/sessions``.

Status codes: 400 names the field (malformed JSON, a missing, mistyped, non-finite, negative or over-cap field,
an unsupported language with the supported list); 413 body (``--max-body-mb``) or batch too large; 429 queue full
and 503 draining, both with Retry-After; 504 (``/run_code`` only) the program did not start before its client's
deadline (verl's client retries a 504; the retry keeps its place in the queue). An infrastructure failure the
service could not fix by retrying is a SandboxError (``/run_code``) or an item ``error`` - never a failed test.

A request whose client has gone takes its programs back: those not started leave the queue; started ones run
out, their verdicts dropped (``/v1/stats``: ``client_gone_queued`` / ``client_gone_running``, ``expired_queued``).
"""
from __future__ import annotations

from starlette.applications import Starlette

from factory.sandbox.session import SessionPool

from . import batch_routes, fusion_routes, ops_routes, session_routes
from .engine import VerifierEngine
from .protocol import Caps
from .routing import MAX_BODY_BYTES, MAX_BODY_MB, Service

ENDPOINTS = "POST /run_code, /submit, /v1/judge; GET /health, /ready, /metrics, /v1/stats"
SESSION_ENDPOINTS = "; sessions: POST /run_jupyter, /get_observation, /v1/sessions/{id}/run; DELETE /v1/sessions/{id}"


def create_app(engine: VerifierEngine, caps: Caps = Caps(), max_body_bytes: int = MAX_BODY_BYTES,
               queue_timeout_s: float | None = None, client_retries: int = 2, sessions=None) -> Starlette:
    """The Starlette app: one route module per responsibility (:mod:`.fusion_routes` SandboxFusion,
    :mod:`.batch_routes` /v1/judge, :mod:`.ops_routes` health and metrics, :mod:`.session_routes` interpreter
    sessions from ``sessions``, a :class:`~factory.sandbox.session.SessionPool`) over one :class:`Service`.

    ``queue_timeout_s``: how long a /run_code program may wait to start; None: derived per request from its
    client's deadline (compile_timeout + run_timeout + 10 s, minus prefetch x (the run's CPU limit + 1 s) - what
    a program handed to the sandboxes may still take - and a 2 s margin). ``client_retries``: how many 504s of
    one body its client retries (verl: 2); the attempt after those waits for its program instead."""
    svc = Service(engine, caps, max_body_bytes)
    routes = (fusion_routes.routes(svc, queue_timeout_s, client_retries) + batch_routes.routes(svc)
              + ops_routes.routes(svc))
    if sessions is not None:
        routes += session_routes.routes(svc, sessions)
    not_found = ops_routes.not_found_handler(ENDPOINTS + (SESSION_ENDPOINTS if sessions is not None else ""))
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    app.state.engine = engine
    return app


def serve(host: str = "127.0.0.1", port: int = 8080, workers: int | None = None, *, max_queue: int = 4096,
          infra_retries: int = 2, drain_s: float = 30.0, caps: Caps = Caps(), log_level: str = "warning",
          base_limits=None, on_ready=None, ray_address: str | None = None, max_body_mb: float = MAX_BODY_MB,
          queue_timeout_s: float | None = None, prefetch: int = 1, client_retries: int = 2,
          sessions: dict | None = None) -> int:
    """Run the service until SIGINT/SIGTERM; then stop admitting (503), finish in-flight work for up to drain_s
    seconds, fail the rest explicitly. Returns the number of programs failed at shutdown. ``sessions``: the
    :class:`~factory.sandbox.session.SessionPool` arguments (max_sessions, cpu_s_per_call, ...); None: no
    interpreter sessions."""
    import uvicorn

    engine = VerifierEngine(workers, max_queue=max_queue, infra_retries=infra_retries, base_limits=base_limits,
                            ray_address=ray_address, prefetch=prefetch)
    engine.warm()
    pool = SessionPool(**sessions) if sessions is not None else None
    app = create_app(engine, caps, max_body_bytes=int(max_body_mb * (1 << 20)), queue_timeout_s=queue_timeout_s,
                     client_retries=client_retries, sessions=pool)

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            engine.draining = True          # new requests get 503 at once; in-flight ones keep running
            super().handle_exit(sig, frame)

    server = Server(uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=drain_s,
                                   access_log=False, lifespan="off"))
    if on_ready is not None:
        on_ready(engine)
    try:
        server.run()
    except KeyboardInterrupt:   # uvicorn re-raises the signal it handled, after its graceful shutdown
        pass
    finally:
        failed = engine.drain(timeout=1.0)
        if pool is not None:
            pool.close_all()
    return failed
