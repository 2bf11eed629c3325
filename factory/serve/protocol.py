"""Request parsing and response shapes of `factory serve`: SandboxFusion's `/run_code` and `/submit` (field by
field as the `sandbox-fusion` client package and verl's `sandbox_fusion` utility send and read them) and the
native batch endpoint `/v1/judge`.

Every malformed request raises :class:`BadRequest` naming the field; nothing here runs code.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass

from factory.sandbox import Job, Limits, TestSpec, clean_text
from factory.sandbox.rows import merge_verdicts, tests_reward, verdict_row

from .engine import Ticket

PYTHON = ("python", "python3")
SANDBOX_FUSION_LANGUAGES = ("python2", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash",
                            "typescript", "sql", "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia",
                            "pytest", "junit", "kotlin_script", "jest", "verilog", "python_gpu", "lean", "swift",
                            "racket", "gtest", "react")


class BadRequest(ValueError):
    def __init__(self, message: str, field: str | None = None, status: int = 400):
        super().__init__(message)
        self.field, self.status = field, status


@dataclass(frozen=True)
class Caps:
    """The most a request may ask for."""
    max_cpu_s: float = 60.0
    max_memory_mb: int = 8192
    max_output_bytes: int = 64 << 20
    max_items: int = 4096


def _get(body: dict, key: str, types, *, required: bool = False, default=None, where: str = ""):
    name = f"{where}{key}"
    if key not in body or body[key] is None:
        if required:
            raise BadRequest(f"missing required field '{name}'", name, 422)
        return default
    value = body[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise BadRequest(f"field '{name}' must be {_type_name(types)}, got a boolean", name, 422)
    if not isinstance(value, types):
        raise BadRequest(f"field '{name}' must be {_type_name(types)}, got {type(value).__name__}", name, 422)
    return value


def _type_name(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    names = {str: "a string", int: "an integer", float: "a number", dict: "an object", list: "an array",
             bool: "a boolean"}
    return " or ".join(dict.fromkeys(names.get(t, t.__name__) for t in types))


def _positive(value, name: str, cap: float):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"field '{name}' must be a number, got {type(value).__name__}", name, 422)
    if value <= 0:
        raise BadRequest(f"field '{name}' must be > 0, got {value}", name, 422)
    if value > cap:
        raise BadRequest(f"field '{name}' = {value} is over this server's cap of {cap}", name, 422)
    return value


def request_limits(engine, caps: Caps, *, cpu_s=None, memory_mb=None, output_bytes=None, where="") -> Limits:
    cpu_s = _positive(cpu_s, f"{where}cpu_s" if where else "run_timeout", caps.max_cpu_s)
    memory_mb = _positive(memory_mb, f"{where}memory_mb" if where else "memory_limit_MB", caps.max_memory_mb)
    output_bytes = _positive(output_bytes, f"{where}max_output_bytes", caps.max_output_bytes)
    return engine.limits_for(cpu_s=cpu_s, memory_mb=int(memory_mb) if memory_mb else None,
                             max_output_bytes=int(output_bytes) if output_bytes else None)


def check_language(body: dict, where: str = "") -> None:
    """Only python runs here; another SandboxFusion language (or an unknown one) is a 400 naming it."""
    lang = _get(body, "language", str, default="python", where=where)
    if lang not in PYTHON:
        known = "a SandboxFusion language" if lang in SANDBOX_FUSION_LANGUAGES else "not a known language"
        raise BadRequest(f"{where}language '{lang}' is {known} this verifier does not run: it runs python only",
                         f"{where}language", 400)


# ---- SandboxFusion /run_code -------------------------------------------------------------------------------

def parse_run_code(body: dict, engine, caps: Caps) -> tuple[Job, Limits]:
    """RunCodeRequest: code, language, stdin, run_timeout, compile_timeout, files, fetch_files, and verl's
    memory_limit_MB. The program runs as ``__main__`` with stdin; the verdict carries stdout, stderr, exit code."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object", None, 422)
    code = _get(body, "code", str, required=True)
    check_language(body)
    stdin = _get(body, "stdin", str, default="")
    for key in ("files", "fetch_files"):
        if _get(body, key, (dict, list), default=None):
            raise BadRequest(f"field '{key}' is not supported by this verifier (programs get no files)", key, 400)
    run_timeout = _get(body, "run_timeout", (int, float), default=None)
    _get(body, "compile_timeout", (int, float), default=None)
    memory = body.get("memory_limit_MB", body.get("memory_limit_mb"))   # type-checked by request_limits
    limits = request_limits(engine, caps, cpu_s=run_timeout, memory_mb=memory)
    job = Job("run_code", clean_text(code), [TestSpec("run", "stdio", input=clean_text(stdin), expected=None)])
    return job, limits


