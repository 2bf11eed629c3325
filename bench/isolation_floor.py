"""The floor under per-program isolation: what a fresh process per program costs before any sandboxing.

    python bench/isolation_floor.py [--n 500]     # -> bench/results/isolation_floor.json

#33 asks reference execution to reach 60 % of the zero-overhead bound (programs' own CPU / cores). HumanEval's
references use ~1.4 ms of CPU each, so 60 % leaves ~0.9 ms of overhead per program for everything else. This bench
measures, on this machine, the cheapest thing any process-per-program sandbox must do (the factory forks a judge and
a program per program from a warm zygote that already imported what they need):

* ``fork+exit``: os.fork() of a warm Python process (the zygote's imports loaded), the child ``os._exit(0)``, the
  parent ``waitpid`` - no namespaces, no cgroup, no RPC, no test;
* ``2 x fork+exit``: the same for the two processes (judge + program) of a verdict;
* ``HumanEval reference, own CPU``: the programs' own CPU per program (their tests, measured in-process by exec).

The fraction of the bound reachable at best is own / (own + floor): printed per row.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("FACTORY_SHARED_DATA", ROOT.parent / "shared" / "data"))
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def fork_floor(n: int) -> tuple[float, float]:
    """(wall ms, CPU ms) per fork + _exit + waitpid of this (warm) process."""
    t, c = time.perf_counter(), _cpu()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return (time.perf_counter() - t) * 1000 / n, (_cpu() - c) * 1000 / n


def reference_cpu_ms() -> float:
    """Mean CPU ms per HumanEval reference running its own check() in this process (no isolation at all)."""
    with gzip.open(DATA / "humaneval" / "HumanEval.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f]
    total = 0.0
    for r in rows:
        ns: dict = {}
        c = time.process_time()
        exec(compile(r["prompt"] + r["canonical_solution"] + "\n" + r["test"], r["task_id"], "exec"), ns)
        ns["check"](ns[r["entry_point"]])
        total += time.process_time() - c
    return total * 1000 / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "isolation_floor.json"))
    args = ap.parse_args()
    # warm like a zygote: the modules its children use are imported before forking
    from factory.sandbox import zygote  # noqa: F401
    for name in zygote.WARM_MODULES:
        __import__(name)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    own = reference_cpu_ms()
    wall, cpu = fork_floor(args.n)
    rows = [("fork+exit (1 process)", wall, cpu), ("2 x fork+exit (judge + program)", 2 * wall, 2 * cpu)]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, warm process RSS {rss_mb:.0f} MB, "
          f"{args.n} forks; HumanEval reference own CPU {own:.2f} ms per program\n")
    print("| floor per program | wall ms | CPU ms | best fraction of the bound (own / (own + CPU floor)) |")
    print("|---|---:|---:|---:|")
    out = []
    for name, w, c in rows:
        frac = own / (own + c)
        out.append({"floor": name, "wall_ms": w, "cpu_ms": c, "best_fraction": frac})
        print(f"| {name} | {w:.2f} | {c:.2f} | {frac:.0%} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"reference_own_cpu_ms": own, "rss_mb": rss_mb, "rows": out,
                                          "load_average": os.getloadavg()[0], "cores": os.cpu_count()}, indent=1))


if __name__ == "__main__":
    main()
