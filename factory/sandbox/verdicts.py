"""Trusted parent side: split jobs into child payloads and turn raw child reports into Verdicts."""
from __future__ import annotations

import functools
import json
import os
import pickle
import re
import signal

from . import languages
from .checker import PENDING
from .compare import call_equal, stdio_equal, values_equal
from .serialize import Opaque, clean_text, deserialize_value
from .transform import rewrite_asserts
from .types import COMPARISONS, KINDS, Job, Limits, TestSpec, Verdict

MODE_OF = {"assert": "func", "check": "func", "call": "func", "stdio": "stdio",
           "pytest": "pytest", "unittest": "unittest", "harness": "stdio"}
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")
_pickle = functools.partial(pickle.dumps, protocol=pickle.HIGHEST_PROTOCOL)


class SubJob:
    """Tests of one job that share a mode (one sandboxed child sequence)."""

    def __init__(self, job: Job, mode: str):
        self.job, self.mode = job, mode
        self.specs: list[TestSpec] = []
        self.expects: list[list] = []
        self.payload_tests: list[dict] = []

    def add(self, spec: TestSpec) -> None:
        code, expects = spec.code, []
        if spec.kind in ("assert", "check") and code:
            code, expects = rewrite_asserts(code)
        i = len(self.specs)
        self.specs.append(spec)
        self.expects.append(expects)
        self.payload_tests.append({"i": i, "kind": spec.kind, "code": code, "input": spec.input})

    def payload(self, limits: Limits) -> tuple[dict, bytes]:
        """(header, body) for the zygote.  The body holds separate blobs: the candidate's (the program only),
        the judge's (tests, entry point, preamble) and each stdin; the header holds offsets, no text."""
        job, stdio = self.job, self.mode == "stdio"
        # MultiPL-E / HumanEval-X: the test harness (a job's only test) is compiled and run with the program
        source = job.code + "".join("\n" + t.code for t in self.specs if t.kind == "harness")
        program = (job.preamble + "\n" if job.preamble else "") + source
        lang = languages.normalize(job.language)
        python = lang == languages.PYTHON
        # another language: the source itself (compiled in the sandbox), no Python preamble
        cand = _pickle({"program": program}) if python else source.encode("utf-8", "surrogateescape")
        if self.mode == "unittest":
            judge = _pickle({"program": program, "tests": self.payload_tests})
        elif stdio:
            judge = b""
        else:
            judge = _pickle({"mode": self.mode, "tests": self.payload_tests, "entry_point": job.entry_point,
                             "preamble": job.preamble, "cap": limits.max_output_bytes})
        parts, end = [cand, judge], [len(cand) + len(judge)]

        def add(data: bytes) -> tuple[int, int]:   # (offset, length) of one more blob
            parts.append(data)
            end[0] += len(data)
            return end[0] - len(data), len(data)

        inputs = [add((t["input"] or "").encode("utf-8", "surrogateescape")) for t in self.payload_tests if stdio]
        # files: placed beside the program before each test
        files = [(path, *add(bytes(data))) for path, data in job.files.items()] if stdio and job.files else []
        seconds = {k: None if getattr(job, k) is None else float(getattr(job, k))
                   for k in ("wall_s", "cpu_s", "compile_cpu_s")}
        optional = {"files": files or None, "fetch": list(job.fetch_files) if stdio and job.fetch_files else None,
                    "wall_s": seconds["wall_s"], "own_net": job.own_network or None, "cpu_s": seconds["cpu_s"],
                    "run_all": None if job.stop_at_timeout else True,
                    "lang": None if python else languages.program_spec(lang, source),
                    "compile_cpu_s": None if python else seconds["compile_cpu_s"]}
        hdr = {"mode": self.mode, "tests": [{"i": t["i"], "kind": t["kind"]} for t in self.payload_tests],
               "cand": (0, len(cand)), "judge": (len(cand), len(judge)), "inputs": inputs,
               **{k: v for k, v in optional.items() if v is not None}}
        return hdr, b"".join(parts)


