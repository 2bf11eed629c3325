"""Operations endpoints: ``GET /health`` (alive), ``GET /ready`` (pool warm and not draining), ``GET /metrics``
(Prometheus), ``GET /v1/stats`` (the same as JSON), SandboxFusion's ``GET /v1/ping`` ("pong"), a 501 naming the
alternative for SandboxFusion's dataset endpoints (``/list_datasets``, ``/get_prompts``, ...: registered data
sets are not served), and the 404/405 answer listing the endpoints."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from .routing import Service


def routes(svc: Service) -> list[Route]:
    engine, metrics = svc.engine, svc.metrics

    async def health(request: Request):
        return JSONResponse({"status": "ok"})

    async def ready(request: Request):
        ok = engine.ready
        return JSONResponse({"ready": ok, "draining": engine.draining, "queue_depth": engine.in_flight},
                            status_code=200 if ok else 503)

    def state() -> dict:
        return {"queue_depth": engine.in_flight, "waiting": engine.waiting(), "pools": len(engine.pools),
                "workers": engine.workers, "ready": engine.ready}

    async def prometheus(request: Request):
        return PlainTextResponse(metrics.prometheus(**state()), media_type="text/plain; version=0.0.4")

    async def stats(request: Request):
        body = metrics.snapshot(**state())
        if engine.cluster is not None:   # --engine ray: the nodes serving, and what node losses cost
            body["cluster"] = {"nodes": engine.cluster.nodes, "lost_nodes": len(engine.cluster.lost_nodes),
                               "retried_batches": engine.cluster.retried_batches}
        return JSONResponse(body)

    async def ping(request: Request):   # SandboxFusion's liveness probe: the JSON string "pong"
        return JSONResponse("pong")

    async def datasets_not_served(request: Request):
        return JSONResponse({"error": f"{request.url.path}: SandboxFusion's registered datasets are not served by "
                                      f"this verifier; send the problem's tests with the completion instead "
                                      f"(POST /submit with config.provided_data, or POST /v1/judge)"},
                            status_code=501)

    return [Route("/health", health), Route("/ready", ready), Route("/metrics", prometheus),
            Route("/v1/stats", stats), Route("/v1/ping", ping)] + [
        Route(path, datasets_not_served, methods=["GET", "POST"]) for path in DATASET_ENDPOINTS]


DATASET_ENDPOINTS = ("/list_datasets", "/list_ids", "/get_prompts", "/get_prompt_by_id", "/get_metrics",
                     "/get_metrics_function")


def not_found_handler(endpoints: str):
    """The 404/405 handler: names the method and path asked for and lists ``endpoints``."""
    async def not_found(request: Request, exc):
        return JSONResponse({"error": f"no endpoint {request.method} {request.url.path}; endpoints: {endpoints}"},
                            status_code=exc.status_code if hasattr(exc, "status_code") else 404)
    return not_found
