"""Interpreter sessions over HTTP, driven by the trainers' own client code against a real `factory serve`:
SandboxFusion's `run_jupyter` client, the verl-tool tool-server protocol (`/get_observation`), verl's tool
loading from a YAML config and its agent loop's tool call (create -> execute -> release), and TRL's tool shapes."""
from __future__ import annotations

import asyncio
import json

import pytest
import requests

from tests.serve.conftest import Server, post

MAX_SESSIONS = 4


@pytest.fixture(scope="module")
def sserver():
    s = Server("--workers", "1", "--max-sessions", str(MAX_SESSIONS), "--session-cpu-s", "2",
               "--session-memory-mb", "256", "--session-idle-s", "60")
    yield s
    s.stop()


def test_sandbox_fusion_run_jupyter_client(sserver):
    import sandbox_fusion as sf

    cells = ["a = 123", "a", "print(a)", "import sys; sys.stderr.write('stderr message')",
             "raise RuntimeError('error message')", "a + 1"]
    resp = sf.run_jupyter(sf.RunJupyterRequest(cells=cells), endpoint=sserver.url)
    assert resp.status == sf.RunStatus.Success and resp.driver.status == sf.CommandRunStatus.Finished
    assert len(resp.cells) == len(cells)
    c = resp.cells
    assert c[0].stdout == "" and c[0].display == [] and c[0].error == []
    assert c[1].display == [{"text/plain": "123"}]
    assert c[2].stdout == "123\n"
    assert c[3].stderr == "stderr message" and c[3].display == [{"text/plain": "14"}]
    assert c[4].error[0]["ename"] == "RuntimeError" and c[4].error[0]["evalue"] == "error message"
    assert any("raise RuntimeError" in line for line in c[4].error[0]["traceback"])
    assert c[5].display == [{"text/plain": "124"}]                       # one kernel: state after an error
    # a new request is a new kernel
    fresh = sf.run_jupyter(sf.RunJupyterRequest(cells=["'a' in globals()"]), endpoint=sserver.url)
    assert fresh.cells[0].display == [{"text/plain": "False"}]
    # files in, files out (base64, as SandboxFusion)
    import base64
    got = sf.run_jupyter(sf.RunJupyterRequest(
        cells=["data = open('in.txt').read()", "open('out.txt', 'w').write(data.upper())"],
        files={"in.txt": base64.b64encode(b"hello").decode()}, fetch_files=["out.txt"]), endpoint=sserver.url)
    assert base64.b64decode(got.files["out.txt"]) == b"HELLO"
    # a looping cell: the run ends TimeLimitExceeded with the cells so far
    slow = sf.run_jupyter(sf.RunJupyterRequest(cells=["x = 1", "while True: pass", "x"], cell_timeout=1),
                          endpoint=sserver.url)
    assert slow.status == sf.RunStatus.Failed and slow.driver.status == sf.CommandRunStatus.TimeLimitExceeded
    assert len(slow.cells) == 2 and slow.cells[1].error[0]["ename"] == "TimeoutError"
    dead = sf.run_jupyter(sf.RunJupyterRequest(cells=["import os", "os._exit(1)", "'never'"]), endpoint=sserver.url)
    assert dead.status == sf.RunStatus.Failed and dead.driver.status == sf.CommandRunStatus.Error
    assert len(dead.cells) == 2 and dead.cells[1].error[0]["ename"] == "InterpreterDied"
    status, _, body = post(sserver.url + "/run_jupyter", {"cells": "print(1)"})
    assert status == 400 and body["field"] == "cells"
    status, _, body = post(sserver.url + "/run_jupyter", {"cells": ["1"], "kernel": "julia"})
    assert status == 400 and body["field"] == "kernel"
    for bad in ("/etc/passwd", "../x", 7):   # fetch_files as /run_code: the run's own directories only
        status, _, body = post(sserver.url + "/run_jupyter", {"cells": ["1"], "fetch_files": ["out.txt", bad]})
        assert status == 400 and body["field"] == "fetch_files" and "fetch_files[1]" in body["error"], body
    assert requests.get(sserver.url + "/v1/sessions").json()["live"] == 0   # every kernel freed


def test_verl_tool_protocol_over_http(sserver):
    url = sserver.url + "/get_observation"
    r = requests.post(url, json={"trajectory_ids": ["t1", "t2", "t3"],
                                 "actions": ["Let me compute.\n```python\nx = 6 * 7\nprint(x)\n```",
                                             "<python>import math\ny = math.factorial(5)</python>",
                                             "I think the answer is 4."],
                                 "finish": [False, False, False]}, timeout=60).json()
    assert r["observations"][0] == "\n```result\n42\n```\n"
    assert r["observations"][1] == "\n<result>\n\n</result>\n"
    assert r["valids"] == [True, True, False] and r["dones"] == [False, False, False]
    assert r["observations"][2] == ""
    r = requests.post(url, json={"trajectory_ids": ["t1", "t2", "t1"],
                                 "actions": ["<python>x + 1</python>", "<python>print(y)\n1/0</python>",
                                             "done"],
                                 "finish": [False, False, True]}, timeout=60).json()
    assert r["observations"][0] == "\n<result>\n43\n</result>\n"              # t1's state, then t1 finishes
    assert "120" in r["observations"][1] and "ZeroDivisionError" in r["observations"][1]
    assert r["dones"] == [False, False, True] and r["valids"] == [True, True, True]
    r = requests.post(url, json={"trajectory_ids": ["t1"], "actions": ["<python>x</python>"]}, timeout=60).json()
    assert "NameError" in r["observations"][0]                               # finish freed t1's session
    # finish may also come in extra_fields (verl-tool merges them)
    r = requests.post(url, json={"trajectory_ids": ["t1", "t2"], "actions": ["", ""],
                                 "extra_fields": [{"finish": True}, {"finish": True}]}, timeout=60).json()
    assert r["dones"] == [True, True]
    assert requests.get(sserver.url + "/v1/sessions").json()["live"] == 0
    # more new trajectories than free sessions: the batch is refused whole, with Retry-After
    status, headers, body = post(url, {"trajectory_ids": [f"n{i}" for i in range(MAX_SESSIONS + 1)],
                                       "actions": ["<python>1</python>"] * (MAX_SESSIONS + 1)})
    assert status == 429 and {k.lower(): v for k, v in headers.items()}["retry-after"] and "sessions" in body["error"]
    status, _, body = post(url, {"trajectory_ids": ["a"], "actions": ["x", "y"]})
    assert status == 400 and body["field"] == "actions"