def _invalid(job: Job, spec: TestSpec | None, why: str, meta: str, limits: str, etype: str = "InvalidTest") -> Verdict:
    return Verdict(job.program_id, spec.test_id if spec else None, "infra_error", error_type=etype,
                   error_message=why, sandbox_meta=meta, limits=limits)


def split_job(job: Job, meta: str, limits: str) -> tuple[list[SubJob], list[Verdict]]:
    """Group tests by mode; tests that cannot run become immediate 'invalid' verdicts."""
    if not job.tests:
        return [], [_invalid(job, None, "job has zero tests (never a pass)", meta, limits, "InvalidJob")]
    try:
        lang = languages.normalize(job.language)
        if lang != languages.PYTHON:
            languages.require(lang)
    except (languages.UnknownLanguage, languages.ToolchainMissing) as exc:   # error_type: the class's name
        return [], [_invalid(job, spec, str(exc), meta, limits, type(exc).__name__) for spec in job.tests]
    subs: dict[str, SubJob] = {}
    bad = []
    for spec in job.tests:
        why = None
        if lang != languages.PYTHON and spec.kind not in ("stdio", "harness"):
            why = f"kind {spec.kind!r} needs a Python program: {lang} programs run stdio and harness tests"
        elif spec.kind not in KINDS:
            why = f"unknown test kind {spec.kind!r}"
        elif spec.comparison not in COMPARISONS:
            why = f"unknown comparison {spec.comparison!r}"
        elif spec.kind in ("call", "check") and not job.entry_point:
            why = f"kind {spec.kind!r} needs Job.entry_point"
        elif spec.kind in ("assert", "check", "pytest", "unittest", "harness") and not (spec.code or "").strip():
            why = "empty test code"
        elif spec.kind == "harness" and len(job.tests) != 1:
            why = "a harness test is compiled together with the program: it must be the job's only test"
        elif spec.kind == "call" and spec.input is None:
            why = "call test without input"
        elif spec.checker is not None and (spec.kind not in ("call", "stdio") or not isinstance(spec.checker, str)
                                           or not spec.checker.strip()):
            why = "a checker needs a call or stdio test and non-empty checker source"
        if why:
            bad.append(_invalid(job, spec, why, meta, limits))
            continue
        mode = MODE_OF[spec.kind]
        subs.setdefault(mode, SubJob(job, mode)).add(spec)
    return list(subs.values()), bad


def _text(b: bytes, cap: int) -> str:
    return b[:cap].decode("utf-8", "replace")


def _status_for_exc(etype: str | None, in_test: bool = True) -> str:
    """An exception's status; an AssertionError fails a test only when the test's own code raised it."""
    if etype == "MemoryError":
        return "memory_limit"
    return "fail" if etype == "AssertionError" and in_test else "runtime_error"


def _truth(val) -> bool | None:
    try:
        return val.truth if isinstance(val, Opaque) else bool(val)
    except Exception:  # noqa: BLE001
        return None


def _check_expects(expects, reported, completed: bool):
    """Return (ok, actual, message) for rewritten asserts; parent-side comparison."""
    seen = set()
    for item in reported:
        try:
            k, ser = int(item[0]), str(item[1])
            exp = expects[k]
            val = deserialize_value(ser)
        except Exception:  # noqa: BLE001 - any report a program could shape is a failed assertion, never an error
            return False, None, "malformed expectation report"
        seen.add(k)
        if exp.mode == "eq":
            good = values_equal(val, exp.value)
        elif exp.mode == "is":
            good = not isinstance(val, Opaque) and val is exp.value
        else:
            good = _truth(val) is (exp.mode == "truthy")
        if not good:
            want = repr(exp.value)[:300] if exp.mode in ("eq", "is") else exp.mode
            return False, ser, f"assertion #{k} failed: expected {want}, got {ser[:300]}"
    if completed:
        missing = [k for k, e in enumerate(expects) if e.required and k not in seen]
        if missing:
            return False, None, f"assertions {missing[:5]} were never evaluated"
        if expects and not seen:
            return False, None, "no assertion was evaluated"
    return True, None, None


