"""Interpreter sessions over HTTP (one sandboxed, stateful Python interpreter per trajectory:
:mod:`factory.sandbox.session`; docs/interpreter.md), in the protocols trainers already speak:

- ``POST /run_jupyter`` - SandboxFusion's RunJupyterRequest -> RunJupyterResponse: ``cells`` run in order in one
  fresh kernel, freed at the end; per cell ``stdout``, ``stderr``, ``display`` and ``error``
  (``[{"ename", "evalue", "traceback"}]``). Past ``cell_timeout`` (0: none) or ``total_timeout``: ``status``
  Failed, ``driver.status`` TimeLimitExceeded, the cells run so far; a kernel that died (memory, ``os._exit``)
  ends the run with ``driver.status`` Error. ``files`` are written first, ``fetch_files`` read back (base64).
- ``POST /get_observation`` - verl-tool's tool-server protocol: ``trajectory_ids`` + ``actions`` (+ ``finish``,
  ``extra_fields``) -> ``observations``, ``dones``, ``valids``. An action's code (as verl-tool's python tool:
  every ``<python>`` block, else every fenced python block) runs in the trajectory's session; ``finish`` frees
  it (not run; observation "", done, valid); an action without code: observation "", not done, not valid.
- ``POST /v1/sessions/{id}/run`` ``{"code": ...}`` -> the CellResult as JSON (created on first use);
  ``DELETE /v1/sessions/{id}`` frees it; ``GET /v1/sessions`` the pool's counters.

All sessions come from one :class:`~factory.sandbox.session.SessionPool` (``--max-sessions``): when it is full a
request needing a new session gets 429 + Retry-After (``/run_jupyter``: SandboxError, which its client retries).
"""
from __future__ import annotations

import asyncio
import base64
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from factory.sandbox.session import CellResult, SessionError, SessionLimit, SessionPool

from .protocol import BadRequest, _get, _positive, parse_fetch_files
from .routing import Service, error_response
from .session_tools import cell_text

_PY_TAG = re.compile(r"<python>(.*?)</python>", re.DOTALL)
_PY_FENCE = re.compile(r"```\n?python(.*?)```", re.DOTALL)
_PY_SHORT_FENCE = re.compile(r"```\n?py(.*?)```", re.DOTALL)
MAX_OBSERVATION_CHARS = 100_000


def code_of_action(action: str) -> str | None:
    """The code verl-tool's python tool would run for ``action`` (None: no code in it)."""
    for pattern in (_PY_TAG, _PY_FENCE, _PY_SHORT_FENCE):
        if blocks := pattern.findall(action):
            return "\n".join(b.strip() for b in blocks)
    return None


def wrap_observation(action: str, text: str, tag: str = "result") -> str:
    """verl-tool's placement of an observation after the action: a fenced block after fenced code (closing the
    fence the action left open), ``<tool_response>`` after a tool call, else a ``<result>`` tag."""
    if "```output" in action or "```python" in action:
        return f"\n```{tag}\n{text}\n```\n" if action.count("```") % 2 == 0 else f"\n{text}\n```\n"
    if "</tool_call>" in action:
        return f"\n<tool_response>\n```{tag}\n{text}\n```\n</tool_response>\n"
    if action.strip(" \n").endswith(f"<{tag}>"):
        return f"\n{text}\n</{tag}>\n"
    return f"\n<{tag}>\n{text}\n</{tag}>\n"


def jupyter_cell(r: CellResult) -> dict:
    error = []
    if r.error:
        last = r.error.strip().splitlines()[-1] if r.error.strip() else ""
        ename, _, evalue = last.partition(": ")
        error = [{"ename": ename if ename.isidentifier() or "." in ename else "Error", "evalue": evalue or last,
                  "traceback": r.error.rstrip("\n").splitlines()}]
    display = list(r.display) or ([{"text/plain": r.result}] if r.result else [])   # figures, display(), the value
    return {"stdout": r.stdout, "stderr": r.stderr, "display": display, "error": error}


