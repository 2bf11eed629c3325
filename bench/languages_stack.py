"""Main-thread recursion 10^6 deep in C++, Rust and Java in the real sandbox (issue 42): compiled programs get a
stack as large as their memory limit (``languages.stack_mb``), so what contest judges accept runs here too.

    python bench/languages_stack.py [--depth 1000000] [--memory-mb 1024] [--out bench/results/languages_stack.json]

Per language: the verdict, CPU and wall time of the run (compilation apart) and the peak memory the cgroup saw
(the touched stack is memory like any other page)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from factory.sandbox import Job, Limits, SandboxPool, TestSpec, languages  # noqa: E402
from tests.sandbox.test_languages_fidelity import DEEP  # noqa: E402  (the programs the tests judge)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=10 ** 6)
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench/results/languages_stack.json")
    args = ap.parse_args()
    n = args.depth
    limits = Limits(cpu_s=10.0, wall_factor=4.0, wall_min_s=20.0, memory_mb=args.memory_mb)
    rows = []
    with SandboxPool(limits, workers=1) as pool:
        for lang, code in DEEP.items():
            if languages.toolchain(lang) is None:
                rows.append({"language": lang, "skipped": languages.missing_message(lang)})
                continue
            tests = [TestSpec(f"t{k}", "stdio", input=str(n), expected=str(n * (n + 1) // 2))
                     for k in range(args.repeat)]
            t0 = time.monotonic()
            vs = list(pool.run([Job(lang, code, tests, language=lang, compile_cpu_s=60.0, stop_at_timeout=False)]))
            row = {"language": lang, "depth": n, "memory_mb": args.memory_mb,
                   "stack_mb": languages.stack_mb(args.memory_mb, lang),
                   "statuses": [v.status for v in vs], "compile_cpu_s": round((vs[0].compile_ms or 0) / 1000, 3),
                   "run_cpu_s": [round(v.cpu_ms / 1000, 3) for v in vs],
                   "run_wall_s": [round(v.wall_ms / 1000, 3) for v in vs],
                   "peak_mb": [round(v.peak_memory_kb / 1024, 1) if v.peak_memory_kb else None for v in vs],
                   "total_s": round(time.monotonic() - t0, 2)}
            rows.append(row)
            print(json.dumps(row))
    result = {"load_avg": os.getloadavg(), "rows": rows}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