def _loads_guarded(data: bytes | None):
    """JSON from the sandbox: any bytes (deep nesting, bad UTF-8, lone surrogates) give a dict or None."""
    if not data:
        return None
    try:
        obj = json.loads(bytes(data).decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError, MemoryError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def assemble(sub: SubJob, reply) -> list[dict]:
    """Per-test raw dicts (the zygote's numbers + the streamed bytes) from one job's reply."""
    infos, segs = reply
    load = _loads_guarded(segs.get((-1, "load")))
    jerr = bytes(segs.get((-1, "jerr"), b""))
    raws = []
    for t, info in zip(sub.payload_tests, infos):
        i = t["i"]
        raw = dict(info, stdout=bytes(segs.get((i, "out"), b"")), stderr=bytes(segs.get((i, "err"), b"")))
        outcome = raw.get("outcome")
        if outcome == "msg":
            msg = _loads_guarded(segs.get((i, "res")))
            if msg is None:
                raw = {**raw, "outcome": "protocol", "emsg": "unreadable report from the judge"}
            else:
                msg["oom"] = bool(info.get("oom"))
                raw["msg"] = msg
        elif outcome == "stdio":
            raw["outcome"], raw["msg"] = "msg", {"status": info.get("status") or 0, "oom": bool(info.get("oom"))}
        elif outcome == "load_error":
            load = load or {"etype": "ProcessExit", "emsg": "program failed to load"}
            if load.get("infra"):
                raw.update(outcome="infra", emsg=str(load.get("emsg")))
            else:
                raw.update(etype=load.get("etype"), emsg=load.get("emsg"), mem=bool(load.get("mem")))
        elif outcome == "compile_error":
            raw["compile_msg"] = bytes(segs.get((-1, "compile"), b""))
        elif outcome == "infra" and jerr:
            raw["emsg"] = f"{raw.get('emsg') or ''}: {jerr[-1500:].decode('utf-8', 'replace')}"
        if "fetched" in info:   # fetch_files: the bytes of each file read back, why not for the others
            paths = sub.job.fetch_files
            raw["files"] = {paths[k]: bytes(segs.get((i, f"file:{k}"), b"")) for k in info["fetched"]}
            raw["fetch_errors"] = {paths[k]: why for k, why in info["fetch_errors"].items()}
        raws.append(raw)
    return raws


_TEXT_FIELDS = ("stdout", "stderr", "error_type", "error_message", "actual", "test_id", "program_id")


def build_verdicts_safe(sub: SubJob, reply, limits, meta: str, limits_json: str) -> list[Verdict]:
    """Verdicts for one sub-job, never raising: a failure of the trusted side is an ``infra_error`` row for
    that program only; every spec gets at least one verdict; every text field is valid UTF-8."""
    cap, out = limits.capture_bytes, []
    try:
        if isinstance(reply, Exception):
            raise reply
        for i, (spec, raw) in enumerate(zip(sub.specs, assemble(sub, reply))):
            v = Verdict(sub.job.program_id, spec.test_id, "infra_error", sandbox_meta=meta, limits=limits_json,
                        cpu_ms=round(float(raw.get("cpu_ms", 0.0)), 3), peak_memory_kb=raw.get("peak_kb"),
                        wall_ms=round(float(raw.get("wall_ms", 0.0)), 3), stdout=_text(raw.get("stdout", b""), cap),
                        stderr=_text(raw.get("stderr", b""), cap))
            if raw.get("compile_ms") is not None:
                v.compile_ms = round(float(raw["compile_ms"]), 3)
            v.files, v.fetch_errors = raw.get("files"), raw.get("fetch_errors")
            out.extend(_judge(sub, i, spec, raw, v))
    except Exception as exc:  # noqa: BLE001
        out = [_invalid(sub.job, s, str(exc)[:2000], meta, limits_json, "InfraError") for s in sub.specs]
    seen = {(v.test_id or "").split("::", 1)[0] for v in out}
    harness = {s.test_id for s in sub.specs if s.kind == "harness"}
    out += [_invalid(sub.job, s, "no verdict was produced for this test", meta, limits_json, "InfraError")
            for s in sub.specs if s.test_id not in seen]
    for v in out:
        for f in _TEXT_FIELDS:
            setattr(v, f, clean_text(getattr(v, f)))
        if sub.mode == "unittest" or v.test_id in harness:   # every verdict of such a test, not only its passes
            v.judged_in_process = True
    return out


_SIMPLE = {"infra": ("infra_error", "InfraError"), "timeout": ("timeout", "Timeout"),   # outcome: status, type
           "memory": ("memory_limit", "MemoryLimit"), "output": ("output_limit", "OutputLimit"),
           "protocol": ("runtime_error", "ProtocolViolation"), "crash": ("runtime_error", "ProcessExit")}


def _judge(sub: SubJob, i: int, spec: TestSpec, raw: dict, v: Verdict) -> list[Verdict]:
    outcome = raw.get("outcome")
    if outcome == "not_run":   # an earlier test of this program timed out: this one never ran (never a pass)
        v.status, v.error_type = "timeout", "NotRun"
        v.error_message = "not run: an earlier test of this program timed out"
        return [v]
    if outcome == "compile_error":
        return [_compile_error(raw, v)]
    if outcome in _SIMPLE:
        v.status, v.error_type = _SIMPLE[outcome]
        v.error_message = raw.get("emsg") or ("during program load" if raw.get("load_phase") else None)
        if outcome == "infra" and raw.get("etype"):
            v.error_type = raw["etype"]
        return [v]
    if outcome == "load_error":
        v.status = "memory_limit" if raw.get("mem") else _status_for_exc(raw.get("etype"), in_test=False)
        v.error_type, v.error_message = raw.get("etype"), f"program failed to load: {raw.get('emsg')}"
        return [v]
    msg = raw.get("msg") or {}
    kind = spec.kind
    if kind in ("pytest", "unittest"):
        return _judge_files(sub, spec, msg, v)
    if kind in ("stdio", "harness"):
        return [_judge_stdio(spec, raw, msg, v)]
    if kind == "call" and msg.get("ok"):
        v.actual = msg.get("value")
        if spec.expected is None or spec.checker:   # a checker decides later (pool: .checker)
            v.status = "no_expected" if spec.expected is None else PENDING
            return [v]
        try:
            good = call_equal(deserialize_value(v.actual), deserialize_value(spec.expected), spec.atol, spec.rtol)
        except Exception:  # noqa: BLE001 - an undecodable value is a wrong answer (compare.total)
            good = False
        v.status = "pass" if good else "fail"
        if not good:
            v.error_type, v.error_message = "WrongAnswer", f"expected {spec.expected[:300]}"
        return [v]
    if not msg.get("ok"):
        v.error_type, v.error_message = msg.get("etype"), msg.get("emsg")
        if msg.get("where"):
            v.error_message = f"{v.error_message or ''} (at {msg['where']})".strip()
        v.status = "output_limit" if msg.get("output_limit") else _status_for_exc(msg.get("etype"))
        if msg.get("mem"):
            v.status = "memory_limit"
    else:   # assert or check, completed
        v.status = "pass"
    if kind in ("assert", "check"):   # an expectation reported failed (before any error) is the test's failure
        ok, actual, why = _check_expects(sub.expects[i], msg.get("expects") or [], completed=bool(msg.get("ok")))
        if not ok:
            v.status, v.actual, v.error_type, v.error_message = "fail", actual, "AssertionError", why
    return [v]


_COMPILE_WHY = {"exit": ("CompileError", "compilation failed"),
                "timeout": ("CompileTimeout", "compilation exceeded its CPU/wall budget"),
                "output": ("CompileOutputLimit", "compiler output over the cap"),
                "memory": ("CompileMemoryLimit", "compiler ran out of memory"),
                "artifact": ("CompileError", "compiler left no usable program")}


def _compile_error(raw: dict, v: Verdict) -> Verdict:
    """Status compile_error; the message is the compiler's own output, bounded (its head: the first errors)."""
    etype, what = _COMPILE_WHY.get(raw.get("why"), _COMPILE_WHY["exit"])
    text = bytes(raw.get("compile_msg") or b"").decode("utf-8", "replace").strip()
    cap = languages.COMPILE_MESSAGE_CAP
    if len(text) > cap:
        text = text[:cap] + f"\n... ({len(text) - cap} more characters)"
    extra = f": {raw['emsg']}" if raw.get("emsg") else ""
    v.status, v.error_type = "compile_error", etype
    v.error_message = f"{what}{extra}" + (f"\n{text}" if text else "")
    v.stdout = v.stderr = ""
    return v


def _last_line(stderr: bytes) -> str | None:
    return next((ln for ln in reversed(stderr.decode("utf-8", "replace").splitlines()) if ln.strip()), None)


def _judge_stdio(spec: TestSpec, raw: dict, msg: dict, v: Verdict) -> Verdict:
    """A stdio test, or a harness test (MultiPL-E, HumanEval-X): the tests are compiled into the program and the run
    passes when it exits 0. The harness's verdict channel (its exit status) is the program's own, so the caller marks
    the verdict ``judged_in_process`` (a program calling ``exit(0)`` first passes; rewards leave such verdicts out
    unless told otherwise). A failed harness assertion (non-zero exit, or the abort of C's ``assert``) is ``fail``."""
    status = msg.get("status", 0)
    stdout_b, stderr_b = raw.get("stdout", b""), raw.get("stderr", b"")
    harness = spec.kind == "harness"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        abort = harness and sig == signal.SIGABRT
        v.exit_code = -sig
        v.status = ("memory_limit" if (msg.get("oom") and sig == signal.SIGKILL)
                    else "fail" if abort else "runtime_error")
        v.error_type, v.error_message = ("AssertionFailed" if abort else "Signal"), f"killed by signal {sig}"
        return v
    v.exit_code = code = os.WEXITSTATUS(status)
    if code != 0 and not harness:
        m = _EXC_LINE.match(_last_line(stderr_b) or "")
        v.error_type = m.group(1).rsplit(".", 1)[-1] if m else "NonZeroExit"
        v.error_message = (m.group(2) if m else None) or f"exit code {code}"
        v.status = "memory_limit" if v.error_type == "MemoryError" else "runtime_error"
        return v
    if raw.get("out_total", 0) > len(stdout_b) + len(stderr_b):
        v.status, v.error_type = "output_limit", "OutputLimit"
        return v
    if harness:
        v.actual = _text(stdout_b, 1 << 16)
        if code == 0:
            v.status = "pass"
        else:
            v.status, v.error_type = "fail", "TestFailure"
            v.error_message = (_last_line(stderr_b) or "")[:500] or f"exit code {code}"
        return v
    if spec.expected is None or spec.checker:   # a checker decides later (pool: .checker)
        v.status, v.actual = "no_expected" if spec.expected is None else PENDING, stdout_b.decode("utf-8", "replace")
        return v
    good = stdio_equal(stdout_b, spec.expected, spec.comparison, spec.atol, spec.rtol)   # the bytes written
    v.status, v.error_type = ("pass", v.error_type) if good else ("fail", "WrongAnswer")
    return v


def _judge_files(sub: SubJob, spec: TestSpec, msg: dict, v: Verdict) -> list[Verdict]:
    if not msg.get("ok"):
        v.status = _status_for_exc(msg.get("etype"), in_test=False)
        v.error_type, v.error_message = msg.get("etype"), msg.get("emsg")
        return [v]
    subs = msg.get("subs") or []
    if not subs:
        v.status, v.error_type, v.error_message = "infra_error", "NoTestsCollected", "test file defines no tests"
        return [v]
    out = []
    for name, outcome, err in subs:
        w = Verdict(**{**v.as_dict(), "test_id": f"{spec.test_id}::{name}"})
        w.status = {"passed": "pass", "failed": "fail", "error": "runtime_error"}.get(outcome, "fail")
        if outcome != "passed":
            w.error_type = {"skipped": "Skipped", "error": "TestError"}.get(outcome, "TestFailure")
            w.error_message = err
        out.append(w)
    return out
