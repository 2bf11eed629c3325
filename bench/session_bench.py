"""Interpreter sessions (factory.sandbox.session): what one costs and how many this machine holds.

Measures, on real sandboxed sessions (cgroup slot + namespaces + minimal root + own uid + seccomp per session):

- create: starting a session until its first cell can run (``InterpreterSession()``), and its first cell;
- overhead per call: a trivial cell (``1``) in a warm session, in process and over HTTP (``factory serve``'s
  ``/v1/sessions/{id}/run``) - the cost a multi-turn rollout pays per interpreter turn besides its code;
- memory per idle session: proportional set size (PSS) of every process of a session (outer waiter, host,
  interpreter) and the session's cgroup charge, with N sessions held at once, all answering a cell at the end.

    python bench/session_bench.py                     # 256 sessions held, 300 calls
    python bench/session_bench.py --hold 512 --calls 500
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def tree_pss_kb(pid: int) -> tuple[int, int]:
    """(PSS kB, processes) of ``pid`` and all its descendants."""
    import psutil
    try:
        procs = [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return 0, 0
    total = 0
    for p in procs:
        try:
            total += p.memory_full_info().pss // 1024
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total, len(procs)


def cgroup_kb(outer_pid: int) -> int | None:
    from factory.sandbox import cgroup
    for base in cgroup._slot_bases():
        for name in ("memory.usage_in_bytes", "memory.current"):
            f = Path(base) / f"factory-sbx-{outer_pid}-session" / name
            if f.exists():
                return int(f.read_text()) // 1024
    return None


def bench_calls(run, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        r = run("1")
        out.append((time.perf_counter() - t) * 1000)
        assert r.result == "1", r
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hold", type=int, default=256, help="sessions held at once for the memory figure")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--creates", type=int, default=10)
    ap.add_argument("--out", default=str(ROOT / "bench/results/session_bench.json"))
    args = ap.parse_args()
    from factory.sandbox.session import InterpreterSession

    res: dict = {"machine": {"cpus": os.cpu_count(), "mem_total_gb": round(
        os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}}

    # create cost
    creates, firsts = [], []
    for _ in range(args.creates):
        t = time.perf_counter()
        s = InterpreterSession(cpu_s_per_call=5)
        t1 = time.perf_counter()
        r = s.run("x = 1")
        t2 = time.perf_counter()
        assert r.status == "ok", r
        creates.append((t1 - t) * 1000)
        firsts.append((t2 - t1) * 1000)
        meta = s.meta
        s.close()
    res["isolation"] = meta
    res["create_ms"] = {"p50": pct(creates, 50), "p95": pct(creates, 95), "n": len(creates)}
    res["first_cell_ms"] = {"p50": pct(firsts, 50), "p95": pct(firsts, 95)}

    # per-call overhead, in process
    with InterpreterSession(cpu_s_per_call=5) as s:
        bench_calls(s.run, 20)
        ms = bench_calls(s.run, args.calls)
    res["call_ms_in_process"] = {"p50": pct(ms, 50), "p95": pct(ms, 95), "mean": statistics.mean(ms), "n": len(ms)}

    # per-call overhead over HTTP (a real `factory serve`)
    from tests.serve.conftest import Server
    from factory.serve.session_tools import SessionClient
    srv = Server("--workers", "1", "--max-sessions", "8")
    try:
        c = SessionClient(srv.url)
        bench_calls(lambda code: c.run("bench", code), 20)
        ms = bench_calls(lambda code: c.run("bench", code), args.calls)
        c.close("bench")
    finally:
        srv.stop()
    res["call_ms_http"] = {"p50": pct(ms, 50), "p95": pct(ms, 95), "mean": statistics.mean(ms), "n": len(ms)}

    # memory with N sessions held at once
    from factory.sandbox.session import SessionPool
    with open("/proc/meminfo") as f:
        avail0 = int(next(x for x in f if x.startswith("MemAvailable")).split()[1])
    t = time.perf_counter()
    with SessionPool(max_sessions=args.hold, cpu_s_per_call=5, idle_timeout_s=600) as pool:
        for i in range(args.hold):
            pool.run(f"t{i}", "import math, collections, itertools, re, json\nstate = list(range(1000))")
        held_s = time.perf_counter() - t
        pss, nprocs, cg = [], 0, []
        for s in pool.sessions.values():
            kb, n = tree_pss_kb(s.pid)
            pss.append(kb)
            nprocs += n
            c = cgroup_kb(s.pid)
            if c is not None:
                cg.append(c)
        with open("/proc/meminfo") as f:
            avail1 = int(next(x for x in f if x.startswith("MemAvailable")).split()[1])
        answers = sum(pool.run(f"t{i}", "len(state)").result == "1000" for i in range(args.hold))
    res["held"] = {"sessions": args.hold, "answered": answers, "start_all_s": round(held_s, 2),
                   "processes": nprocs, "pss_kb_per_session": {"p50": pct(pss, 50), "mean": statistics.mean(pss)},
                   "cgroup_kb_per_session": {"p50": pct(cg, 50)} if cg else None,
                   "mem_available_drop_mb": round((avail0 - avail1) / 1024, 1),
                   "per_session_by_mem_available_mb": round((avail0 - avail1) / 1024 / args.hold, 1)}

    rows = [("create (until the first cell can run)", res["create_ms"]["p50"], res["create_ms"]["p95"], "ms"),
            ("first cell of a session", res["first_cell_ms"]["p50"], res["first_cell_ms"]["p95"], "ms"),
            ("trivial cell, warm session, in process", res["call_ms_in_process"]["p50"],
             res["call_ms_in_process"]["p95"], "ms"),
            ("trivial cell, warm session, HTTP /v1/sessions", res["call_ms_http"]["p50"],
             res["call_ms_http"]["p95"], "ms")]
    print(f"{'measure':48} {'p50 ms':>9} {'p95 ms':>9}")
    for name, a, b, _ in rows:
        print(f"{name:48} {a:9.2f} {b:9.2f}")
    h = res["held"]
    print(f"\nheld at once: {h['sessions']} sessions ({h['processes']} processes), all answered: "
          f"{h['answered'] == h['sessions']}; started in {h['start_all_s']} s")
    print(f"memory per idle session: PSS {h['pss_kb_per_session']['p50'] / 1024:.1f} MB (p50), cgroup "
          f"{(h['cgroup_kb_per_session'] or {}).get('p50', 0) / 1024:.1f} MB, MemAvailable drop "
          f"{h['per_session_by_mem_available_mb']} MB")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
