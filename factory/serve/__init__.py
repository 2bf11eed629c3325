"""`factory serve`: the sandbox as an HTTP verifier for online RL (SandboxFusion-compatible + native batch).

:mod:`.engine` (warm pools, admission, retries, drain; no HTTP), :mod:`.protocol` (request/response shapes),
:mod:`.metrics` (Prometheus text), :mod:`.app` (assembles the Starlette app, runs uvicorn) over the route modules
:mod:`.routing` (shared body/error/job plumbing), :mod:`.fusion_routes` (/run_code, /submit), :mod:`.batch_routes`
(/v1/judge), :mod:`.ops_routes` (health, readiness, metrics)."""
