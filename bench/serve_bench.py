"""Load test of `factory serve` with a realistic RL step, against the offline `factory execute` verdicts.

1. A throwaway lake: HumanEval + MBPP + CodeContests ingested, AST mutants of their references, and
   `factory execute --select all --cpu-s 1` -> the offline verdicts.
2. Rollouts: programs of that lake (references and mutants: correct, wrong, crashing and timing-out programs),
   each with its problem's tests, replayed as one RL step of N rollouts.
3. `factory serve` (same limits as the offline run) on a loopback port; an async HTTP load generator (httpx)
   sends the step as `/v1/judge` requests of --batch items, --concurrency in flight; at 1x and kx CPU
   oversubscription (busy-loop processes). Measured: verdicts/s, request p50/p99, flips vs offline.
4. The same workload through verl's own `sandbox_fusion` client (`check_correctness`, one `/run_code` call per
   test, `max_concurrent` 64/256 via its semaphore): time, p50/p99 per `/run_code` call (retries included),
   flips (pass vs not pass) and *lost* answers: tests that pass offline but that verl's client scored as an API
   error (-1: a read timeout, a 504 after its 3 attempts) - a correct answer thrown away by the transport.
5. `--native-concurrency 64 256`: the step as one `/v1/judge` request per rollout (what verl 0.9's reward loop
   does with our `compute_score` and FACTORY_VERIFIER_URL), that many in flight.
6. The offline baseline: the same rollouts' programs and tests through one `SandboxPool` (what `factory execute`
   runs), same limits and workers; every served row reports its throughput as a ratio of this.

Bounded: --time-limit seconds overall; loopback only. Prints a table and writes JSON.

    python bench/serve_bench.py [--rollouts 512 2048] [--oversub 1 4] [--verl-concurrency 64 256]
    python bench/serve_bench.py --lake LAKE --time-limits fixed --rollouts 512 --oversub \
        --native-concurrency 64 256 --verl-concurrency 64 256 --out bench/results/serve_concurrency.json
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from itertools import takewhile
from pathlib import Path

from harness import DATA, factory, oversubscribed, parser, table, timed, write  # noqa: I001  (first: sys.path)
CPU_S = 1.0   # CPU seconds per test, offline and served alike (looping mutants cost this much each)

from tests.serve.conftest import Server  # noqa: E402  (starts `factory serve` on a free loopback port)


def build_lake(lake: Path, time_limits: str) -> None:
    factory("init", lake=lake)
    factory("ingest", "humaneval", "--path", DATA / "humaneval" / "HumanEval.jsonl.gz", lake=lake)
    factory("ingest", "mbpp", "--path", DATA / "mbpp" / "mbpp.jsonl", lake=lake)
    factory("ingest", "codecontests", "--path", DATA / "codecontests_subset300" / "codecontests_subset300.jsonl",
            lake=lake)
    factory("mutate", "--max-per-program", "2", lake=lake)
    if time_limits == "calibrated":   # per-problem limits max(1 s, 4 x reference CPU), offline and served alike
        factory("calibrate", "--floor-s", CPU_S, "--factor", "4", lake=lake)
    factory("execute", "--select", "all", "--cpu-s", CPU_S, "--time-limits", time_limits, lake=lake)


def load_programs(lake: Path) -> list[dict]:
    import factory.lake as L

    with L.connect(str(lake), read_only=True) as con:
        rows = con.execute("""
        SELECT g.program_id, g.origin, g.code, p.source, p.entry_point, p.test_preamble, tl.cpu_s,
               list({test_id: t.test_id, kind: t.kind, code: t.code, input: t.input, expected: t.expected,
                     comparison: t.comparison, atol: t.atol} ORDER BY t.ordinal) AS tests,
               map_from_entries(list({k: e.test_id, v: e.status})) AS offline,
               map_from_entries(list({k: e.test_id, v: e.cpu_ms})) AS offline_cpu_ms
        FROM silver.programs g JOIN silver.problems p USING (problem_id)
        JOIN silver.tests t USING (problem_id)
        JOIN gold.latest_executions e ON e.program_id = g.program_id AND e.test_id = t.test_id
        LEFT JOIN silver.time_limits tl ON tl.problem_id = g.problem_id AND tl.cpu_s IS NOT NULL
        GROUP BY ALL""").to_arrow_table().to_pylist()
    # an Arrow MAP reads as a list of pairs
    return [{**r, "offline": dict(r["offline"]), "offline_cpu_ms": dict(r["offline_cpu_ms"])} for r in rows]


def item(r: dict) -> dict:
    out = {"id": r["program_id"], "code": r["code"],
           "ground_truth": {"tests": r["tests"], "entry_point": r["entry_point"], "test_preamble": r["test_preamble"]}}
    if r.get("cpu_s"):
        out["cpu_s"] = r["cpu_s"]   # the problem's calibrated limit
    return out


async def judge_async(url: str, rollouts: list[dict], batch: int, concurrency: int) -> dict:
    import httpx

    sem = asyncio.Semaphore(concurrency)
    latencies, results = [], []

    async def one(client, chunk):
        async with sem:
            t0 = time.perf_counter()
            while True:
                r = await client.post(url + "/v1/judge", json={"items": [item(x) for x in chunk]})
                if r.status_code in (429, 503):
                    await asyncio.sleep(float(r.headers.get("retry-after", 1)))
                    continue
                r.raise_for_status()
                break
            latencies.append(time.perf_counter() - t0)
            results.extend(r.json()["items"])

    t0 = time.perf_counter()
    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=concurrency)) as client:
        await asyncio.gather(*(one(client, rollouts[i:i + batch]) for i in range(0, len(rollouts), batch)))
    return {"seconds": time.perf_counter() - t0, "latencies": latencies, "results": results}


def flips_native(rollouts: list[dict], results: list[dict]) -> tuple[int, int, list, int]:
    """(flips, verdicts, examples, flips that are timeout<->other on a test needing about the limit)."""
    by_id = {}
    for r in results:
        by_id.setdefault(r["id"], []).append(r)
    flips, verdicts, examples, timing = 0, 0, [], 0
    for ro in rollouts:   # a program's k-th rollout takes its k-th result
        for row in by_id[ro["program_id"]].pop(0)["rows"]:
            verdicts += 1
            before = ro["offline"].get(row["test_id"])
            if row["status"] != before:
                flips += 1
                cpu, limit_ms = ro["offline_cpu_ms"].get(row["test_id"]), 1000 * (ro.get("cpu_s") or CPU_S)
                # decided by CPU-time jitter: the test needs about the limit (within 15 %) on one of the runs
                timing += "timeout" in (before, row["status"]) and any(
                    c is not None and c >= 0.85 * limit_ms for c in (cpu, row["cpu_ms"]))
                examples.append((ro["program_id"], row["test_id"], before, row["status"], cpu, row["cpu_ms"]))
    return flips, verdicts, examples[:10], timing


def q(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0.0


def verl_in_outs(r: dict) -> dict:
    kinds = {t["kind"] for t in r["tests"]}
    if kinds == {"stdio"}:
        return {"inputs": [t["input"] for t in r["tests"]], "outputs": [t["expected"] for t in r["tests"]]}
    pre = (r["test_preamble"] + "\n") if r["test_preamble"] else ""
    cases = [pre + t["code"] + (f"\ncheck({r['entry_point']})" if t["kind"] == "check" else "") for t in r["tests"]]
    return {"inputs": [""] * len(cases), "outputs": [None] * len(cases), "assert_case": cases}


def server_stats(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url + "/v1/stats", timeout=30) as r:
        return json.loads(r.read())


def _delta(before: dict, after: dict) -> dict:
    """The server's counters and responses that changed between two /v1/stats reads."""
    return {part: {k: after[part].get(k, 0) - before[part].get(k, 0) for k in before[part].keys() | after[part].keys()
                   if after[part].get(k, 0) != before[part].get(k, 0)} for part in ("counters", "responses")}


