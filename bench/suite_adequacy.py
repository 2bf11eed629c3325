"""Suite adequacy on real data: mutation score per source before/after `factory augment`, and suite size
before/after `factory suite-reduce` (greedy set cover) with the kill set unchanged.

Sources (each ingested into a throwaway lake; the data files are only read):

* ``humaneval``  - HumanEval+ records with their plus inputs dropped: the original HumanEval tests as call tests
* ``mbpp``       - MBPP+ records, base inputs only (MBPP's original tests)
* ``humanevalplus-mini`` - EvalPlus's own set-cover-reduced HumanEval+ suite (HumanEvalPlus-Mini), for comparison
* ``mbppplus``   - full MBPP+ (base + plus inputs; slow: ~100 tests per problem for every mutant)

Per source: references executed (expected values filled), up to --mutants AST mutants per reference executed
under --cpu-s, `factory curate`, gold.suite_adequacy (before), `factory suite-reduce` (before), `factory
augment`, curate, gold.suite_adequacy (after), suite-reduce (after). Prints a table and writes JSON.

    python bench/suite_adequacy.py [--sources humaneval mbpp] [--data-dir ../shared/data] [--budget 10]
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from harness import DATA, jsonl, parser, table, timed, write  # noqa: I001  (first: the repository on sys.path)

from factory.stages.augment import run_augment, run_suite_reduce  # noqa: E402
from factory.stages.curate import curate  # noqa: E402
from factory.stages.execute import execute  # noqa: E402
from factory.stages.ingest import ingest_source  # noqa: E402
from factory.lake import connect  # noqa: E402
from factory.stages.mutate import run_mutate  # noqa: E402
from factory.sandbox import Limits  # noqa: E402
from factory.lake.commit import stage_run  # noqa: E402

# name -> (adapter, file under the data dir, keep plus inputs)
SOURCES = {
    "humaneval": ("humanevalplus", "humanevalplus/HumanEvalPlus.jsonl.gz", False),
    "mbpp": ("mbppplus", "mbppplus/MbppPlus.jsonl.gz", False),
    "humanevalplus-mini": ("humanevalplus", "humanevalplus/HumanEvalPlus-Mini.jsonl.gz", True),
    "mbppplus": ("mbppplus", "mbppplus/MbppPlus.jsonl.gz", True),
}


def source_file(name: str, data_dir: Path, work: Path, max_problems: int | None) -> Path:
    adapter, rel, plus = SOURCES[name]
    rows = jsonl(data_dir / rel)[:max_problems or None]
    out = work / f"{name}.jsonl"
    out.write_text("".join(json.dumps(r if plus else dict(r, plus_input=[])) + "\n" for r in rows))
    return out


def rows(lake: Path, sql: str, params=None) -> list[dict]:
    with connect(lake, read_only=True) as con:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]


ADEQUACY = "SELECT * FROM gold.suite_adequacy ORDER BY source"
REDUCED = """SELECT source, count(*) AS problems, sum(full_tests) AS full_tests, sum(reduced_tests) AS reduced_tests,
    sum(top_k_tests) AS top_k_tests, sum(full_killed) AS full_killed, sum(reduced_killed) AS reduced_killed,
    sum(top_k_killed) AS top_k_killed, count(*) FILTER (WHERE kill_set_unchanged) AS kill_set_unchanged,
    median(full_tests) AS median_full_tests, median(reduced_tests) AS median_reduced_tests
    FROM gold.reduced_suites GROUP BY source ORDER BY source"""


def main() -> None:
    ap = parser(__doc__, "suite_adequacy.json",
                {"--budget": 10, "--rounds": 4, "--per-round": 20, "--seed": 0, "--k": 15})
    ap.add_argument("--sources", nargs="+", default=["humaneval", "mbpp"], choices=sorted(SOURCES))
    ap.add_argument("--data-dir", type=Path, default=DATA)
    ap.add_argument("--max-problems", type=int, help="first N problems of each source")
    ap.add_argument("--mutants", type=int, default=10, help="mutants per reference (factory mutate)")
    ap.add_argument("--cpu-s", type=float, default=0.5, help="CPU seconds per test for mutants and augmentation")
    ap.add_argument("--workers", type=int)
    ap.add_argument("--lake", type=Path, help="lake folder (default: a temporary one)")
    args = ap.parse_args()
    limits = Limits(cpu_s=args.cpu_s, wall_min_s=max(3.0, 6 * args.cpu_s))
    timings: dict[str, float] = {}

    def step(name, fn, *a, **kw):
        seconds, out = timed(fn, *a, **kw)
        timings[name] = round(seconds, 1)
        print(f"[{timings[name]:7.1f}s] {name}", file=sys.stderr, flush=True)
        return out

    with tempfile.TemporaryDirectory(prefix="suite-adequacy-") as tmp:
        work = Path(tmp)
        lake = args.lake or work / "lake"
        with stage_run("init", {}, lake=lake, create=True) as run:
            run.materialize()
        for name in args.sources:
            adapter = SOURCES[name][0]
            step(f"ingest {name}", ingest_source, adapter, [source_file(name, args.data_dir, work, args.max_problems)],
                 lake=lake, source=name)
        step("execute references", execute, lake, selection="reference", sources=args.sources, workers=args.workers)
        step("mutate", run_mutate, lake, args.sources, max_per_program=args.mutants, seed=args.seed)
        step("execute mutants", execute, lake, selection="mutants", sources=args.sources, limits=limits,
             workers=args.workers)
        step("curate (before)", curate, lake)
        before = rows(lake, ADEQUACY)
        step("suite-reduce (before)", run_suite_reduce, lake, args.sources, args.k)
        reduced_before = rows(lake, REDUCED)
        augment = step("augment", run_augment, lake, args.sources, budget=args.budget, seed=args.seed,
                       rounds=args.rounds, per_round=args.per_round, limits=limits, workers=args.workers)
        step("curate (after)", curate, lake)
        after = rows(lake, ADEQUACY)
        step("suite-reduce (after)", run_suite_reduce, lake, args.sources, args.k)
        reduced_after = rows(lake, REDUCED)

    result = {"sources": args.sources, "settings": {k: v for k, v in vars(args).items() if k not in ("out",)},
              "limits": limits.as_dict(), "timings_s": timings, "adequacy_before": before, "adequacy_after": after,
              "augment": augment, "reduced_before": reduced_before, "reduced_after": reduced_after}
    b, a = ({x["source"]: x for x in res} for res in (before, after))
    print("\n" + table([{"source": s, "problems": x["problems"], "mutants": x["mutants"], "surv. before": x["surviving"],
                         "surv. after": y["surviving"], "score before": f"{x['mutation_score']:.4f}",
                         "score after": f"{y['mutation_score']:.4f}",
                         "mean b/a": f"{x['mean_mutation_score']:.3f}/{y['mean_mutation_score']:.3f}",
                         "tests b/a": f"{x['tests']}/{y['tests']}"}
                        for s in args.sources if (x := b.get(s)) and (y := a.get(s))]))
    print("\n" + table([{"set cover": f"{x['source']} {label}", "tests": x["full_tests"], "reduced": x["reduced_tests"],
                         "top-k": x["top_k_tests"], "killed full": x["full_killed"], "killed red.": x["reduced_killed"],
                         "killed top-k": x["top_k_killed"], "kill set same": f"{x['kill_set_unchanged']}/{x['problems']}"}
                        for label in ("before", "after") for x in result[f"reduced_{label}"]]))
    write(args.out, result)


if __name__ == "__main__":
    main()
