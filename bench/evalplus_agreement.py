"""Factory verdicts vs EvalPlus's on the same HumanEval programs (base tests), each difference listed.

The factory judges a HumanEval program with HumanEval's own ``check()`` (the dataset's asserts); EvalPlus judges
it on HumanEval+'s ``base_input`` against outputs of *its* canonical solution, with its own time limits and
float tolerance. The programs: the 164 references and up to ``--mutants`` AST mutants of each (``factory
mutate``), stored and executed in a throwaway lake. Both verdicts are program-level (every test passes).

EvalPlus is not a dependency of the factory; install it for this script only (its LLM-provider extras are not
needed): ``pip install --no-deps evalplus==0.3.1 appdirs tempdir wget multipledispatch termcolor
tree-sitter==0.26.1 tree-sitter-python==0.25.0``.

    python bench/evalplus_agreement.py [--mutants 3] [--out bench/results/evalplus_agreement.json]
"""
from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
import time
from itertools import groupby
from pathlib import Path

from harness import DATA, factory, parser, run, table, write  # noqa: I001  (first: the repository on sys.path)


def factory_verdicts(lake: Path, mutants: int) -> list[dict]:
    factory("init", lake=lake)
    factory("ingest", "humaneval", "--path", str(DATA / "humaneval" / "HumanEval.jsonl.gz"), lake=lake)
    factory("mutate", "--source", "humaneval", "--max-per-program", str(mutants), lake=lake)
    factory("execute", "--select", "all", "--source", "humaneval", lake=lake)
    sql = """
        SELECT p.source_id AS task_id, g.program_id, g.origin, g.code,
               bool_and(e.status = 'pass') AS passed, string_agg(DISTINCT e.status, ',') AS statuses,
               max(e.stderr) AS stderr
        FROM silver.programs g JOIN silver.problems p USING (problem_id)
        JOIN silver.executions e USING (program_id)
        GROUP BY ALL ORDER BY task_id, origin DESC, program_id"""
    return [json.loads(line) for line in factory("sql", "--format", "json", sql, lake=lake).splitlines() if line]


def evalplus_verdicts(rows: list[dict], work: Path) -> dict[str, dict]:
    plus = work / "HumanEvalPlus.jsonl"
    plus.write_bytes(gzip.decompress((DATA / "humanevalplus" / "HumanEvalPlus.jsonl.gz").read_bytes()))
    samples = work / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": r["task_id"], "solution": r["code"], "_id": r["program_id"]})
                               + "\n" for r in rows))
    env = {**os.environ, "HUMANEVAL_OVERRIDE_PATH": str(plus), "XDG_CACHE_HOME": str(work / "cache")}
    run([sys.executable, "-m", "evalplus.evaluate", "--dataset", "humaneval", "--samples", samples, "--base_only",
         "--parallel", os.cpu_count() or 2, "--i_just_wanna_run", "--test_details"], env=env)
    result = json.loads((work / "samples_eval_results.json").read_text())
    # evalplus keeps the samples of a task in file order (rows come sorted by task); pair them back with our ids
    by_task = {t: [r["program_id"] for r in group] for t, group in groupby(rows, key=lambda r: r["task_id"])}
    return {pid: {"passed": ev["base_status"] == "pass", "status": ev["base_status"],
                  "fails": [i for i, ok in enumerate(ev.get("base_details") or []) if not ok][:5]}
            for task_id, evals in result["eval"].items() for pid, ev in zip(by_task[task_id], evals)}


def main() -> None:
    ap = parser(__doc__, "evalplus_agreement.json", {"--mutants": 3})
    args = ap.parse_args()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = factory_verdicts(work / "lake", args.mutants)
        t_factory = time.time() - t0
        theirs = evalplus_verdicts(rows, work)
    agree = [r for r in rows if theirs[r["program_id"]]["passed"] == r["passed"]]
    differ = [{"task_id": r["task_id"], "program_id": r["program_id"], "origin": r["origin"],
               "factory": "pass" if r["passed"] else r["statuses"], "evalplus": theirs[r["program_id"]]["status"],
               "evalplus_failed_inputs": theirs[r["program_id"]]["fails"],
               "factory_stderr": (r["stderr"] or "")[-300:], "code": r["code"]} for r in rows if r not in agree]
    summary = {"programs": len(rows), "references": sum(r["origin"] == "reference" for r in rows),
               "mutants": sum(r["origin"] == "mutant" for r in rows), "agree": len(agree),
               "factory_pass": sum(r["passed"] for r in rows),
               "evalplus_pass": sum(v["passed"] for v in theirs.values()),
               "differences": differ, "seconds": round(time.time() - t0, 1), "factory_seconds": round(t_factory, 1)}
    print(table([summary], ["programs", "agree", "factory_pass", "evalplus_pass"]))
    for d in differ:
        print(f"  {d['task_id']:<16} {d['origin']:<9} factory={d['factory']:<14} evalplus={d['evalplus']:<5} "
              f"evalplus failed inputs {d['evalplus_failed_inputs']}")
    write(args.out, summary)


if __name__ == "__main__":
    main()
