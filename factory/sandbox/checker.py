"""Checker programs: a problem's own accept/reject rule, run in the sandbox like any untrusted program.

Contract (testlib's, in Python): the checker source defines ::

    def check(input: str, expected: str, actual: str):
        ...

``input`` is the test's stdin (``stdio``) or its JSON argument list (``call``); ``expected`` the jury's answer
(stdout of the reference, or the serialized expected value); ``actual`` what the candidate printed (or its
serialized return value). It returns ``True``/``False``, a score in [0, 1], or ``(verdict, message)``.

Only an explicit accept passes: ``True`` or a score of 1. ``False``, a lower score, an exception, a time-out or
anything else the checker does is a ``fail`` whose ``error_type`` says why (``WrongAnswer``, ``PartialScore``,
``CheckerError``), so a candidate that prints garbage to crash the checker gains nothing. A checker bug shows up
as references failing their own tests (the health check reports it), never as a hidden pass. The score and the
checker's message are kept in the verdict's ``sandbox_meta`` under ``"checker"``.

The checker never runs in the trusted parent: :func:`checker_jobs` turns pending verdicts into sandbox jobs
(one job per checker source, one ``call`` test per verdict), and :func:`apply_checker_verdicts` reads their
plain-data results back.
"""
from __future__ import annotations

import json

from .serialize import Opaque, deserialize_value, serialize_value
from .types import Job, TestSpec, Verdict

PENDING = "check_pending"     # internal status: the candidate ran cleanly, its output awaits the checker
ENTRY_POINT = "check"
MESSAGE_CAP = 500


def checker_jobs(pending: list[tuple[Verdict, TestSpec]]) -> list[Job]:
    """Sandbox jobs that run each pending verdict's checker on (input, expected, actual)."""
    by_source: dict[str, Job] = {}
    for k, (v, spec) in enumerate(pending):
        job = by_source.setdefault(spec.checker, Job(program_id="checker", code=spec.checker, entry_point=ENTRY_POINT))
        args = [spec.input or "", spec.expected or "", v.actual or ""]
        job.tests.append(TestSpec(test_id=str(k), kind="call", input=serialize_value(args), expected=None))
    return list(by_source.values())


def _decision(value) -> tuple[bool, float | None, str | None, str | None]:
    """(accepted, score, message, why-not) of a checker's return value."""
    message = None
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[1], str):
        value, message = value[0], value[1][:MESSAGE_CAP]
    if isinstance(value, bool):
        return value, float(value), message, None if value else "WrongAnswer"
    if isinstance(value, (int, float)) and not isinstance(value, Opaque) and value == value:
        score = min(max(float(value), 0.0), 1.0)
        if score >= 1.0:
            return True, 1.0, message, None
        return False, score, message, "WrongAnswer" if score == 0.0 else "PartialScore"
    return False, None, f"checker returned {type(value).__name__}, not a verdict", "CheckerError"


def apply_checker_verdicts(pending: list[tuple[Verdict, TestSpec]], results: list[Verdict]) -> None:
    """Decide each pending verdict from its checker run (``results``: the verdicts of :func:`checker_jobs`)."""
    by_key = {r.test_id: r for r in results if r.test_id is not None}
    for k, (v, _spec) in enumerate(pending):
        r = by_key.get(str(k))
        if r is None:
            accepted, score, message, why = False, None, "the checker produced no result", "CheckerError"
        elif r.status != "no_expected":
            detail = r.error_message or r.error_type or r.status
            accepted, score, message, why = False, None, f"checker {r.status}: {detail}"[:MESSAGE_CAP], "CheckerError"
        else:
            try:
                value = deserialize_value(r.actual)
            except (ValueError, TypeError, KeyError):
                value = None
            accepted, score, message, why = _decision(value)
        meta = {"score": score, "message": message, "cpu_ms": None if r is None else r.cpu_ms}
        try:
            base = json.loads(v.sandbox_meta or "{}")
        except ValueError:
            base = {}
        v.sandbox_meta = json.dumps({**base, "checker": meta}, sort_keys=True)
        v.status = "pass" if accepted else "fail"
        if not accepted:
            v.error_type = why
            v.error_message = message or ("rejected by the problem's checker" if why == "WrongAnswer" else None)