def served(rollouts: list[dict], res: dict) -> dict:
    """One served run's row: wall s, verdicts/s, request p50/p99, flips against the offline verdicts."""
    flips, verdicts, examples, timing = flips_native(rollouts, res["results"])
    return {"rollouts": len(rollouts), "seconds": round(res["seconds"], 2), "verdicts": verdicts,
            "verdicts_per_s": round(verdicts / res["seconds"], 1),
            "p50_s": round(q(res["latencies"], 0.5), 3), "p99_s": round(q(res["latencies"], 0.99), 3),
            "flips": flips, "flips_near_time_limit": timing, "flip_examples": examples}


def run_verl(url: str, rollouts: list[dict], max_concurrent: int) -> dict:
    """verl's own client, unchanged; its module-level `call_sandbox_api` wrapped only to time each call."""
    import logging

    import verl.utils.reward_score.sandbox_fusion.utils as vsf

    logging.getLogger("verl").setLevel(logging.CRITICAL)
    logging.getLogger(vsf.__name__).setLevel(logging.CRITICAL)
    sem = threading.Semaphore(max_concurrent)
    flips = verdicts = api_errors = lost = 0
    examples, lost_examples, call_s = [], [], []
    original = vsf.call_sandbox_api

    def timed_call(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            call_s.append(time.perf_counter() - t0)

    def one(r):
        res, meta = vsf.check_correctness(url + "/run_code", verl_in_outs(r), r["code"], timeout=int(CPU_S),
                                          memory_limit_mb=1024, concurrent_semaphore=sem)
        return r, res, meta
    before = server_stats(url)
    vsf.call_sandbox_api = timed_call
    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_concurrent) as ex:
            for r, res, meta in ex.map(one, rollouts):
                for t, got, m in zip(r["tests"], res, meta):
                    verdicts += 1
                    offline = r["offline"].get(t["test_id"])
                    api_errors += got == -1
                    if got == -1 and offline == "pass":
                        lost += 1
                        lost_examples.append((r["program_id"], t["test_id"], str(m.get("api_request_error"))[:160]))
                    if (got is True) != (offline == "pass"):
                        flips += 1
                        examples.append((r["program_id"], t["test_id"], t["kind"], offline, got,
                                         r["offline_cpu_ms"].get(t["test_id"])))
    finally:
        vsf.call_sandbox_api = original
    seconds = time.perf_counter() - t0
    after = server_stats(url)
    return {"seconds": seconds, "verdicts": verdicts, "flips": flips, "api_errors": api_errors, "lost": lost,
            "lost_examples": lost_examples[:10], "examples": examples, "p50_s": q(call_s, 0.5),
            "p99_s": q(call_s, 0.99), "server": _delta(before, after)}


