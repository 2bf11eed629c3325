"""A verl multi-turn tool (``verl.tools.base_tool.BaseTool``) backed by the factory's interpreter sessions.

Tool config YAML for ``actor_rollout_ref.rollout.multi_turn.tool_config_path``::

    tools:
      - class_name: factory.serve.verl_tool.FactoryInterpreterTool
        config:
          type: native
          url: http://127.0.0.1:8080     # a running `factory serve`; leave out to run sessions in process
          cpu_s_per_call: 10
          memory_mb: 512
          idle_timeout_s: 300
        # tool_schema: optional; default: function "code_interpreter" with one string parameter "code"

verl's ToolAgentLoop calls ``create`` -> ``execute`` -> ``release`` around *every* tool call. State is kept per
trajectory: ``execute`` runs the code in the session of ``agent_data.request_id`` (the agent loop passes its
AgentData), so variables persist across a trajectory's calls; a finished trajectory's session is freed by the
session idle timeout (``idle_timeout_s``), or at once by :meth:`FactoryInterpreterTool.finish`. Called without
agent data (``create`` -> ``execute`` -> ``release`` by hand) a session belongs to its instance and ``release``
frees it.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Optional
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from .session_tools import SessionClient, cell_text

DEFAULT_SCHEMA = {
    "type": "function",
    "function": {
        "name": "code_interpreter",
        "description": "Run Python code in a stateful sandboxed interpreter (variables and imports persist between "
                       "calls of one conversation); returns printed output, the last expression's value and errors.",
        "parameters": {"type": "object",
                       "properties": {"code": {"type": "string", "description": "The Python code to run."}},
                       "required": ["code"]},
    },
}
_SESSION_ARGS = ("cpu_s_per_call", "wall_s_per_call", "memory_mb", "idle_timeout_s", "output_bytes")


class FactoryInterpreterTool(BaseTool):
    def __init__(self, config: dict, tool_schema: Optional[OpenAIFunctionToolSchema] = None):
        self.url = config.get("url")
        limits = {k: config[k] for k in _SESSION_ARGS if config.get(k) is not None}
        if self.url:   # the sessions: a running `factory serve`'s, else this process's own pool
            self.sessions = SessionClient(self.url)
        else:
            from factory.sandbox.session import SessionPool
            self.sessions = self.pool = SessionPool(max_sessions=int(config.get("max_sessions", 64)), **limits)
        self.instances: dict[str, Optional[str]] = {}   # instance id -> session key (None until the first call)
        self.lock = threading.Lock()
        super().__init__(config, tool_schema)

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return OpenAIFunctionToolSchema.model_validate(DEFAULT_SCHEMA)

    async def create(self, instance_id: Optional[str] = None, **kwargs) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        with self.lock:
            self.instances[instance_id] = None
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        code = parameters.get("code") if isinstance(parameters, dict) else None
        if not isinstance(code, str) or not code.strip():
            return ToolResponse(text="Error: the 'code' argument (a string of Python) is required."), 0.0, \
                {"status": "invalid"}
        agent = kwargs.get("agent_data")
        key = f"traj-{agent.request_id}" if getattr(agent, "request_id", None) else f"inst-{instance_id}"
        with self.lock:
            self.instances[instance_id] = key
        r = await asyncio.to_thread(self.sessions.run, key, code)
        return ToolResponse(text=cell_text(r) or "(no output)"), 0.0, \
            {"status": r.status, "cpu_s": r.cpu_s, "wall_s": r.wall_s}

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs) -> None:
        with self.lock:
            key = self.instances.pop(instance_id, None)
        if key is not None and key.startswith("inst-"):   # a trajectory's session outlives its calls
            await asyncio.to_thread(self.sessions.close, key)

    async def finish(self, request_id: str) -> None:
        """Free a finished trajectory's session now (otherwise the idle timeout does)."""
        await asyncio.to_thread(self.sessions.close, f"traj-{request_id}")
