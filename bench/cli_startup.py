"""`factory` start-up (#33): `factory --help` and `factory sql "SELECT 1"` against a plain DuckDB process that opens
the same lake (the same two extensions loaded, the same ATTACH, the same query), for this checkout and, with
``--baseline REV``, for an older revision checked out into a temporary git worktree (same interpreter and
packages). Each command runs ``--runs`` times in a fresh process; the table shows the median wall time and the
median CPU time (user + sys of the child, steadier than wall time on a shared machine). Writes
bench/results/cli_startup.json.

    python bench/cli_startup.py [--runs 15] [--baseline 2d8824d]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "cli_startup.json"


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """(wall s, child CPU s) of one run; the command must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(cmd: list[str], cwd: Path, env: dict, runs: int) -> dict:
    timed(cmd, cwd, env)   # warm the page cache and the .pyc files
    walls, cpus = zip(*(timed(cmd, cwd, env) for _ in range(runs)))
    return {"wall_s": round(statistics.median(walls), 4), "cpu_s": round(statistics.median(cpus), 4),
            "wall_min_s": round(min(walls), 4)}


def plain_duckdb_script(lake: Path, tree: Path) -> str:
    """What a user of the plain duckdb Python package runs to query the lake (the ATTACH `factory shell
    --print-init` prints: the same extension files, read-only attach, USE) - printed by this checkout."""
    init = subprocess.run([sys.executable, "-m", "factory.cli", "shell", "--print-init", "--lake", str(lake)],
                          cwd=tree, capture_output=True, text=True, check=True).stdout
    statements = [s.strip() for s in init.split(";\n") if s.strip()]
    return ("import duckdb\ncon = duckdb.connect()\n" + "".join(f"con.execute({s.rstrip(';')!r})\n" for s in statements)
            + "con.sql('SELECT 1').show()\n")


def commands(tree: Path, lake: Path, plain: str) -> dict[str, list[str]]:
    py = sys.executable
    return {"factory --help": [py, "-m", "factory.cli", "--help"],
            "factory sql \"SELECT 1\"": [py, "-m", "factory.cli", "sql", "SELECT 1", "--lake", str(lake)],
            "python -c 'import duckdb ...' (same lake, same query)": [py, "-c", plain],
            "python -c pass": [py, "-c", "pass"]}


def run_tree(label: str, tree: Path, lake: Path, plain: str, runs: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}   # the tree's factory, not the editable install's
    # a user's default: bytecode cached in __pycache__ (with PYTHONDONTWRITEBYTECODE set, as on some CI images,
    # every run recompiles the modules it imports: ~0.18 s of `factory --help` here)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    where = subprocess.run([sys.executable, "-c", "import factory; print(factory.__file__)"], cwd=tree, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not where.startswith(str(tree)):
        raise SystemExit(f"{label}: factory imported from {where}, not from {tree}")
    return {name: measure(cmd, tree, env, runs) for name, cmd in commands(tree, lake, plain).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--baseline", help="git revision to compare with (checked out into a temporary worktree)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cli_startup_"))
    try:
        lake = tmp / "lake"
        subprocess.run([sys.executable, "-m", "factory.cli", "init", "--lake", str(lake)], cwd=ROOT, check=True,
                       capture_output=True)
        plain = plain_duckdb_script(lake, ROOT)
        trees = {}
        if args.baseline:
            base = tmp / "baseline"
            subprocess.run(["git", "worktree", "add", "--detach", str(base), args.baseline], cwd=ROOT, check=True,
                           capture_output=True)
            trees[f"before ({args.baseline})"] = base
        trees["after (this checkout)"] = ROOT
        results = {label: run_tree(label, tree, lake, plain, args.runs) for label, tree in trees.items()}
    finally:
        if args.baseline:
            subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "baseline")], cwd=ROOT,
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    names = list(next(iter(results.values())))
    print(f"median of {args.runs} runs; wall s / CPU s (user+sys); {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    header = "| command | " + " | ".join(results) + " |"
    print(header)
    print("|---" * (len(results) + 1) + "|")
    for name in names:
        print(f"| {name} | " + " | ".join(f"{r[name]['wall_s']:.3f} / {r[name]['cpu_s']:.3f}"
                                           for r in results.values()) + " |")
    for label, r in results.items():
        plain_r = r["python -c 'import duckdb ...' (same lake, same query)"]
        sql_r = r["factory sql \"SELECT 1\""]
        print(f"{label}: factory sql / plain duckdb = {sql_r['wall_s'] / plain_r['wall_s']:.2f}x wall, "
              f"{sql_r['cpu_s'] / plain_r['cpu_s']:.2f}x CPU")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": args.runs, "cpu_count": os.cpu_count(), "python": platform.python_version(),
                                   "load_average_1m": round(os.getloadavg()[0], 2), "results": results}, indent=2)
                       + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