def _command_result(status: str, v, stdout: str | None) -> dict:
    return {"status": status, "execution_time": round((v.wall_ms or 0) / 1000, 4) if v else None,
            "cpu_time": round((v.cpu_ms or 0) / 1000, 4) if v else None,
            "return_code": (v.exit_code if v.exit_code is not None else 1) if status == "Finished" else None,
            "stdout": stdout, "stderr": (v.stderr if v else None)}


def run_code_response(ticket: Ticket, request_id: str) -> dict:
    """RunCodeResponse. Status Success: exit 0; Failed: the program failed (exit code, signal, time, memory,
    output); SandboxError: the service failed after its own retries (the client must not score it)."""
    extra = {"request_id": request_id, "infra_retries": ticket.infra_retries}
    base = {"compile_result": None, "executor_pod_name": None, "files": {}}
    v = ticket.verdicts[0] if ticket.verdicts else None
    if ticket.error or v is None or v.status == "infra_error":
        why = ticket.error or (f"{v.error_type}: {v.error_message}" if v else "no verdict")
        return {**base, "status": "SandboxError", "message": f"verifier failed, not your code: {why}",
                "run_result": None, "factory": {**extra, "status": "infra_error"}}
    extra.update(status=v.status, peak_memory_kb=v.peak_memory_kb, error_type=v.error_type,
                 error_message=v.error_message)
    if v.status == "no_expected":     # ran to exit code 0
        return {**base, "status": "Success", "message": "",
                "run_result": _command_result("Finished", v, v.actual or ""), "factory": extra}
    if v.status == "timeout":
        return {**base, "status": "Failed", "message": "time limit exceeded",
                "run_result": _command_result("TimeLimitExceeded", v, v.stdout), "factory": extra}
    message = {"memory_limit": "memory limit exceeded", "output_limit": "output limit exceeded"}.get(
        v.status, v.error_message or "non-zero exit")
    result = _command_result("Finished", v, v.stdout)
    if not result["return_code"]:
        result["return_code"] = 1
    return {**base, "status": "Failed", "message": message, "run_result": result, "factory": extra}


# ---- tests from a ground truth (SandboxFusion provided_data, factory exports) --------------------------------

def split_test_code(code: str) -> tuple[list[TestSpec], str]:
    """AutoEval-style test code appended to the program: a `check(candidate)` function, pytest `test_*`
    functions, or top-level asserts (one test each; other statements become the preamble)."""
    try:
        module = ast.parse(code)
    except SyntaxError as exc:
        raise BadRequest(f"test code does not parse: {exc.msg} (line {exc.lineno})", "config.provided_data.test")
    names = [n.name for n in module.body if isinstance(n, ast.FunctionDef)]
    if "check" in names:
        return [TestSpec("check", "check", code=code)], ""
    if any(n.startswith("test") for n in names):
        return [TestSpec("pytest", "pytest", code=code)], ""
    asserts = [n for n in module.body if isinstance(n, ast.Assert)]
    if not asserts:
        raise BadRequest("test code has no assert, check() or test_* function", "config.provided_data.test")
    preamble = "\n".join(ast.get_source_segment(code, n) for n in module.body if not isinstance(n, ast.Assert))
    return [TestSpec(str(i), "assert", code=ast.get_source_segment(code, n)) for i, n in enumerate(asserts)], preamble


