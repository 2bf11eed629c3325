"""Request parsing and response shapes of `factory serve`: SandboxFusion's `/run_code` and `/submit` (field by
field as the `sandbox-fusion` client package and verl's `sandbox_fusion` utility send and read them) and the
native batch endpoint `/v1/judge`.

Every malformed request raises :class:`BadRequest` (HTTP 400) naming the field: a missing required field, a
wrong type, a number that is not finite, not positive or over the server's cap, an unsupported language (the
answer lists the supported ones). Nothing here runs code.
"""
from __future__ import annotations

import ast
import base64
import json
import math
from dataclasses import dataclass

from factory.judging.ground_truth import GroundTruth, apply_checker, cpu_limit, reward_spec, tests_of
from factory.sandbox import Job, Limits, TestSpec, clean_text, languages, multipl_e
from factory.sandbox.fetch import MAX_FETCH_FILES, MISSING, check_path
from factory.sandbox.types import COMPARISONS, KINDS
from factory.sandbox.rows import merge_verdicts, tests_reward, verdict_row

from .engine import Ticket

PYTHON = ("python", "python3")
OTHER_LANGUAGES = ("cpp", "java", "nodejs", "javascript", "rust")   # stdio programs, compiled in the sandbox
SANDBOX_FUSION_LANGUAGES = ("python2", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash",
                            "typescript", "sql", "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia",
                            "pytest", "junit", "kotlin_script", "jest", "verilog", "python_gpu", "lean", "swift",
                            "racket", "gtest", "react")
# the `language` values this verifier accepts (SandboxFusion's names)
SUPPORTED = ", ".join(PYTHON + OTHER_LANGUAGES)


# what SandboxFusion clients wait for a /run_code answer: verl's sandbox_fusion utility times a request out after
# compile_timeout + run_timeout + 10 s; SandboxFusion's defaults for the two timeouts are 10 s each
SANDBOX_FUSION_DEFAULT_TIMEOUT_S = 10.0
CLIENT_MARGIN_S = 10.0


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
    # what SandboxFusion's run_timeout limits: "wall" (its meaning: wall-clock seconds, the CPU budget stays
    # beside it as the factory's guard) or "cpu" (CPU seconds only: verdicts that do not depend on the load)
    run_timeout_clock: str = "wall"


_TYPE_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
               dict: "an object", type(None): "null"}


def _json_type(value) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _get(body: dict, key: str, types, *, required: bool = False, default=None, where: str = ""):
    name = f"{where}{key}"
    if key not in body or body[key] is None:
        if required:
            raise BadRequest(f"missing required field '{name}'", name)
        return default
    value, types = body[key], types if isinstance(types, tuple) else (types,)
    if not isinstance(value, types) or isinstance(value, bool) and bool not in types:   # JSON true is not a number
        raise BadRequest(f"field '{name}' must be {_type_name(types)}, got {_json_type(value)}", name)
    if isinstance(value, float) and not math.isfinite(value):
        raise BadRequest(f"field '{name}' must be a finite number, got {value}", name)
    return value


def _type_name(types: tuple) -> str:
    return " or ".join(dict.fromkeys(_TYPE_NAMES.get(t, t.__name__) for t in types))


