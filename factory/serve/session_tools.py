"""Interpreter sessions as trainer tools: a small HTTP client of ``factory serve``'s session API, and TRL's tool
shapes (GRPOTrainer ``tools=`` callables and ``environment_factory`` environments).

Backends: ``url=None`` runs sessions in this process (:class:`~factory.sandbox.session.InterpreterSession`, the
same sandbox); ``url="http://host:port"`` uses a running ``factory serve`` (``/v1/sessions/{id}/run``).

>>> from trl import GRPOTrainer                                                    # doctest: +SKIP
>>> GRPOTrainer(..., tools=[python_tool(cpu_s_per_call=5)])                        # stateless: one session per call
>>> GRPOTrainer(..., environment_factory=lambda: InterpreterEnv(url=URL))          # one session per rollout
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

from factory.sandbox.session import CellResult, InterpreterSession


def cell_text(r: CellResult) -> str:
    """What a model sees of one cell: stdout, the last expression's repr, stderr, then the error."""
    parts = [r.stdout, (r.result + "\n") if r.result is not None else "", r.stderr, r.error or ""]
    return "".join(p if not p or p.endswith("\n") else p + "\n" for p in parts).strip(" \n")


class SessionClient:
    """``factory serve``'s native session API: ``run(session_id, code)`` -> CellResult, ``close(session_id)``."""

    def __init__(self, url: str, timeout_s: float = 300.0, retries: int = 5):
        self.url, self.timeout_s, self.retries = url.rstrip("/"), timeout_s, retries

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        import time
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:500]
                if exc.code in (429, 503) and attempt < self.retries:   # sessions full / draining: wait, retry
                    time.sleep(float(exc.headers.get("Retry-After") or 1) * (attempt + 1))
                    continue
                raise RuntimeError(f"factory serve {method} {path}: HTTP {exc.code}: {detail}") from None
        raise AssertionError("unreachable")

    def run(self, session_id: str, code: str) -> CellResult:
        d = self._call("POST", f"/v1/sessions/{session_id}/run", {"code": code})
        return CellResult(d["stdout"], d["stderr"], d["result"], d["error"], d["status"], float(d["cpu_s"]),
                          float(d["wall_s"]))

    def close(self, session_id: str) -> bool:
        return bool(self._call("DELETE", f"/v1/sessions/{session_id}")["closed"])


class _Backend:
    """One session, in process or on a server."""

    def __init__(self, url: str | None, limits: dict):
        self.url, self.limits = url, limits
        self.client = SessionClient(url) if url else None
        self.local: InterpreterSession | None = None
        self.sid = f"trl-{uuid.uuid4().hex}"

    def run(self, code: str) -> CellResult:
        if self.client is not None:
            return self.client.run(self.sid, code)
        if self.local is None or self.local.closed:
            self.local = InterpreterSession(**self.limits)
        return self.local.run(code)

    def close(self) -> None:
        if self.client is not None:
            self.client.close(self.sid)
            self.sid = f"trl-{uuid.uuid4().hex}"
        elif self.local is not None:
            self.local.close()
            self.local = None


def python_tool(url: str | None = None, **limits):
    """A TRL ``tools=`` callable: each call runs its code in a fresh sandboxed interpreter (TRL tools are
    stateless; for state across a rollout's calls use :class:`InterpreterEnv`). ``limits``: InterpreterSession
    arguments (cpu_s_per_call, memory_mb, ...)."""

    def python(code: str) -> str:
        """Run Python code in a sandboxed interpreter and return what it printed and the value of its last line.

        Args:
            code: The Python source to run.

        Returns:
            The printed output, the repr of the last expression, and any error traceback.
        """
        backend = _Backend(url, limits)
        try:
            return cell_text(backend.run(code))
        finally:
            backend.close()

    return python


class InterpreterEnv:
    """A TRL ``environment_factory`` environment: one sandboxed interpreter per rollout, state kept across its
    tool calls; ``reset`` (called by TRL before each rollout) frees the previous rollout's session."""

    def __init__(self, url: str | None = None, **limits):
        self._backend = _Backend(url, limits)

    def reset(self, **kwargs) -> None:
        self._backend.close()

    def python(self, code: str) -> str:
        """Run Python code in this conversation's interpreter; variables and imports persist between calls.

        Args:
            code: The Python source to run.

        Returns:
            The printed output, the repr of the last expression, and any error traceback.
        """
        return cell_text(self._backend.run(code))

    def close(self) -> None:
        self._backend.close()