def run_offline(rollouts: list[dict], workers: int) -> dict:
    """The same programs and tests through one SandboxPool, as `factory execute` runs them (the baseline)."""
    from factory.sandbox import Job, Limits, SandboxPool, TestSpec

    limits = Limits(cpu_s=CPU_S, wall_factor=10.0, wall_min_s=5.0, capture_bytes=1 << 16)
    jobs = []
    for i, r in enumerate(rollouts):
        tests = [TestSpec(t["test_id"], t["kind"], code=t["code"], input=t["input"], expected=t["expected"],
                          comparison=t["comparison"] or "exact", atol=t["atol"]) for t in r["tests"]]
        jobs.append(Job(f"{i}", r["code"], tests, entry_point=r["entry_point"], preamble=r["test_preamble"] or "",
                        cpu_s=r.get("cpu_s")))
    with SandboxPool(limits, workers=workers) as pool:
        seconds, verdicts = timed(lambda: sum(1 for _ in pool.run(jobs)))
    return {"seconds": round(seconds, 2), "verdicts": verdicts, "verdicts_per_s": round(verdicts / seconds, 1)}


def main() -> None:
    ap = parser(__doc__, "serve_bench.json", {"--workers": os.cpu_count() or 1, "--time-limit": 3600.0})
    ap.add_argument("--rollouts", type=int, nargs="+", default=[512, 2048])
    ap.add_argument("--oversub", type=int, nargs="*", default=[1, 4])
    ap.add_argument("--verl-concurrency", type=int, nargs="*", default=[64, 256])
    ap.add_argument("--native-concurrency", type=int, nargs="*", default=[],
                    help="also: one /v1/judge request per rollout, this many in flight")
    ap.add_argument("--no-offline", action="store_true", help="skip the offline SandboxPool baseline")
    ap.add_argument("--batch", type=int, default=16, help="rollouts per /v1/judge request")
    ap.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    ap.add_argument("--lake", help="reuse a lake built by an earlier run (skips ingest/mutate/execute)")
    ap.add_argument("--time-limits", choices=["calibrated", "fixed"], default="calibrated",
                    help="calibrated: per-problem limits from `factory calibrate`, sent per item as cpu_s")
    a = ap.parse_args()
    deadline = time.time() + a.time_limit
    in_time = lambda _: time.time() <= deadline   # each served run starts only before the deadline
    tmp = tempfile.mkdtemp(prefix="serve-bench-")
    lake = Path(a.lake) if a.lake else Path(tmp) / "lake"
    t0 = time.time()
    if not a.lake:
        build_lake(lake, a.time_limits)
    programs = load_programs(lake)
    pool = sorted(programs, key=lambda r: r["program_id"])   # rollouts: the programs in one seeded order, cycled
    random.Random(0).shuffle(pool)
    offline_mix = dict(Counter(min((s for s in p["offline"].values() if s != "pass"), default="pass")
                               for p in programs))
    out = {"lake_seconds": round(time.time() - t0, 1), "programs": len(programs), "offline_mix": offline_mix,
           "workers": a.workers, "cpu_count": os.cpu_count(), "batch": a.batch, "concurrency": a.concurrency,
           "time_limits": a.time_limits, "native": [], "verl": [], "native_per_rollout": [], "offline": []}
    print(f"lake: {len(programs)} programs with offline verdicts ({offline_mix})", flush=True)
    server = Server("--workers", str(a.workers), "--cpu-s", str(CPU_S), "--wall-factor", "10", "--max-queue", "8192")
    assert server.url.startswith("http://127.0.0.1:")

    def record(part: str, row: dict) -> None:   # into the JSON, and printed as it comes
        out[part].append(row)
        print(json.dumps(row), flush=True)
    try:
        for n in a.rollouts:
            rollouts = [pool[i % len(pool)] for i in range(n)]
            base = None
            if not a.no_offline:
                base = run_offline(rollouts, a.workers)
                record("offline", {"rollouts": n, **base})

            def ratio(verdicts, seconds):   # against the mean of the offline runs before and after the served ones
                if not base:
                    return None
                runs = [o["verdicts_per_s"] for o in out["offline"] if o["rollouts"] == n]
                return round(verdicts / seconds / (sum(runs) / len(runs)), 2)
            for c in takewhile(in_time, a.native_concurrency):
                before = server_stats(server.url)
                res = asyncio.run(judge_async(server.url, rollouts, 1, c))
                row = {"concurrency": c, **served(rollouts, res), "server": _delta(before, server_stats(server.url))}
                row["vs_offline"] = ratio(row["verdicts"], res["seconds"])
                record("native_per_rollout", row)
            for k in takewhile(in_time, a.oversub):
                with oversubscribed(k):
                    res = asyncio.run(judge_async(server.url, rollouts, a.batch, a.concurrency))
                row = {"oversub": k, **served(rollouts, res), "rollouts_per_s": round(n / res["seconds"], 1)}
                record("native", row)
            for c in takewhile(in_time, a.verl_concurrency):
                v = run_verl(server.url, rollouts, c)
                row = {"rollouts": n, "max_concurrent": c, "seconds": round(v["seconds"], 2),
                       "verdicts": v["verdicts"], "verdicts_per_s": round(v["verdicts"] / v["seconds"], 1),
                       "vs_offline": ratio(v["verdicts"], v["seconds"]),
                       "p50_s": round(v["p50_s"], 3), "p99_s": round(v["p99_s"], 3),
                       "flips": v["flips"], "api_errors": v["api_errors"], "lost_correct": v["lost"],
                       "lost_examples": v["lost_examples"], "server": v["server"],
                       "flip_kinds": dict(Counter(e[2] for e in v["examples"])), "flip_examples": v["examples"][:12]}
                record("verl", row)
            if base and time.time() < deadline:   # the offline baseline again: this host's load drifts
                record("offline", {"rollouts": n, **run_offline(rollouts, a.workers)})
                mean = sum(o["verdicts_per_s"] for o in out["offline"] if o["rollouts"] == n) / 2
                for r in out["native_per_rollout"] + out["verl"]:   # the ratios against the mean of both runs
                    if r["rollouts"] == n:
                        r["vs_offline"] = round(r["verdicts_per_s"] / mean, 2)
    finally:
        server.stop()
    rows = [{"path": "offline SandboxPool", **r, "vs_offline": 1.0} for r in out["offline"]]
    rows += [{"path": "/v1/judge, 1 per request", **r, "in flight": r["concurrency"],
              "504s": r["server"]["responses"].get("judge 504", 0)} for r in out["native_per_rollout"]]
    rows += [{"path": "verl sandbox_fusion", **r, "in flight": r["max_concurrent"], "lost": r["lost_correct"],
              "504s": r["server"]["responses"].get("run_code 504", 0)} for r in out["verl"]]
    print("\n" + table(rows, ["path", "rollouts", "in flight", "verdicts", "verdicts_per_s", "vs_offline", "p50_s",
                              "p99_s", "flips", "lost", "504s"]))
    print("\n" + table([{"path": "native /v1/judge", **r, "load": f"{r['oversub']}x"} for r in out["native"]],
                       ["path", "rollouts", "load", "verdicts", "verdicts_per_s", "p50_s", "p99_s", "flips"]))
    write(a.out, out)
    print(f"\nlake kept at {lake}" if not a.lake else "")


if __name__ == "__main__":
    main()
