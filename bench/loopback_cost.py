"""What a program's own network namespace (Job.own_network, SandboxFusion's per-run loopback) costs: the same
jobs with and without it, interleaved in one warm pool (one worker), per job of 5 tests.

    python bench/loopback_cost.py [--jobs 100] [--rounds 3]

stdio: a fresh process per test (5 namespaces per job); func: one candidate process per job (1 namespace)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from factory.sandbox import Job, Limits, SandboxPool, TestSpec  # noqa: E402


def jobs(kind: str, n: int, own: bool) -> list[Job]:
    if kind == "stdio":
        return [Job(f"s{i}", "print(int(input()) * 2)", [TestSpec(f"t{k}", "stdio", input=str(k), expected=str(2 * k))
                                                        for k in range(5)], own_network=own) for i in range(n)]
    return [Job(f"f{i}", "def f(x):\n    return x * 2\n", [TestSpec(f"t{k}", "assert", code=f"assert f({k}) == {2 * k}")
                                                          for k in range(5)], entry_point="f", own_network=own)
            for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench/results/loopback_cost.json")
    args = ap.parse_args()
    ms: dict = {}
    with SandboxPool(Limits(cpu_s=5.0), workers=1) as pool:
        list(pool.run(jobs("stdio", 2, True) + jobs("func", 2, False)))
        for _ in range(args.rounds):
            for kind in ("stdio", "func"):
                for own in (False, True):
                    t = time.perf_counter()
                    vs = list(pool.run(jobs(kind, args.jobs, own)))
                    assert all(v.status == "pass" for v in vs)
                    ms.setdefault(f"{kind} own_network={own}", []).append((time.perf_counter() - t) / args.jobs * 1e3)
    out = {k: {"ms_per_job": [round(x, 2) for x in v], "median": round(statistics.median(v), 2)} for k, v in ms.items()}
    out["load_avg"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