def test_native_session_api_limits_and_isolation(sserver):
    from factory.serve.session_tools import SessionClient

    c = SessionClient(sserver.url)
    assert c.run("s1", "v = [1, 2]").status == "ok"
    assert c.run("s2", "'v' in globals()").result == "False"
    r = c.run("s1", "while True:\n    v.append(0)\n    v.pop()")
    assert r.status == "timeout" and r.cpu_s <= 2.5
    assert c.run("s1", "21 * 2").result == "42"
    assert c.close("s1") and c.close("s2") and not c.close("s1")


def _verl_tool(tmp_path, url):
    from verl.tools.tool_registry import initialize_tools_from_config

    cfg = tmp_path / "tools.yaml"
    cfg.write_text("tools:\n  - class_name: factory.serve.verl_tool.FactoryInterpreterTool\n    config:\n"
                   "      type: native\n" + (f"      url: {url}\n" if url else "") +
                   "      cpu_s_per_call: 2\n      idle_timeout_s: 60\n")
    tools = initialize_tools_from_config(str(cfg))
    assert len(tools) == 1 and tools[0].name == "code_interpreter"
    return tools[0]


@pytest.mark.parametrize("where", ["http", "in_process"])
def test_verl_tool_from_yaml_through_the_agent_loop(sserver, tmp_path, where):
    from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
    from verl.experimental.agent_loop.tool_parser import FunctionCall

    tool = _verl_tool(tmp_path, sserver.url if where == "http" else None)
    loop = type("Loop", (), {"tools": {tool.name: tool}, "max_tool_response_length": 4096,
                             "tool_response_truncate_side": "middle"})()

    def agent(rid):
        return AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                         metrics={}, request_id=rid, tools_kwargs={})

    async def call(data, code):   # exactly what ToolAgentLoop does per tool call: create -> execute -> release
        fc = FunctionCall(name="code_interpreter", arguments=json.dumps({"code": code}))
        return await ToolAgentLoop._call_tool(loop, fc, {}, data)

    async def scenario():
        a, b = agent(f"{where}-A"), agent(f"{where}-B")
        first, _, m = await call(a, "import math\nn = math.comb(10, 3)\nprint('n is', n)")
        assert first.text == "n is 120" and m["status"] == "ok"
        again, _, _ = await call(a, "n * 2")                 # same trajectory: state kept across calls
        assert again.text == "240"
        other, _, _ = await call(b, "n")                     # another trajectory: its own interpreter
        assert "NameError" in other.text
        loop_call, _, m = await call(b, "while True: pass")
        assert m["status"] == "timeout" and "TimeoutError" in loop_call.text
        await tool.finish(f"{where}-A")
        await tool.finish(f"{where}-B")
        gone, _, _ = await call(a, "n")
        assert "NameError" in gone.text
        await tool.finish(f"{where}-A")
        # without agent data (a direct create/execute/release) the session belongs to the instance
        iid, _ = await tool.create()
        resp, _, _ = await tool.execute(iid, {"code": "6 * 7"})
        assert resp.text == "42"
        await tool.release(iid)

    asyncio.run(scenario())
    if where == "in_process":
        assert tool.pool.live() == 0
        tool.pool.close_all()
    else:
        assert requests.get(sserver.url + "/v1/sessions").json()["live"] == 0


def test_trl_tools_schema_and_calls(sserver):
    from transformers.utils import get_json_schema

    from factory.serve.session_tools import InterpreterEnv, python_tool

    tool = python_tool(cpu_s_per_call=2)
    schema = get_json_schema(tool)
    assert schema["function"]["name"] == "python"
    assert schema["function"]["parameters"]["properties"]["code"]["type"] == "string"
    assert schema["function"]["parameters"]["required"] == ["code"]
    assert tool(**{"code": "print(sum(range(10)))"}) == "45"          # TRL calls tool(**arguments)
    assert "NameError" in tool(code="print(sum(range(10)))\nundefined_name")

    env = InterpreterEnv(url=sserver.url, cpu_s_per_call=2)
    method_schema = get_json_schema(env.python)
    assert method_schema["function"]["name"] == "python" and "code" in method_schema["function"]["parameters"][
        "properties"]
    env.reset()
    assert env.python(code="total = 10") == ""
    assert env.python(code="total * 3") == "30"                      # one rollout: state kept
    env.reset()                                                       # next rollout: a fresh interpreter
    assert "NameError" in env.python(code="total")
    env.close()
