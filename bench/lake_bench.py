"""Catalog commit latency and per-row storage of verdicts: SQLite vs PostgreSQL catalog (a real server started
here as in tests/scaleout), local data path. Each commit is one stage run writing --rows execution rows
(the shape `factory execute` writes per batch). Prints a table and writes JSON; feeds docs/scale.md.

    python bench/lake_bench.py [--commits 20] [--rows 2000]
"""
from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from harness import parser, table, write  # noqa: I001  (first: the repository on sys.path)

from factory.lake import write_lake_config  # noqa: E402
from factory.sandbox import Verdict  # noqa: E402
from factory.sandbox.rows import verdict_row  # noqa: E402
from factory.lake.commit import run_stage, stage_run, utcnow  # noqa: E402


def rows(commit: int, n: int) -> list[dict]:
    now = utcnow()
    meta = json.dumps({"sandbox_version": "0.3.1", "cgroup": "v1", "seccomp": True, "netns": True})
    verdicts = (Verdict(f"p{commit:04d}{i // 10:05d}", f"t{i % 10}", "pass" if i % 3 else "fail", cpu_ms=3.2 + i % 7,
                        wall_ms=4.1 + i % 5, peak_memory_kb=7000 + i % 50, sandbox_meta=meta, limits='{"cpu_s": 4.0}')
                for i in range(n))
    return [verdict_row(v.program_id, v.test_id, v, False, "abc123def456", now) for v in verdicts]


def measure(lake: Path, commits: int, n: int) -> dict:
    with stage_run("init", {}, lake=lake, create=True) as run:
        run.materialize()
    lat = []
    for c in range(commits):
        batch = rows(c, n)
        t0 = time.perf_counter()
        with stage_run("execute", {"bench": c}, lake=lake) as run:
            run.write("silver.executions", batch)
        lat.append(time.perf_counter() - t0)
    return {"commits": commits, "rows_per_commit": n, "median_s": round(statistics.median(lat), 3),
            "p90_s": round(sorted(lat)[int(0.9 * len(lat))], 3)}


def _writer(lake: str, me: str, commits: int, n: int, replace: bool, queue) -> None:
    """One of two concurrent writers: `replace` = delete this writer's rows of gold.recipe_rules then insert
    (what two recipe runs do), else append verdict rows (what two `execute --shard` drivers do)."""
    retries = 0
    for c in range(commits):
        def body(run, c=c):
            if replace:
                run.delete("gold.recipe_rules", "recipe = ?", [me])
                run.write("gold.recipe_rules", [
                    {"recipe": me, "position": i, "rule": f"r{i}", "kind": "clean", "stage": None, "params": "{}",
                     "source": None, "candidates": c, "removed": 0, "remaining": c, "recipe_hash": "h"}
                    for i in range(1, 6)])
            else:
                run.write("silver.executions", [dict(r, program_id=f"{me}-{r['program_id']}") for r in rows(c, n)])
            return run.commit_retries
        retries += run_stage("contention", {"writer": me, "commit": c}, body, lake=lake, attempts=20,
                             backoff_s=0.02)
    queue.put((me, retries))


def contention(lake: Path, commits: int, n: int, replace: bool) -> dict:
    """Two processes committing into one PostgreSQL-catalog lake at once: commits, conflicts retried, wall time."""
    import multiprocessing as mp

    queue = mp.Queue()
    procs = [mp.Process(target=_writer, args=(str(lake), me, commits, n, replace, queue)) for me in ("w0", "w1")]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    got = dict(queue.get() for _ in procs)
    return {"writers": 2, "commits_per_writer": commits, "mode": "replace" if replace else "append",
            "conflicts_retried": sum(got.values()), "failed_writers": sum(p.exitcode != 0 for p in procs),
            "seconds": round(time.perf_counter() - t0, 2)}


def main() -> None:
    ap = parser(__doc__, "lake_bench.json", {"--commits": 20, "--rows": 2000})
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lake-bench-"))
    out = {"sqlite": measure(tmp / "sqlite", a.commits, a.rows)}
    data = tmp / "sqlite" / "data" / "silver" / "executions"
    size = sum(f.stat().st_size for f in data.rglob("*.parquet"))
    out["bytes_per_execution_row"] = round(size / (a.commits * a.rows), 1)
    try:
        from tests.scaleout.conftest import conninfo, postgres_server
        with postgres_server(tmp / "pg") as pg:
            pg["createdb"]("bench")
            write_lake_config(tmp / "pglake", conninfo(pg, "bench"), str(tmp / "pgdata"))
            out["postgres"] = measure(tmp / "pglake", a.commits, a.rows)
            out["two_writers"] = [contention(tmp / "pglake", a.commits, 200, replace) for replace in (False, True)]
    except FileNotFoundError as exc:
        out["postgres"] = {"skipped": str(exc)}
    print(table([{"catalog": k, **out[k]} for k in ("sqlite", "postgres") if "median_s" in out[k]]))
    for r in out.get("two_writers", []):
        print(f"two writers, {r['mode']:<8}: {2 * r['commits_per_writer']} commits, {r['conflicts_retried']} "
              f"conflicts retried, {r['failed_writers']} writers failed, {r['seconds']} s")
    print(f"execution row in Parquet (synthetic verdicts, empty stdout): {out['bytes_per_execution_row']} bytes")
    write(a.out, out)


if __name__ == "__main__":
    os.environ.setdefault("FACTORY_NO_PROGRESS", "1")
    main()
