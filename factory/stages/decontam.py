"""`factory decontam`: word n-gram overlap of every non-benchmark problem against benchmark sources."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from factory.dedup import DecontamParams, decontaminate
from factory.errors import FactoryError
from factory.lake.commit import stage_run
from factory.lake.templating import DEFAULT_BENCHMARKS


def run_decontam(lake=None, benchmarks: list[str] | None = None, n: int = 9, min_matches: int = 1,
                 max_benchmark_df: int | None = None) -> dict:
    """Flag problems sharing >= min_matches word n-grams with a benchmark problem; replaces silver.contamination."""
    benchmarks = list(benchmarks or DEFAULT_BENCHMARKS)
    params = DecontamParams(n=n, min_matches=1, max_benchmark_df=max_benchmark_df)
    config = {"benchmarks": benchmarks, "n": n, "min_matches": min_matches, "max_benchmark_df": max_benchmark_df}
    with stage_run("decontam", config, lake=lake) as run:
        con = run.con
        present = {r[0] for r in con.execute("SELECT DISTINCT source FROM silver.problems").fetchall()}
        used = [b for b in benchmarks if b in present]
        if not used:
            raise FactoryError(f"none of the benchmark sources {benchmarks} is in the lake (have: {sorted(present)})")
        marks = ", ".join("?" for _ in used)
        problems = con.execute(f"SELECT problem_id, question AS text FROM silver.problems WHERE source NOT IN ({marks})",
                               used).to_arrow_table()
        bench = con.execute(f"SELECT source AS benchmark, problem_id AS benchmark_id, question AS text "
                            f"FROM silver.problems WHERE source IN ({marks})", used).to_arrow_table()
        table, stats = decontaminate(problems, bench, params)
        run.delete("silver.contamination", "true")
        matched = table["matched_ngrams"].cast(pa.int64())
        rows = pa.table({
            "problem_id": table["problem_id"].cast(pa.string()), "benchmark": table["benchmark"].cast(pa.string()),
            "benchmark_id": table["benchmark_id"].cast(pa.string()), "matched_ngrams": matched,
            "benchmark_ngrams": table["benchmark_ngrams"].cast(pa.int64()),
            "example_span": table["example_span"].cast(pa.string()),
            "ngram_n": pa.array(np.full(table.num_rows, n, dtype=np.int32)),
            "contaminated": pc.greater_equal(matched, min_matches)})
        run.write("silver.contamination", rows)
        flagged = con.execute("SELECT p.source, count(DISTINCT c.problem_id) FROM silver.contamination c JOIN "
                              "silver.problems p USING (problem_id) WHERE c.contaminated GROUP BY 1 ORDER BY 1").fetchall()
        report = {"benchmarks": used, "checked": problems.num_rows, "benchmark_items": bench.num_rows,
                  "pairs": rows.num_rows, "contaminated_by_source": dict(flagged)}
        run.summary = json.dumps(report)
    report["run_id"] = run.run_id
    return report



def register(sub, add_lake) -> None:
    """Add `decontam` to the `factory` parser."""
    p = sub.add_parser("decontam", help="word n-gram overlap against benchmark sources")
    add_lake(p)
    p.add_argument("--benchmark", action="append", help="benchmark source (repeatable; default: HumanEval(+), "
                   "MBPP sanitized/+, LeetCode v0.3.1-test, CodeContests)")
    p.add_argument("-n", type=int, default=9, help="words per n-gram")
    p.add_argument("--min-matches", type=int, default=1, help="contaminated when >= this many n-grams match")
    p.add_argument("--max-benchmark-df", type=int, help="ignore n-grams shared by more benchmark items than this")
    p.set_defaults(fn=cmd_decontam)


def cmd_decontam(args) -> None:
    report = run_decontam(args.lake, args.benchmark, args.n, args.min_matches, args.max_benchmark_df)
    print(f"checked {report['checked']} problems against {report['benchmark_items']} benchmark items "
          f"({', '.join(report['benchmarks'])}); contaminated by source: {report['contaminated_by_source']}")
