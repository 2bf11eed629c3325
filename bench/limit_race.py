"""Why memory_limit vs timeout can flip under load: CPU time to a resource limit is not a constant of the program.

A program that grows memory while it computes (the serve bench's flipping mutant: a DP over big integers) reaches
its memory limit after some CPU time t. Its status is `memory_limit` when t < L (the CPU limit) and `timeout`
otherwise. Measured CPU time depends on what else runs on the cores (SMT siblings, caches, memory bandwidth):
this script runs the same program N times alone and N times beside busy processes, with a CPU limit far above t
so every run reaches the memory limit, and reports the spread of t. Any limit L inside [min t, max t] classifies
the same program differently from run to run; no choice of L avoids that band for every program, because t
varies with load, not with the program alone. Prints a table and writes bench/results/limit_race.json.

    python bench/limit_race.py --runs 12 --load 6
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
from pathlib import Path

from factory.sandbox import Job, Limits, SandboxPool, TestSpec

# a DP whose values are never reduced: the integers (and the list) grow until memory runs out
GROWING_DP = """
n = int(input())
dp = [[0, 0] for _ in range(3)]
dp[1] = [n, 1]
k = 1
while True:
    dp.append([dp[k][0] * (2 * k + n) + dp[k - 1][0] * k, dp[k][1] * 3 + dp[k - 1][1] * k])
    k += 1
"""


def spin(stop):
    x = 0
    while not stop.is_set():
        x = sum(i * i for i in range(20000))


def measure(runs: int, workers: int, memory_mb: int, cpu_s: float) -> list[tuple[str, float]]:
    jobs = [Job(program_id=f"p{i}", code=GROWING_DP, tests=[TestSpec(test_id="t", kind="stdio", input="7\n",
                                                                        expected="")]) for i in range(runs)]
    with SandboxPool(Limits(cpu_s=cpu_s, memory_mb=memory_mb, wall_min_s=cpu_s * 4), workers=workers) as pool:
        return [(v.status, v.cpu_ms / 1000) for v in pool.run(jobs) if hasattr(v, "status")]


def summarize(label: str, rows: list[tuple[str, float]]) -> dict:
    ts = [t for s, t in rows if s == "memory_limit"]
    return {"condition": label, "runs": len(rows), "memory_limit": len(ts),
            "other": sorted({s for s, _ in rows if s != "memory_limit"}),
            "cpu_s_min": round(min(ts), 3) if ts else None, "cpu_s_median": round(statistics.median(ts), 3) if ts else None,
            "cpu_s_max": round(max(ts), 3) if ts else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--load", type=int, default=6, help="busy processes beside the sandbox in the loaded condition")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-mb", type=int, default=512)
    ap.add_argument("--out", default="bench/results/limit_race.json")
    args = ap.parse_args()
    cpu_s = 60.0  # far above t: every run ends at the memory limit, and we read the CPU time it took
    results = [summarize("alone", measure(args.runs, 1, args.memory_mb, cpu_s))]
    stop = mp.Event()
    busy = [mp.Process(target=spin, args=(stop,), daemon=True) for _ in range(args.load)]
    for p in busy:
        p.start()
    try:
        time.sleep(1)
        results.append(summarize(f"{args.workers} workers + {args.load} busy processes",
                                 measure(args.runs, args.workers, args.memory_mb, cpu_s)))
    finally:
        stop.set()
        for p in busy:
            p.join(5)
    lo = min(r["cpu_s_min"] for r in results if r["cpu_s_min"])
    hi = max(r["cpu_s_max"] for r in results if r["cpu_s_max"])
    band = {"cpu_s_low": lo, "cpu_s_high": hi, "relative_width": round(hi / lo - 1, 3)}
    print(f"{'condition':<36} {'runs':>5} {'memory_limit':>13} {'t min':>7} {'t median':>9} {'t max':>7}")
    for r in results:
        print(f"{r['condition']:<36} {r['runs']:>5} {r['memory_limit']:>13} {r['cpu_s_min']:>7} "
              f"{r['cpu_s_median']:>9} {r['cpu_s_max']:>7}")
    print(f"band of CPU seconds to the memory limit: [{lo}, {hi}] (+{band['relative_width']:.0%}); a CPU limit in "
          "this band gives memory_limit on some runs and timeout on others")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"memory_mb": args.memory_mb, "cpu_count": os.cpu_count(),
                                          "results": results, "band": band}, indent=2) + "\n")


if __name__ == "__main__":
    main()
