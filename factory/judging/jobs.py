"""Lake rows <-> sandbox: a program row and its test rows become a sandbox Job (under the problem's judging
rule); verdict rows become an Arrow table of `silver.executions` that a commit cannot choke on.

Shared by the stages that run programs and record verdicts (execute, checkers/calibrate, augment).
"""
from __future__ import annotations

import pyarrow as pa

from factory.judging.rules import NO_OVERRIDE, ProblemJudging
from factory.lake.catalog import default_catalog
from factory.sandbox import Job, TestSpec
from factory.sandbox.rows import bare_row


def program_job(row: dict, tests: list[dict], rule: ProblemJudging = NO_OVERRIDE) -> Job:
    """Sandbox job of a program row (program_id, code, entry_point, test_preamble[, origin, language]) and its problem's test
    rows. A program of a known origin other than 'reference' (samples, mutants, synth) stops at its first timeout
    (its later tests: timeout/NotRun); references run every test, since their verdicts validate the tests."""
    return Job(program_id=row["program_id"], code=row["code"], entry_point=row["entry_point"],
               preamble=row["test_preamble"] or "", cpu_s=rule.cpu_s, language=row.get("language") or "python",
               stop_at_timeout=row.get("origin") not in (None, "reference"),
               tests=[rule.apply(TestSpec(test_id=t["test_id"], kind=t["kind"], code=t["code"], input=t["input"],
                                          expected=t["expected"], comparison=t["comparison"], atol=t["atol"]))
                      for t in tests])


def executions_table(rows: list[dict]) -> pa.Table:
    """Arrow table of execution rows; a row that still cannot be converted is replaced by its bare row."""
    schema = default_catalog()["silver.executions"].arrow_schema(skip=("run_id",))
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except Exception:  # noqa: BLE001 - find the bad rows instead of losing the batch
        safe = []
        for r in rows:
            try:
                pa.Table.from_pylist([r], schema=schema)
                safe.append(r)
            except Exception as exc:  # noqa: BLE001
                safe.append(bare_row(r.get("program_id"), r.get("test_id"), r.get("status") or "infra_error",
                                      r.get("judged_in_process"), r.get("limits_hash"), r.get("executed_at"), exc))
        return pa.Table.from_pylist(safe, schema=schema)
