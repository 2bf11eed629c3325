"""`factory serve`: the sandbox as an HTTP verifier for online RL (SandboxFusion-compatible + native batch).

:mod:`.engine` (warm pools, admission, retries, drain; no HTTP), :mod:`.protocol` (request/response shapes),
:mod:`.metrics` (Prometheus text), :mod:`.app` (Starlette routes, uvicorn), :mod:`.client` (the batch client the
reward functions use)."""
