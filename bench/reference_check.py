"""Reference solutions through the sandbox: every number the factory produces inherits its false passes and
false failures, so this is the sandbox's end-to-end correctness check on real data.

HumanEval (164 references; and 164 cross-wired programs, which must pass nothing), MBPP (974, entry point
derived as `factory ingest` does), MBPP+ (base + plus inputs, typed as EvalPlus restores them, run twice: the
first run's values become the second run's expected values), CodeContests (the verified references).
Prints a JSON summary and writes bench/results/reference_check.json.

    python bench/reference_check.py [--workers 2]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "sandbox")]
DATA = Path(os.environ.get("FACTORY_SHARED_DATA", ROOT.parent / "shared" / "data"))

from factory.ingest.evalplus_inputs import mbppplus_args  # noqa: E402
from factory.sandbox import Job, Limits, SandboxPool, TestSpec, serialize_value  # noqa: E402
from test_datasets import _cc_jobs, _he_job, _jsonl, _mbpp_jobs  # noqa: E402


def passed(verdicts) -> dict:
    by: dict[str, list[str]] = {}
    for v in verdicts:
        by.setdefault(v.program_id, []).append(v.status)
    return {"programs_all_pass": sum(all(s == "pass" for s in ss) for ss in by.values()), "programs": len(by),
            "tests": sum(len(ss) for ss in by.values())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    out: dict = {}
    t0 = time.time()
    with SandboxPool(Limits(cpu_s=10.0), workers=args.workers) as pool:
        he = [json.loads(line) for line in gzip.open(DATA / "humaneval" / "HumanEval.jsonl.gz", "rt")]
        out["humaneval"] = passed(pool.run([_he_job(r) for r in he]))
        cross = [Job(f"x{i}", r["prompt"] + he[(i + 1) % len(he)]["canonical_solution"],
                     [TestSpec("check", "check", r["test"])], entry_point=r["entry_point"]) for i, r in enumerate(he)]
        out["humaneval_cross_wired"] = passed(pool.run(cross))
        out["mbpp"] = passed(pool.run(_mbpp_jobs(_jsonl(DATA / "mbpp" / "mbpp.jsonl"))))
        rows = _jsonl(DATA / "mbppplus" / "MbppPlus.jsonl.gz")
        jobs = [Job(r["task_id"], r["canonical_solution"],
                    [TestSpec(f"b{k}", "call", input=serialize_value(mbppplus_args(r["task_id"], a)))
                     for k, a in enumerate(list(r["base_input"]) + list(r["plus_input"]))],
                    entry_point=r["entry_point"]) for r in rows]
        first = {(v.program_id, v.test_id): v for v in pool.run(jobs)}
        atol = {r["task_id"]: float(r.get("atol") or 0) for r in rows}
        for j in jobs:
            for t in j.tests:
                t.expected, t.atol = first[(j.program_id, t.test_id)].actual, atol[j.program_id]
        second = list(pool.run(jobs))
        fits = [v for v in second if first[(v.program_id, v.test_id)].status == "no_expected"]
        out["mbppplus"] = dict(passed(second), tests_reference_within_limits=len(fits),
                               tests_reference_within_limits_pass=sum(v.status == "pass" for v in fits),
                               reference_over_limits=sorted({f"{k[0]}:{v.status}" for k, v in first.items()
                                                             if v.status != "no_expected"}))
    with SandboxPool(Limits(cpu_s=6.0), workers=args.workers) as pool:
        out["codecontests_verified"] = passed(pool.run(_cc_jobs(DATA)))
    out["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(out, indent=1))
    dest = ROOT / "bench" / "results" / "reference_check.json"
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
