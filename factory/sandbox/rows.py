"""Verdicts as the rows `silver.executions` stores (also what `factory serve` returns): one row per (program,
test row), pytest/unittest cases merged (the worst case wins), every text field valid UTF-8 and capped."""
from __future__ import annotations

import json

from .serialize import clean_text
from .types import SANDBOX_VERSION, Verdict

TEXT_CAP = 2000
SEVERITY = ["pass", "fail", "runtime_error", "compile_error", "output_limit", "memory_limit", "timeout", "infra_error"]


def row_status(v: Verdict) -> str:
    return v.status if v.status in SEVERITY else "infra_error"


def merge_verdicts(verdicts: list[Verdict]) -> dict[tuple[str, str], tuple[Verdict, bool]]:
    """One verdict per (program, test row): pytest/unittest report `test_id::case`; the worst case wins. The flag
    is judged_in_process over all cases (one case judged inside the candidate's process makes the row forgeable)."""
    merged: dict[tuple[str, str], tuple[Verdict, bool]] = {}
    for v in verdicts:
        if v.test_id is None:
            continue
        key = (v.program_id, v.test_id.split("::", 1)[0])
        old = merged.get(key)
        worse = old is None or SEVERITY.index(row_status(v)) > SEVERITY.index(row_status(old[0]))
        merged[key] = (v if worse else old[0], v.judged_in_process or bool(old and old[1]))
    return merged


def clean_json(value) -> str | None:
    """JSON text for a JSON column: surrogates escaped (inside JSON strings this is lossless: '\\ud800' parses
    back to the same character); text that is not JSON is wrapped as {"unparsed": text} instead of failing."""
    text = clean_text(value)
    if text is None or is_json(text):
        return text
    return json.dumps({"unparsed": text})


def is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def _number(value, kind=float):
    try:
        return None if value is None else kind(value)
    except (TypeError, ValueError, OverflowError):
        return None


def verdict_row(program_id: str, test_id: str, v: Verdict, in_process: bool, limits_hash: str, now) -> dict:
    """The silver.executions row of a merged verdict, every text field made valid UTF-8 (defense in depth: a row
    the program managed to fill with bad text must not abort the batch)."""
    try:
        return {
            "program_id": program_id, "test_id": test_id, "limits_hash": limits_hash, "status": row_status(v),
            "cpu_ms": _number(v.cpu_ms), "wall_ms": _number(v.wall_ms), "peak_memory_kb": _number(v.peak_memory_kb, int),
            "stdout": clean_text((v.stdout or "")[:TEXT_CAP]), "stderr": clean_text((v.stderr or "")[:TEXT_CAP]),
            "error_type": clean_text(v.error_type), "error_message": clean_text((v.error_message or "")[:TEXT_CAP] or None),
            "limits": clean_json(v.limits), "sandbox_version": SANDBOX_VERSION, "sandbox_meta": clean_json(v.sandbox_meta),
            "judged_in_process": bool(in_process), "executed_at": now}
    except Exception as exc:  # noqa: BLE001 - keep the verdict's status, drop what could not be stored
        return bare_row(program_id, test_id, row_status(v), in_process, limits_hash, now, exc)


def bare_row(program_id, test_id, status, in_process, limits_hash, now, exc) -> dict:
    return {"program_id": program_id, "test_id": test_id, "limits_hash": limits_hash, "status": status,
            "cpu_ms": None, "wall_ms": None, "peak_memory_kb": None, "stdout": None, "stderr": None,
            "error_type": "VerdictNotStored", "error_message": clean_text(f"verdict text could not be stored: "
                                                                          f"{type(exc).__name__}: {exc}")[:TEXT_CAP],
            "limits": None, "sandbox_version": SANDBOX_VERSION, "sandbox_meta": None,
            "judged_in_process": bool(in_process), "executed_at": now}


def tests_reward(outcomes: dict[str, tuple[str, bool]], test_ids, exclude_in_process: bool = True,
                 binary: bool = False) -> float:
    """The reward of one program: the fraction of its problem's test rows passed (1.0/0.0 when binary).
    ``outcomes``: test row id -> (status, judged_in_process), as :func:`merge_verdicts` gives them; a test with
    no outcome counts as failed. Rows judged inside the candidate's own process (forgeable) are left out unless
    ``exclude_in_process=False``; with nothing left the reward is 0."""
    counted = [t for t in test_ids if not (exclude_in_process and outcomes.get(t, ("", False))[1])]
    if not counted:
        return 0.0
    frac = sum(outcomes.get(t, ("", False))[0] == "pass" for t in counted) / len(counted)
    return float(frac == 1.0) if binary else frac