def tests_from_provided(data, where: str = "config.provided_data") -> tuple[list[TestSpec], str | None, str]:
    """(tests, entry_point, preamble) from SandboxFusion's `provided_data` or a factory ground truth:
    ``{"test": [{"input": {"stdin"}, "output": {"stdout"}}]}`` (CommonOJ), ``{"test": {"code"}}`` /
    ``{"test": "<code>"}`` (AutoEval), ``{"inputs", "outputs"[, "fn_name"]}`` or ``{"tests": [...]}``.
    A ``"checker"`` (Python source defining ``check(input, expected, actual)``) judges its stdio/call tests."""
    from factory.reward import apply_checker

    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            raise BadRequest(f"'{where}' is a string that is not JSON", where) from None
    tests, entry, preamble = _tests_from_provided(data, where)
    checker = data.get("checker") if isinstance(data, dict) else None
    if checker is not None:
        if not isinstance(checker, str) or "def check" not in checker:
            raise BadRequest(f"'{where}.checker' must be Python source defining check(input, expected, actual)",
                             f"{where}.checker", 422)
        apply_checker(tests, checker)
    return tests, entry, preamble


def _tests_from_provided(data, where: str) -> tuple[list[TestSpec], str | None, str]:
    from factory.reward import tests_from_ground_truth

    if not isinstance(data, dict):
        raise BadRequest(f"'{where}' must be an object", where, 422)
    entry = data.get("entry_point") or (data.get("labels") or {}).get("entry_point")
    if "test" in data:
        test = data["test"]
        if isinstance(test, dict) and "code" in test:
            test = test["code"]
        if isinstance(test, str):
            tests, preamble = split_test_code(test)
            return tests, entry, preamble
        if isinstance(test, list):
            tests = []
            for i, case in enumerate(test):
                try:
                    stdin, stdout = case["input"]["stdin"], case["output"]["stdout"]
                except (TypeError, KeyError):
                    raise BadRequest(f"'{where}.test[{i}]' must be {{'input': {{'stdin'}}, 'output': {{'stdout'}}}}",
                                     f"{where}.test[{i}]", 422) from None
                tests.append(TestSpec(str(i), "stdio", input=stdin, expected=stdout, comparison="token"))
            return tests, entry, ""
        raise BadRequest(f"'{where}.test' must be a list of stdin/stdout cases or test code", f"{where}.test", 422)
    if "tests" in data or ("inputs" in data and "outputs" in data):
        try:
            tests, gt_entry, preamble = tests_from_ground_truth(data)
        except (KeyError, TypeError) as exc:
            raise BadRequest(f"'{where}' is not a valid ground truth: missing {exc}", where, 422) from None
        if "inputs" in data and len(data["inputs"]) != len(data["outputs"]):
            raise BadRequest(f"'{where}': {len(data['inputs'])} inputs but {len(data['outputs'])} outputs", where, 422)
        return tests, gt_entry or entry, preamble
    raise BadRequest(f"'{where}' has none of 'test', 'tests', 'inputs'/'outputs' (keys: {sorted(data)})", where, 422)


def program_from_completion(completion: str, entry: str | None, tests: list[TestSpec]) -> tuple[str | None, str, str]:
    """(code or None, extraction status, SandboxFusion extracted_type) through the factory's one extraction."""
    from factory.generation.sample import extract_for_tests

    code, status = extract_for_tests(completion, entry, [t.kind for t in tests])
    kind = "fenced" if "```" in (completion or "") else ("heuristic" if code else "empty")
    return (clean_text(code) if status == "ok" else None), status, kind


# ---- results ------------------------------------------------------------------------------------------------

def verdict_rows(ticket: Ticket, program_id: str) -> list[dict]:
    """The silver.executions rows of a finished ticket (pytest/unittest cases merged per test row)."""
    rows = []
    for (_, test_id), (v, in_process) in merge_verdicts(ticket.verdicts).items():
        row = verdict_row(program_id, test_id, v, in_process, ticket.job.limits_for(ticket.limits).hash(), None)
        row.pop("executed_at", None)
        rows.append(row)
    return rows


def score(rows: list[dict], test_ids: list[str], exclude_in_process: bool = True, binary: bool = False) -> float:
    """The reward `factory.reward` computes, from a ticket's verdict rows."""
    return tests_reward({r["test_id"]: (r["status"], r["judged_in_process"]) for r in rows}, test_ids,
                        exclude_in_process, binary)
