"""Calibrated time limits vs fixed ones, at 1x and 4x CPU oversubscription (issue #17 item 2).

Programs: the CodeContests references that pass every test (known-correct), and a *slowed* copy of some of them
(the same program after a CPU-bound prelude of max(2 s, 6 x the reference's own CPU time): correct output, far too
slow). For each limit setting and load we count timeouts of the correct programs (should be 0) and how many
slowed programs are caught (a timeout; should be all).

Limit settings: fixed 1 s CPU, fixed 4 s CPU (the factory's default), calibrated (`factory calibrate`:
max(floor 1 s, 4 x reference CPU), at most 20 s). Load 4x: 6 busy-loop processes beside the 2 sandbox workers on
2 cores. Prints a table and writes JSON.

    python bench/time_limits.py [--data-dir ../shared/data] [--slowed 40]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from factory.stages.execute import add_samples, execute  # noqa: E402
from factory.stages.ingest import ingest_source  # noqa: E402
from factory.stages.checkers import run_calibrate, run_checkers  # noqa: E402
from factory.sandbox import Limits  # noqa: E402
from factory.lake.commit import stage_run  # noqa: E402
from tests.lakeutil import init_lake, query  # noqa: E402

SLOW_MODEL = "bench-slowed"


def burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(procs) -> None:
    for p in procs:
        p.kill()
        p.wait()


def counts(lake, run_ids: list[str]) -> dict:
    """Timeouts of correct references, slowed programs caught, among the verdicts of these execute runs."""
    rows = query(lake, """
        WITH v AS (
            SELECT p.origin, p.program_id, bool_or(e.status = 'timeout') AS timed_out,
                   bool_and(e.status = 'pass') AS passed
            FROM silver.executions e JOIN silver.programs p USING (program_id)
            WHERE list_contains(?, e.run_id)
            GROUP BY ALL)
        SELECT origin, count(*), count(*) FILTER (WHERE timed_out), count(*) FILTER (WHERE passed)
        FROM v GROUP BY origin""", [run_ids])
    return {origin: {"programs": n, "timed_out": t, "passed": p} for origin, n, t, p in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--slowed", type=int, default=40, help="how many slowed copies of references")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "time_limits.json"))
    ap.add_argument("--workdir", help="keep the lake here (default: a temp dir)")
    ap.add_argument("--reuse", action="store_true", help="reuse the calibrated lake of an earlier run in --workdir")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="time-limits-"))
    lake = work / "lake"
    measure = Limits(cpu_s=20.0)
    if not (args.reuse and lake.exists()):
        if lake.exists():
            shutil.rmtree(lake)
        init_lake(lake)
        ingest_source("codecontests", [Path(args.data_dir) / "codecontests_subset300" /
                                       "codecontests_subset300.jsonl"], lake=lake)
        run_checkers(lake, ["codecontests"])
        t0 = time.perf_counter()
        cal = run_calibrate(lake, ["codecontests"], factor=4.0, floor_s=1.0, cap_s=20.0, repeats=3)
        cal["seconds"] = round(time.perf_counter() - t0, 1)
        (work / "calibration.json").write_text(json.dumps(cal))
        # known-correct: references that pass every test under the measuring limit
        execute(lake, selection="reference", limits=measure, time_limits="fixed")
    cal = json.loads((work / "calibration.json").read_text())
    good = query(lake, """SELECT p.program_id, p.problem_id, pb.source_id, p.code, tl.reference_cpu_ms
        FROM silver.programs p JOIN silver.problems pb USING (problem_id) JOIN silver.time_limits tl USING (problem_id)
        JOIN (SELECT program_id FROM silver.executions WHERE limits_hash = ? GROUP BY 1
              HAVING bool_and(status = 'pass')) USING (program_id)
        WHERE p.origin = 'reference' AND tl.status = 'calibrated' ORDER BY tl.reference_cpu_ms DESC""",
                 [measure.hash()])
    slowed = good[:: max(1, len(good) // args.slowed)][: args.slowed]
    samples = work / "slowed.jsonl"
    with samples.open("w") as f:
        for _, _, source_id, code, ms in slowed:
            spin = max(2.0, 6 * ms / 1000)
            prelude = f"import time as _t\n_c = _t.process_time()\nwhile _t.process_time() - _c < {spin:.3f}:\n    pass\n"
            f.write(json.dumps({"task_id": source_id, "solution": prelude + code}) + "\n")
    slowed_ids = add_samples(lake, samples, SLOW_MODEL, "codecontests")
    ids = [g[0] for g in good] + slowed_ids
    results = []
    settings = [("fixed 1 s", Limits(cpu_s=1.0), "fixed"), ("fixed 4 s", Limits(cpu_s=4.0), "fixed"),
                ("calibrated", Limits(cpu_s=4.0), "calibrated")]
    for load in (1, 4):
        for name, limits, mode in settings:
            with stage_run("bench-reset", {"bench": "time_limits"}, lake=lake) as run:   # verdicts of earlier settings
                run.delete("silver.executions", "list_contains(?, program_id) AND limits_hash <> ?",
                           [ids, measure.hash()])
            procs = burners(2 * load - 2)
            try:
                t0 = time.perf_counter()
                rep = execute(lake, selection="all", program_ids=ids, limits=limits, workers=2,
                              time_limits=mode, fill_expected=False)
                wall = time.perf_counter() - t0
            finally:
                stop(procs)
            c = counts(lake, rep.runs)
            ref, slow = c.get("reference", {}), c.get("sample", {})
            results.append({"load": f"{load}x", "limits": name, "wall_s": round(wall, 1),
                            "correct_programs": ref.get("programs", 0), "correct_timeouts": ref.get("timed_out", 0),
                            "slowed_programs": slow.get("programs", 0), "slowed_caught": slow.get("timed_out", 0),
                            "slowed_passed": slow.get("passed", 0)})
            print(results[-1], flush=True)
    out = {"calibration": cal, "results": results, "known_correct": len(good), "slowed": len(slowed)}
    print(f"\ncalibration: {cal}")
    print(f"{'load':<5} {'limits':<11} {'correct':>8} {'timeouts':>9} {'slowed':>7} {'caught':>7} {'wall s':>7}")
    for r in results:
        print(f"{r['load']:<5} {r['limits']:<11} {r['correct_programs']:>8} {r['correct_timeouts']:>9} "
              f"{r['slowed_programs']:>7} {r['slowed_caught']:>7} {r['wall_s']:>7}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
