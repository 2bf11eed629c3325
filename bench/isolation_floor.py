"""The floor under per-program isolation: what a fresh process per program costs before any sandboxing.

    python bench/isolation_floor.py [--n 500]     # -> bench/results/isolation_floor.json

#33 asks reference execution to reach 60 % of the zero-overhead bound (programs' own CPU / cores). HumanEval's
references use ~1.4 ms of CPU each, so 60 % leaves ~0.9 ms of overhead per program for everything else. This bench
measures, on this machine, the cheapest thing any process-per-program sandbox must do (the factory forks a judge and
a program per program from a warm zygote that already imported what they need):

* ``fork+exit``: os.fork() of a warm Python process (the zygote's imports loaded), the child ``os._exit(0)``, the
  parent ``waitpid`` - no namespaces, no cgroup, no RPC, no test. This is the factory's case for function-style
  tests (a kept judge serves a worker's programs one after another, so each program costs one fork) and stdio
  tests (the zygote compares the output);
* ``2 x fork+exit``: a fresh judge and a program per verdict (pytest files, or when the kept judge retires);
* the programs' own CPU per program: from ``--sandbox-json`` (the cgroup-measured ``programs_own_cpu_s`` of a
  ``bench/sandbox_bench.py`` run) when given, else their tests exec'd in this process (compile included).

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


def fork_unshare_floor(n: int) -> tuple[float, float] | None:
    """(wall ms, CPU ms) per fork whose child also enters a fresh IPC namespace (``unshare``): the namespace work
    the factory does per program beyond the fork (the worker's mount, network, pid, uts and user namespaces are made
    once per worker and its scratch /tmp is reset between programs; each program gets its own IPC namespace so it
    cannot reach another program's shared memory or queues - principle 6). None without the privilege."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    clone_newipc = 0x08000000
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.unshare(clone_newipc) == 0 else 1)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        return None
    t, c = time.perf_counter(), _cpu()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            libc.unshare(clone_newipc)
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
    ap.add_argument("--sandbox-json", help="a bench/sandbox_bench.py result: its programs' own CPU per program")
    args = ap.parse_args()
    # warm like a zygote: the modules its children use are imported before forking
    from factory.sandbox import zygote  # noqa: F401
    for name in zygote.WARM_MODULES:
        __import__(name)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    own = reference_cpu_ms()
    source = "exec in this process, compile included"
    if args.sandbox_json:
        run = json.loads(Path(args.sandbox_json).read_text())
        own, source = 1000 * run["programs_own_cpu_s"] / run["programs"], f"cgroup-measured in {args.sandbox_json}"
    wall, cpu = fork_floor(args.n)
    rows = [("fork+exit (1 process: kept judge / stdio)", wall, cpu),
            ("2 x fork+exit (fresh judge + program)", 2 * wall, 2 * cpu)]
    ns = fork_unshare_floor(max(50, args.n // 5))
    if ns is not None:
        rows.append(("fork + new IPC namespace + exit (1 process, as the zygote does)", *ns))
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, warm process RSS {rss_mb:.0f} MB, "
          f"{args.n} forks; HumanEval reference own CPU {own:.2f} ms per program ({source})\n")
    print("| floor per program | wall ms | CPU ms | best fraction of the bound (own / (own + CPU floor)) |")
    print("|---|---:|---:|---:|")
    out = []
    for name, w, c in rows:
        frac = own / (own + c)
        out.append({"floor": name, "wall_ms": w, "cpu_ms": c, "best_fraction": frac})
        print(f"| {name} | {w:.2f} | {c:.2f} | {frac:.0%} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"reference_own_cpu_ms": own, "own_cpu_source": source, "rss_mb": rss_mb,
                                          "rows": out,
                                          "load_average": os.getloadavg()[0], "cores": os.cpu_count()}, indent=1))


if __name__ == "__main__":
    main()