def _positive(value, name: str, cap: float, *, zero_ok: bool = False):
    """A finite number in (0, cap] ([0, cap] with zero_ok); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"field '{name}' must be a number, got {_json_type(value)}", name)
    if not math.isfinite(value):
        raise BadRequest(f"field '{name}' must be a finite number, got {value}", name)
    if value < 0 or (value == 0 and not zero_ok):
        raise BadRequest(f"field '{name}' must be {'>= 0' if zero_ok else '> 0'}, got {value}", name)
    if value > cap:
        raise BadRequest(f"field '{name}' = {value} is over this server's cap of {cap}", name)
    return value


def request_limits(engine, caps: Caps, *, cpu_s=None, memory_mb=None, output_bytes=None, where="",
                   names: tuple[str, str] = ("cpu_s", "memory_mb")) -> Limits:
    cpu_s = _positive(cpu_s, f"{where}{names[0]}", caps.max_cpu_s)
    memory_mb = _positive(memory_mb, f"{where}{names[1]}", caps.max_memory_mb)
    if memory_mb is not None and memory_mb < 1:
        raise BadRequest(f"field '{where}{names[1]}' must be at least 1 (MB), got {memory_mb}", f"{where}{names[1]}")
    output_bytes = _positive(output_bytes, f"{where}max_output_bytes", caps.max_output_bytes)
    if output_bytes is not None and output_bytes < 1:
        raise BadRequest(f"field '{where}max_output_bytes' must be at least 1, got {output_bytes}",
                         f"{where}max_output_bytes")
    return engine.limits_for(cpu_s=cpu_s, memory_mb=int(memory_mb) if memory_mb else None,
                             max_output_bytes=int(output_bytes) if output_bytes else None)


def check_language(body: dict, where: str = "", required: bool = False) -> str:
    """The canonical language of a request (``python`` when absent and not required). A missing language (where
    the protocol requires one), another SandboxFusion language or an unknown one is a 400 naming the field and
    listing the supported languages; a supported language whose toolchain is not installed is a 400 naming the
    package to install."""
    name = f"{where}language"
    lang = _get(body, "language", str, default=None, where=where)
    if lang is None:
        if required:
            raise BadRequest(f"missing required field '{name}': this verifier runs {SUPPORTED}", name)
        return languages.PYTHON
    if lang not in PYTHON and lang not in OTHER_LANGUAGES:
        known = "a SandboxFusion language" if lang in SANDBOX_FUSION_LANGUAGES else "not a known language"
        raise BadRequest(f"{name} '{lang}' is {known} this verifier does not run: supported languages are "
                         f"{SUPPORTED}", name)
    canon = languages.normalize(lang)
    if canon != languages.PYTHON:
        try:
            languages.require(canon)
        except languages.ToolchainMissing as exc:
            raise BadRequest(f"{name} '{lang}': {exc}", name) from None
    return canon


# ---- SandboxFusion /run_code -------------------------------------------------------------------------------

NO_LIMIT = -1                 # SandboxFusion's memory_limit_MB default: no limit (here: the server's cap)
MAX_FILES = 256               # files of one request
MAX_FILES_BYTES = 16 << 20    # their decoded bytes together
MAX_FILE_PATH = 255
MAX_FILE_DEPTH = 16
RESERVED_DIRS = (".prog",)    # where a compiled program's artifact is placed


def memory_field(body: dict, key: str, caps: Caps, where: str = ""):
    """A memory_limit_MB value: -1 (SandboxFusion's default, "no limit") is the server's cap; None stays None."""
    value = body.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == NO_LIMIT:
        return caps.max_memory_mb
    return value


def parse_files(body: dict, where: str = "") -> dict[str, bytes]:
    """SandboxFusion's ``files``: {relative path: base64 content} placed beside the program (its working
    directory) before it runs; a null content is skipped, as there. Paths are relative, without ``..``, at most
    255 characters and 16 levels; at most 256 files and 16 MiB decoded together; each is a 400 naming the file
    otherwise."""
    files = _get(body, "files", dict, default={}, where=where)
    name = f"{where}files"
    out: dict[str, bytes] = {}
    total = 0
    if len(files) > MAX_FILES:
        raise BadRequest(f"field '{name}' has {len(files)} files; this verifier places at most {MAX_FILES}", name)
    for path, b64 in files.items():
        field = f"{name}[{path!r}]"[:200]
        if b64 is None:
            continue
        if not isinstance(b64, str):
            raise BadRequest(f"field {field} must be a base64 string or null, got {_json_type(b64)}", name)
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if (not parts or path.startswith("/") or ".." in parts or "\0" in path or len(path) > MAX_FILE_PATH
                or len(parts) > MAX_FILE_DEPTH or parts[0] in RESERVED_DIRS):
            raise BadRequest(f"field {field}: a file path must be relative to the program's working directory, "
                             f"without '..', at most {MAX_FILE_PATH} characters and {MAX_FILE_DEPTH} levels "
                             f"(not under {', '.join(RESERVED_DIRS)})", name)
        try:
            data = base64.b64decode(b64, validate=True)
        except ValueError:   # binascii.Error included
            raise BadRequest(f"field {field} is not valid base64", name) from None
        total += len(data)
        if total > MAX_FILES_BYTES:
            raise BadRequest(f"field '{name}': the files are over this verifier's cap of {MAX_FILES_BYTES >> 20} "
                             f"MiB together", name)
        key = "/".join(parts)
        if key in out or any(k.startswith(key + "/") or key.startswith(k + "/") for k in out):
            raise BadRequest(f"field {field}: the path is given twice or is both a file and a directory", name)
        out[key] = data
    return out


def parse_fetch_files(body: dict, where: str = "") -> tuple[str, ...]:
    """SandboxFusion's ``fetch_files``: paths the program's run writes, returned base64 in ``files``. Relative to
    its working directory or under /tmp or /mnt (the run's own; :func:`factory.sandbox.fetch.check_path`), at most
    256; anything else (an absolute host path, '..') is a 400 naming the entry."""
    paths = _get(body, "fetch_files", list, default=[], where=where)
    name = f"{where}fetch_files"
    if len(paths) > MAX_FETCH_FILES:
        raise BadRequest(f"field '{name}' has {len(paths)} paths; this verifier returns at most {MAX_FETCH_FILES}",
                         name)
    for k, path in enumerate(paths):
        try:
            check_path(path)
        except ValueError as exc:
            raise BadRequest(f"field '{name}[{k}]' ({path!r}"[:200] + f"): {exc}", name) from None
    return tuple(dict.fromkeys(paths))


def parse_run_code(body: dict, engine, caps: Caps) -> tuple[Job, Limits, float]:
    """RunCodeRequest: code, language (required, as in SandboxFusion), stdin, run_timeout, compile_timeout,
    files, fetch_files, and memory_limit_MB (-1, SandboxFusion's default: no limit, i.e. the server's cap).
    The program runs with stdin, in a working directory holding ``files``; the verdict carries stdout, stderr,
    exit code. ``run_timeout`` is wall-clock seconds (SandboxFusion's meaning; the CPU budget stays beside it,
    the response's ``factory.limit`` says which fired). The third value is how long the client waits for the
    answer (compile_timeout + run_timeout + 10 s, verl's request timeout; SandboxFusion defaults 10 s each)."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object", None)
    code = _get(body, "code", str, required=True)
    lang = check_language(body, required=True)
    stdin = _get(body, "stdin", str, default="")
    files = parse_files(body)
    fetch = parse_fetch_files(body)
    run_timeout = _positive(body.get("run_timeout"), "run_timeout", caps.max_cpu_s)
    compile_timeout = _positive(body.get("compile_timeout"), "compile_timeout", 3600.0, zero_ok=True)
    key = "memory_limit_MB" if body.get("memory_limit_MB") is not None else "memory_limit_mb"
    limits = request_limits(engine, caps, cpu_s=run_timeout, memory_mb=memory_field(body, key, caps),
                            names=("run_timeout", key))
    run_s = run_timeout if run_timeout is not None else SANDBOX_FUSION_DEFAULT_TIMEOUT_S
    job = Job("run_code", clean_text(code), [TestSpec("run", "stdio", input=clean_text(stdin), expected=None)],
              language=lang, compile_cpu_s=compile_timeout or None, files=files or None, own_network=True,
              wall_s=run_s if caps.run_timeout_clock == "wall" else None, fetch_files=fetch or None)
    compile_s = compile_timeout if compile_timeout is not None else SANDBOX_FUSION_DEFAULT_TIMEOUT_S
    return job, limits, compile_s + run_s + CLIENT_MARGIN_S


def _command_result(status: str, v, stdout: str | None) -> dict:
    return {"status": status, "execution_time": round((v.wall_ms or 0) / 1000, 4) if v else None,
            "cpu_time": round((v.cpu_ms or 0) / 1000, 4) if v else None,
            "return_code": (v.exit_code if v.exit_code is not None else 1) if status == "Finished" else None,
            "stdout": stdout, "stderr": (v.stderr if v else None)}


def limit_fired(v, ticket: Ticket) -> tuple[str, str]:
    """Which limit ended a timed-out test: ``wall`` (the request's wall-clock run_timeout, or the wall
    backstop), ``cpu`` (the CPU budget: the factory's own guard) or ``idle`` (no CPU used for the CPU budget +
    1 s: a program blocked for good), and a phrase saying so."""
    lim = ticket.job.limits_for(ticket.limits)
    wall = ticket.job.wall_s if ticket.job.wall_s is not None else lim.wall_s
    cpu_s, wall_s = (v.cpu_ms or 0) / 1000, (v.wall_ms or 0) / 1000
    if cpu_s >= lim.cpu_s:
        return "cpu", f"CPU time {cpu_s:.2f} s over the CPU budget of {lim.cpu_s:g} s"
    if wall_s >= wall:
        return "wall", f"wall clock {wall_s:.2f} s over the limit of {wall:g} s"
    return "idle", f"no progress (CPU) for {lim.cpu_s:g} s + 1 s"


def run_code_response(ticket: Ticket, request_id: str) -> dict:
    """RunCodeResponse. Status Success: exit 0; Failed: the program failed (exit code, signal, time, memory,
    output); SandboxError: the service failed after its own retries (the client must not score it). ``files``:
    each fetch_files path read back, base64; one that was not is absent, as in SandboxFusion (a missing file),
    and ``factory.fetch_errors`` says why (the message too, where it was refused or over the cap)."""
    out = _run_code_response(ticket, request_id)
    v = ticket.verdicts[0] if ticket.verdicts and out["status"] != "SandboxError" else None
    if v is not None and (v.files is not None or v.fetch_errors):
        out["files"] = {p: base64.b64encode(b).decode() for p, b in (v.files or {}).items()}
        out["factory"]["fetch_errors"] = v.fetch_errors or {}
        note = "; ".join(f"fetch_files {p!r}: {why}" for p, why in (v.fetch_errors or {}).items() if why != MISSING)
        if note:
            out["message"] = f"{out['message']}; {note}" if out["message"] else note
    return out


def _run_code_response(ticket: Ticket, request_id: str) -> dict:
    extra = {"request_id": request_id, "infra_retries": ticket.infra_retries}
    base = {"compile_result": None, "executor_pod_name": None, "files": {}}
    v = ticket.verdicts[0] if ticket.verdicts else None
    if ticket.error or v is None or v.status == "infra_error":
        why = ticket.error or (f"{v.error_type}: {v.error_message}" if v else "no verdict")
        return {**base, "status": "SandboxError", "message": f"verifier failed, not your code: {why}",
                "run_result": None, "factory": {**extra, "status": "infra_error"}}
    extra.update(status=v.status, peak_memory_kb=v.peak_memory_kb, error_type=v.error_type,
                 error_message=v.error_message, compile_ms=v.compile_ms)
    failed = v.status == "compile_error"   # SandboxFusion: Failed, the compiler's result, no run
    if v.compile_ms is not None or failed:   # compiled: SandboxFusion's compile_result (CPU seconds as its time)
        timed_out = failed and v.error_type == "CompileTimeout"
        base["compile_result"] = {"status": "TimeLimitExceeded" if timed_out else "Finished",
                                  "execution_time": round((v.compile_ms or 0) / 1000, 4),
                                  "return_code": None if timed_out else int(failed), "stdout": "",
                                  "stderr": (v.error_message or "") if failed else ""}
    if failed:
        return {**base, "status": "Failed", "message": "compile error", "run_result": None, "factory": extra}
    if v.status == "no_expected":     # ran to exit code 0
        return {**base, "status": "Success", "message": "",
                "run_result": _command_result("Finished", v, v.actual or ""), "factory": extra}
    if v.status == "timeout":
        fired, what = limit_fired(v, ticket)
        extra["limit"] = fired
        return {**base, "status": "Failed", "message": f"time limit exceeded ({what})",
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


def provided_truth(data, where: str = "config.provided_data", language: str | None = None) -> GroundTruth:
    """The problem a request provides, read once (a :class:`factory.judging.ground_truth.GroundTruth`), a dict or
    its JSON string: SandboxFusion's `provided_data` (``{"test": [{"input": {"stdin"}, "output": {"stdout"}}]}``,
    ``{"test": {"code"}}`` / ``{"test": "<code>"}``) or a factory ground truth. A ``"checker"`` (Python source
    defining ``check(input, expected, actual)``) judges its stdio/call tests. Its language: a MultiPL-E harness's
    (built into the candidate as ``factory.reward`` does), else ``language`` (the request's) or the data's own.
    A malformed field (a harness beside other tests, a language or toolchain it lacks, a reward spec of another
    kind) is a 400 naming it."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            raise BadRequest(f"'{where}' is a string that is not JSON", where) from None
    tests, entry, preamble = _tests_from_provided(data, where)
    checker = data.get("checker")
    if checker is not None:
        if not isinstance(checker, str) or "def check" not in checker:
            raise BadRequest(f"'{where}.checker' must be Python source defining check(input, expected, actual)",
                             f"{where}.checker")
        apply_checker(tests, checker)
    if entry is not None and not isinstance(entry, str):
        raise BadRequest(f"field '{where}.entry_point' must be a string, got {_json_type(entry)}",
                         f"{where}.entry_point")
    if not isinstance(preamble, str):
        raise BadRequest(f"field '{where}.test_preamble' must be a string, got {_json_type(preamble)}",
                         f"{where}.test_preamble")
    _check_specs(tests, where)
    row = _harness_row(data, where)
    lang = row["language"] if row is not None else language or check_language(data, where=f"{where}.")
    try:   # the release's reward spec travels in the ground truth: binary (all pass) or soft (fraction)
        spec = reward_spec(data)
    except ValueError as exc:
        raise BadRequest(f"'{where}.reward': {exc}"[:300], f"{where}.reward") from None
    return GroundTruth(data, tests, entry, preamble, lang, row, spec, cpu_limit(data.get("cpu_s")))


def _check_specs(tests: list[TestSpec], where: str) -> None:
    """Every test the sandbox will get is well formed (the sandbox must never see a malformed job)."""
    for i, t in enumerate(tests):
        name = f"{where}.tests[{i}]"
        if not isinstance(t.test_id, str) or not t.test_id:
            raise BadRequest(f"field '{name}.test_id' must be a non-empty string", f"{name}.test_id")
        if t.kind not in KINDS:
            raise BadRequest(f"field '{name}.kind' must be one of {', '.join(KINDS)}, got {t.kind!r}"[:300],
                             f"{name}.kind")
        for key in ("code", "input", "expected", "checker"):
            _get(vars(t), key, str, where=f"{name}.")
        if t.comparison not in COMPARISONS:
            raise BadRequest(f"field '{name}.comparison' must be one of {', '.join(COMPARISONS)}, got "
                             f"{t.comparison!r}"[:300], f"{name}.comparison")
        for key in ("atol", "rtol"):
            _positive(getattr(t, key), f"{name}.{key}", 1e300, zero_ok=True)
    if len({t.test_id for t in tests}) != len(tests):
        raise BadRequest(f"'{where}' has two tests with the same test_id", where)


def _tests_from_provided(data, where: str) -> tuple[list[TestSpec], str | None, str]:
    if not isinstance(data, dict):
        raise BadRequest(f"'{where}' must be an object", where)
    if multipl_e.is_row(data):   # a MultiPL-E row: its harness is compiled with the program (kind harness)
        try:
            multipl_e.language_of(data)
        except ValueError as exc:
            raise BadRequest(f"'{where}.language': {exc}"[:300], f"{where}.language") from None
        return [TestSpec("tests", "harness", code=data["tests"])], None, ""
    labels = _get(data, "labels", dict, default={}, where=f"{where}.")
    entry = data.get("entry_point") or labels.get("entry_point")
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
                                     f"{where}.test[{i}]") from None
                if not isinstance(stdin, str) or not isinstance(stdout, str):
                    raise BadRequest(f"'{where}.test[{i}]': input.stdin and output.stdout must be strings",
                                     f"{where}.test[{i}]")
                tests.append(TestSpec(str(i), "stdio", input=stdin, expected=stdout, comparison="token"))
            return tests, entry, ""
        raise BadRequest(f"'{where}.test' must be a list of stdin/stdout cases or test code", f"{where}.test")
    if "tests" in data or ("inputs" in data and "outputs" in data):
        _check_ground_truth(data, where)
        try:
            tests, gt_entry, preamble = tests_of(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadRequest(f"'{where}' is not a valid ground truth: {type(exc).__name__}: {exc}"[:500],
                             where) from None
        return tests, gt_entry or entry, preamble
    raise BadRequest(f"'{where}' has none of 'test', 'tests', 'inputs'/'outputs' (keys: {sorted(data)})"[:500], where)


def _harness_row(data: dict, where: str) -> dict | None:
    """The MultiPL-E row a provided problem stands for (:func:`factory.sandbox.multipl_e.harness_row`), its
    ``language`` canonical; None for any other problem."""
    try:
        row = multipl_e.harness_row(data)
        if row is None:
            return None
        lang = multipl_e.language_of(row)
    except ValueError as exc:
        raise BadRequest(f"'{where}': {exc}"[:300], f"{where}.language") from None
    if lang != languages.PYTHON:
        try:
            languages.require(lang)
        except languages.ToolchainMissing as exc:
            raise BadRequest(f"{where}.language '{lang}': {exc}", f"{where}.language") from None
    return {**row, "language": lang}


def _check_ground_truth(data: dict, where: str) -> None:
    """The shape of a factory / verl ground truth, field by field, before it is turned into tests."""
    w = f"{where}."
    for key in ("entry_point", "test_preamble", "fn_name", "comparison", "checker"):
        _get(data, key, str, where=w)
    for key in ("atol", "rtol"):
        _positive(data.get(key), f"{w}{key}", 1e300, zero_ok=True)
    _positive(data.get("cpu_s"), f"{w}cpu_s", 1e6)
    spec = data.get("reward")
    if spec is not None and (not isinstance(spec, dict) or spec.get("kind") not in ("binary", "soft")):
        raise BadRequest(f"field '{w}reward' must be an object with kind 'binary' or 'soft', got {spec!r}"[:300],
                         f"{w}reward")
    if data.get("comparison") is not None and data["comparison"] not in COMPARISONS:
        raise BadRequest(f"field '{w}comparison' must be one of {', '.join(COMPARISONS)}, got "
                         f"{data['comparison']!r}"[:300], f"{w}comparison")
    if "tests" in data:
        tests = _get(data, "tests", list, required=True, where=w)
        for i, t in enumerate(tests):
            if not isinstance(t, dict):
                raise BadRequest(f"field '{w}tests[{i}]' must be an object, got {_json_type(t)}", f"{w}tests[{i}]")
            _get(t, "kind", str, required=True, where=f"{w}tests[{i}].")
            if not isinstance(t.get("test_id"), (str, int, type(None))) or isinstance(t.get("test_id"), bool):
                raise BadRequest(f"field '{w}tests[{i}].test_id' must be a string", f"{w}tests[{i}].test_id")
            if isinstance(t.get("test_id"), int):
                t["test_id"] = str(t["test_id"])
        return
    inputs = _get(data, "inputs", list, required=True, where=w)
    outputs = _get(data, "outputs", list, required=True, where=w)
    if len(inputs) != len(outputs):
        raise BadRequest(f"'{where}': {len(inputs)} inputs but {len(outputs)} outputs", f"{w}outputs")
    if not data.get("fn_name"):   # stdin/stdout cases: strings
        for key, values in (("inputs", inputs), ("outputs", outputs)):
            for i, v in enumerate(values):
                if not isinstance(v, str):
                    raise BadRequest(f"field '{w}{key}[{i}]' must be a string (stdin/stdout), got {_json_type(v)}",
                                     f"{w}{key}[{i}]")


def program_from_completion(completion: str, entry: str | None, tests: list[TestSpec], language: str = "python",
                            harness: dict | None = None) -> tuple[str | None, str, str]:
    """(code or None, extraction status, SandboxFusion extracted_type) through the factory's one extraction. A
    MultiPL-E ``harness`` row builds the candidate as MultiPL-E does (prompt + continuation, or the answer's
    program); a program in another language is the completion's last fenced block (or the whole completion)."""
    from factory.generation.sample import extract_for_tests

    if harness is not None:
        code = clean_text(multipl_e.candidate(harness, completion)) or None
        return code, ("ok" if code else "empty"), ("fenced" if "```" in completion else "continuation")
    if language != languages.PYTHON:
        code = languages.extract_source(completion, language)
        status = "ok" if code else "empty"
    else:
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