def routes(svc: Service, pool: SessionPool, max_cell_s: float = 60.0) -> list[Route]:
    executor = ThreadPoolExecutor(max_workers=max(4, min(64, pool.max_sessions)), thread_name_prefix="session")

    async def call(fn, *args):
        return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)

    # ---------------------------------------------------------------- SandboxFusion /run_jupyter
    def run_notebook(body: dict, rid: str) -> dict:
        cell_timeout = body["cell_timeout"] or None
        t0 = time.monotonic()
        tid = f"jupyter-{rid}-{uuid.uuid4().hex[:8]}"
        try:
            session = pool.session(tid)
        except SessionError as exc:
            return {"status": "SandboxError", "message": str(exc), "driver": None, "cells": [],
                    "executor_pod_name": None, "files": {}}
        out, status, files = [], "Finished", {}
        try:
            for path, b64 in body["files"].items():
                setup = session.run(f"import base64, os\n_p = {path!r}\nos.makedirs(os.path.dirname(_p) or '.', "
                                    f"exist_ok=True)\nopen(_p, 'wb').write(base64.b64decode({b64!r}))\ndel _p")
                if setup.status != "ok":
                    raise BadRequest(f"files[{path!r}] could not be written: {setup.error}"[:500], "files")
            for code in body["cells"]:
                left = body["total_timeout"] - (time.monotonic() - t0)
                limit = min(x for x in (cell_timeout, left, max_cell_s) if x is not None)
                if limit <= 0:
                    status = "TimeLimitExceeded"
                    break
                r = session.run(code, cpu_s=limit, wall_s=limit)
                out.append(jupyter_cell(r))
                # killed / closed: the kernel died, later cells would run in a fresh one
                status = {"timeout": "TimeLimitExceeded", "killed": "Error", "closed": "Error"}.get(r.status, status)
                if status != "Finished":
                    break
            if status == "Finished":
                for path in body["fetch_files"]:
                    got = session.run(f"import base64\nbase64.b64encode(open({path!r}, 'rb').read()).decode()")
                    if got.status == "ok" and got.result and got.result[0] in "'\"":
                        files[path] = got.result[1:-1]
        finally:
            pool.close(tid)
        wall = time.monotonic() - t0
        driver = {"status": status, "execution_time": round(wall, 6), "return_code": 0 if status == "Finished" else 1,
                  "stdout": "", "stderr": "", "cpu_time": None}
        return {"status": "Success" if status == "Finished" else "Failed", "message": "" if status == "Finished"
                else f"driver {status}", "driver": driver, "cells": out, "executor_pod_name": None, "files": files}

    @svc.endpoint("run_jupyter")
    async def run_jupyter(request: Request, rid: str):
        body = await svc.read_json(request, needs=" with 'cells'")
        cells = _get(body, "cells", list, required=True)
        if bad := [i for i, c in enumerate(cells) if not isinstance(c, str)]:
            raise BadRequest(f"field 'cells[{bad[0]}]' must be a string", f"cells[{bad[0]}]")
        kernel = _get(body, "kernel", str, default="python3")
        if kernel != "python3":
            raise BadRequest(f"field 'kernel' = {kernel!r} is not supported; supported: python3", "kernel")
        files = _get(body, "files", dict, default={})
        for path, b64 in files.items():
            if not isinstance(b64, str):
                raise BadRequest(f"field 'files[{path!r}]' must be a base64 string", "files")
            try:
                base64.b64decode(b64, validate=True)
            except ValueError:
                raise BadRequest(f"field 'files[{path!r}]' is not valid base64", "files") from None
        fetch = parse_fetch_files(body)   # as /run_code: the kernel's directory, /tmp or /mnt; no '..'
        parsed = {"cells": cells, "files": files, "fetch_files": fetch,
                  "cell_timeout": _positive(body.get("cell_timeout", 0), "cell_timeout", 3600.0, zero_ok=True) or 0,
                  "total_timeout": _positive(body.get("total_timeout", 45), "total_timeout", 3600.0) or 45.0}
        return JSONResponse(await call(run_notebook, parsed, rid), headers={"X-Request-ID": rid})

    # ---------------------------------------------------------------- verl-tool /get_observation
    def observe(tid: str, action: str, finish: bool) -> tuple[str, bool, bool]:
        if finish:
            pool.close(tid)
            return "", True, True
        code = code_of_action(action)
        if code is None:
            return "", False, False
        return wrap_observation(action, cell_text(pool.run(tid, code))[:MAX_OBSERVATION_CHARS]), False, True

    @svc.endpoint("get_observation")
    async def get_observation(request: Request, rid: str):
        t0 = time.monotonic()
        body = await svc.read_json(request, needs=" with 'trajectory_ids' and 'actions'")
        tids = _get(body, "trajectory_ids", list, required=True)
        actions = _get(body, "actions", list, required=True)
        if not tids:
            raise BadRequest("field 'trajectory_ids' must not be empty", "trajectory_ids")
        if len(actions) != len(tids):
            raise BadRequest(f"{len(actions)} actions for {len(tids)} trajectory_ids: the lengths must match",
                             "actions")
        extra = _get(body, "extra_fields", list, default=None)
        if extra is not None and len(extra) != len(tids):
            raise BadRequest("field 'extra_fields' must have one entry per trajectory id", "extra_fields")
        finish = _get(body, "finish", list, default=None)
        if finish is None:   # verl-tool also reads finish from extra_fields
            finish = [bool(e.get("finish")) if isinstance(e, dict) else False for e in extra or [None] * len(tids)]
        if len(finish) != len(tids) or not all(isinstance(f, bool) for f in finish):
            raise BadRequest("field 'finish' must be one boolean per trajectory id", "finish")
        for i, (t, a) in enumerate(zip(tids, actions)):
            if not isinstance(t, (str, int)) or isinstance(t, bool):
                raise BadRequest(f"field 'trajectory_ids[{i}]' must be a string", f"trajectory_ids[{i}]")
            if not isinstance(a, str):
                raise BadRequest(f"field 'actions[{i}]' must be a string", f"actions[{i}]")
        tids = [str(t) for t in tids]
        # sessions this batch must start: refused as a whole (429) when the pool cannot hold them
        need = {t for t, a, f in zip(tids, actions, finish) if not f and code_of_action(a) is not None
                and pool.session(t, create=False) is None}
        free = pool.max_sessions - pool.live()
        if len(need) > free:
            return error_response(429, f"this batch needs {len(need)} new interpreter sessions and {free} of "
                                       f"{pool.max_sessions} are free: finish trajectories, or retry", rid,
                                  retry_after=2)
        # one trajectory's actions run in order; different trajectories in parallel
        by_tid: dict[str, list[int]] = {}
        for i, t in enumerate(tids):
            by_tid.setdefault(t, []).append(i)
        out: list = [None] * len(tids)

        def run_trajectory(idxs: list[int]) -> None:
            for i in idxs:
                out[i] = observe(tids[i], actions[i], finish[i])

        try:
            await asyncio.gather(*(call(run_trajectory, idxs) for idxs in by_tid.values()))
        except SessionLimit as exc:
            return error_response(429, str(exc), rid, retry_after=2)   # the pool is full
        ms = (time.monotonic() - t0) * 1000
        return JSONResponse({"observations": [o[0] for o in out], "dones": [o[1] for o in out],
                             "valids": [o[2] for o in out], "processing_time_ms": ms, "queue_time_ms": 0.0},
                            headers={"X-Request-ID": rid})

    # ---------------------------------------------------------------- native sessions
    @svc.endpoint("session_run")
    async def session_run(request: Request, rid: str):
        sid = request.path_params["sid"]
        body = await svc.read_json(request, needs=" with 'code'")
        code = _get(body, "code", str, required=True)
        try:
            r = await call(pool.run, sid, code)
        except SessionLimit as exc:
            return error_response(429, str(exc), rid, retry_after=2)   # the pool is full
        return JSONResponse({"session_id": sid, **r.as_dict()}, headers={"X-Request-ID": rid})

    @svc.endpoint("session_close")
    async def session_close(request: Request, rid: str):
        closed = await call(pool.close, request.path_params["sid"])
        return JSONResponse({"session_id": request.path_params["sid"], "closed": closed})

    async def session_stats(request: Request):
        return JSONResponse(pool.stats())

    return [Route("/run_jupyter", run_jupyter, methods=["POST"]),
            Route("/get_observation", get_observation, methods=["POST"]),
            Route("/v1/sessions", session_stats, methods=["GET"]),
            Route("/v1/sessions/{sid}/run", session_run, methods=["POST"]),
            Route("/v1/sessions/{sid}", session_close, methods=["DELETE"])]
