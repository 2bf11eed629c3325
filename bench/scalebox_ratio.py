"""Throughput per core against ScaleBox's published figure on CodeContests-style stdio problems, all tests.

ScaleBox reports 25.3 problems/s on 128 cores = 0.198 problems/s per core (a problem = one program judged on
all of its tests). Here: the reference solutions of the 300 CodeContests problems in the shared data (stdin ->
stdout, every test, whitespace-token comparison) through the factory sandbox (``SandboxPool``) on this machine.

    python bench/scalebox_ratio.py                  # all 300 problems, workers = cores
    python bench/scalebox_ratio.py --problems 100 --cpu-s 6

Reported per core three ways, since the machine is shared with other jobs:

* **wall**: problems / wall seconds / cores (includes pool start; what a user on an idle machine of this
  size would see, degraded by the load average printed beside it);
* **CPU**: problems / CPU seconds of the whole sandbox (this process + workers + every program, from
  ``getrusage`` after the pool is closed) - one core-second of work per core, independent of other load;
* **programs' own CPU**: problems / CPU seconds the programs themselves used (the verdicts' cpu_ms), the
  zero-overhead bound for this work.

Writes ``bench/results/scalebox_ratio.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from factory.sandbox import Job, Limits, SandboxPool, TestSpec  # noqa: E402

DATA = Path(os.environ.get("FACTORY_SHARED_DATA", ROOT.parent / "shared" / "data"))
SCALEBOX_PER_CORE = 25.3 / 128


def load(n: int) -> list[Job]:
    jobs = []
    with open(DATA / "codecontests_subset300" / "codecontests_subset300.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("test_type") != "stdin_stdout" or not r.get("reference_solution_python"):
                continue
            tests = [TestSpec(str(i), "stdio", input=t["input"], expected=t["output"], comparison="token")
                     for i, t in enumerate(r["tests"])]
            jobs.append(Job(r["task_id"], r["reference_solution_python"], tests, stop_at_timeout=False))
            if len(jobs) == n:
                break
    return jobs


def cpu_total() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", type=int, default=300)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--cpu-s", type=float, default=6.0, help="CPU seconds per test (the data's verification used 6)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scalebox_ratio.json"))
    args = ap.parse_args()
    jobs = load(args.problems)
    cores = os.cpu_count() or 1
    load0 = os.getloadavg()[0]
    c0, w0 = cpu_total(), time.perf_counter()
    with SandboxPool(Limits(cpu_s=args.cpu_s, memory_mb=1024), args.workers) as pool:
        started = time.perf_counter() - w0
        w1 = time.perf_counter()
        verdicts = list(pool.run(jobs))
        run_s = time.perf_counter() - w1
    wall = time.perf_counter() - w0
    cpu = cpu_total() - c0
    load1 = os.getloadavg()[0]
    by_job: dict[str, list] = {}
    for v in verdicts:
        by_job.setdefault(v.program_id, []).append(v)
    solved = sum(all(v.status == "pass" for v in vs) for vs in by_job.values())
    statuses: dict[str, int] = {}
    for v in verdicts:
        statuses[v.status] = statuses.get(v.status, 0) + 1
    own = sum(v.cpu_ms or 0 for v in verdicts) / 1000
    n = len(jobs)
    res = {
        "problems": n, "tests": sum(len(j.tests) for j in jobs), "workers": args.workers, "cores": cores,
        "load_avg_start": load0, "load_avg_end": load1, "pool_start_s": started, "run_wall_s": run_s,
        "wall_s": wall, "cpu_s": cpu, "programs_cpu_s": own, "all_tests_pass": solved, "statuses": statuses,
        "per_core_wall": n / wall / cores, "per_core_cpu": n / cpu, "per_core_programs_cpu": n / own if own else None,
        "scalebox_per_core": SCALEBOX_PER_CORE,
    }
    res["ratio_wall"] = res["per_core_wall"] / SCALEBOX_PER_CORE
    res["ratio_cpu"] = res["per_core_cpu"] / SCALEBOX_PER_CORE
    print(f"CodeContests stdio, all tests: {n} problems / {res['tests']} tests, {args.workers} workers on {cores} cores, "
          f"load average {load0:.1f} -> {load1:.1f}")
    print(f"{'measure':34} {'problems/s/core':>16} {'x ScaleBox (0.198)':>19}")
    print(f"{'wall (incl. pool start ' + format(started, '.2f') + ' s)':34} {res['per_core_wall']:16.3f} "
          f"{res['ratio_wall']:19.2f}")
    print(f"{'CPU (sandbox + programs)':34} {res['per_core_cpu']:16.3f} {res['ratio_cpu']:19.2f}")
    if own:
        print(f"{'programs own CPU (bound)':34} {res['per_core_programs_cpu']:16.3f} "
              f"{res['per_core_programs_cpu'] / SCALEBOX_PER_CORE:19.2f}")
    print(f"all tests pass: {solved}/{n}; statuses {statuses}; wall {wall:.1f} s, CPU {cpu:.1f} s, programs {own:.1f} s")
    Path(args.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
