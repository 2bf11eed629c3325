"""`factory decontam`: every non-benchmark problem against the benchmark sources, three ways (``method``):

- ``ngram``: word n-gram overlap of the questions (default 9-grams);
- ``test``: a shared test (normalised assert / call / stdin-stdout pair, :mod:`factory.dedup.suite_overlap`);
- ``lineage``: the same task id across derived datasets (MBPP / sanitized MBPP / MBPP+, HumanEval / HumanEval+,
  LeetCode slugs across LeetCodeDataset versions).

Test and lineage checks also treat every ``test``-split problem as a benchmark item: a train problem that shares a
test or a task with any test split is contaminated.
"""
from __future__ import annotations

import json

from factory.dedup.suite_overlap import TestOverlapParams, lineage_overlap, problem_keys, shared_test_overlap
from factory.errors import FactoryError
from factory.lake.templating import DEFAULT_BENCHMARKS

METHODS = ("ngram", "test", "lineage")


def run_decontam(lake=None, benchmarks: list[str] | None = None, n: int = 9, min_matches: int = 1,
                 max_benchmark_df: int | None = None, methods: tuple[str, ...] = METHODS,
                 test_params: TestOverlapParams = TestOverlapParams(), template_df: float | None = 0.002,
                 template_min_df: int = 2) -> dict:
    """Flag problems sharing >= min_matches word n-grams, a test or a lineage id with a benchmark problem;
    replaces silver.contamination."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from factory.dedup import DecontamParams, decontaminate
    from factory.lake.commit import stage_run

    benchmarks = list(benchmarks or DEFAULT_BENCHMARKS)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise FactoryError(f"unknown decontamination method(s) {unknown}; known: {', '.join(METHODS)}")
    params = DecontamParams(n=n, min_matches=1, max_benchmark_df=max_benchmark_df, template_df=template_df,
                            template_min_df=template_min_df)
    config = {"benchmarks": benchmarks, "n": n, "min_matches": min_matches, "max_benchmark_df": max_benchmark_df,
              "template_df": template_df, "template_min_df": template_min_df,
              "methods": list(methods), "test_params": test_params.as_dict()}
    with stage_run("decontam", config, lake=lake) as run:
        con = run.con
        present = {r[0] for r in con.execute("SELECT DISTINCT source FROM silver.problems").fetchall()}
        used = [b for b in benchmarks if b in present]
        if not used:
            raise FactoryError(f"none of the benchmark sources {benchmarks} is in the lake (have: {sorted(present)})")
        marks = ", ".join("?" for _ in used)
        problems = con.execute(f"SELECT problem_id, question AS text, source FROM silver.problems WHERE source NOT IN ({marks})",
                               used).to_arrow_table()
        bench = con.execute(f"SELECT source AS benchmark, problem_id AS benchmark_id, question AS text "
                            f"FROM silver.problems WHERE source IN ({marks})", used).to_arrow_table()
        run.delete("silver.contamination", "true")
        pairs = 0
        if "ngram" in methods:
            table, stats = decontaminate(problems, bench, params)
            matched = table["matched_ngrams"].cast(pa.int64())
            rows = pa.table({
                "problem_id": table["problem_id"].cast(pa.string()), "benchmark": table["benchmark"].cast(pa.string()),
                "benchmark_id": table["benchmark_id"].cast(pa.string()), "matched_ngrams": matched,
                "benchmark_ngrams": table["benchmark_ngrams"].cast(pa.int64()),
                "example_span": table["example_span"].cast(pa.string()),
                "ngram_n": pa.array(np.full(table.num_rows, n, dtype=np.int32)),
                "contaminated": pc.greater_equal(matched, min_matches),
                "method": pa.array(["ngram"] * table.num_rows, pa.string())})
            run.write("silver.contamination", rows)
            pairs += rows.num_rows
        extra = _test_and_lineage(con, used, methods, test_params)
        if extra:
            run.write("silver.contamination", pa.Table.from_pylist(extra, schema=pa.schema([
                ("problem_id", pa.string()), ("benchmark", pa.string()), ("benchmark_id", pa.string()),
                ("matched_ngrams", pa.int64()), ("benchmark_ngrams", pa.int64()), ("example_span", pa.string()),
                ("ngram_n", pa.int32()), ("contaminated", pa.bool_()), ("method", pa.string())])))
            pairs += len(extra)
        flagged = con.execute("SELECT p.source, count(DISTINCT c.problem_id) FROM silver.contamination c JOIN "
                              "silver.problems p USING (problem_id) WHERE c.contaminated GROUP BY 1 ORDER BY 1").fetchall()
        by_method = con.execute("SELECT method, count(DISTINCT problem_id) FROM silver.contamination "
                                "WHERE contaminated GROUP BY 1 ORDER BY 1").fetchall()
        report = {"benchmarks": used, "checked": problems.num_rows, "benchmark_items": bench.num_rows,
                  "pairs": pairs, "contaminated_by_source": dict(flagged), "contaminated_by_method": dict(by_method)}
        run.summary = json.dumps(report)
    report["run_id"] = run.run_id
    return report



def _test_and_lineage(con, used: list[str], methods, test_params: TestOverlapParams) -> list[dict]:
    """silver.contamination rows of the test and lineage checks: problems that could reach a train split
    (not a benchmark source, not a test split) against benchmark problems and every test-split problem."""
    if "test" not in methods and "lineage" not in methods:
        return []
    marks = ", ".join("?" for _ in used)
    target = f"(p.source IN ({marks}) OR p.split = 'test')"
    meta = con.execute(f"""
        SELECT p.problem_id, p.source, {target} AS is_target, json_extract_string(p.metadata, '$.lineage'),
               json_extract_string(p.metadata, '$.assertion')
        FROM silver.problems p""", used).fetchall()
    targets = {pid: (src, lineage, assertion) for pid, src, t, lineage, assertion in meta if t}
    checked = {pid: lineage for pid, src, t, lineage, _ in meta if not t}
    rows: list[dict] = []
    if "lineage" in methods:
        for r in lineage_overlap({p: l for p, l in checked.items() if l},
                                 {(src, pid): l for pid, (src, l, _) in targets.items() if l}):
            rows.append(_row(r, "lineage"))
    if "test" in methods:
        tests: dict[str, list] = {}
        # EvalPlus' generated `plus` inputs are never another dataset's tests: their base inputs are enough
        for pid, kind, code, inp, expected in con.execute(
                "SELECT problem_id, kind, code, input, expected FROM silver.tests "
                "WHERE coalesce(subset, '') <> 'plus' ORDER BY problem_id, ordinal").fetchall():
            tests.setdefault(pid, []).append((kind, code, inp, expected))
        bench_keys = {}
        for pid, (src, _, assertion) in targets.items():
            extra = [("assert", assertion, None, None)] if assertion else []   # MBPP+ keeps MBPP's asserts
            keys = problem_keys(tests.get(pid, []) + extra, with_inputs=False)
            if keys:
                bench_keys[(src, pid)] = keys
        problem_k = {pid: problem_keys(tests.get(pid, [])) for pid in checked}
        for r in shared_test_overlap({p: k for p, k in problem_k.items() if k}, bench_keys, test_params):
            rows.append(_row(r, "test"))
    return rows


def _row(r: dict, method: str) -> dict:
    return {"problem_id": r["problem_id"], "benchmark": r["benchmark"], "benchmark_id": r["benchmark_id"],
            "matched_ngrams": int(r["matched"]), "benchmark_ngrams": None, "example_span": r["example"],
            "ngram_n": 0, "contaminated": True, "method": method}


def register(sub, add_lake) -> None:
    """Add `decontam` to the `factory` parser."""
    p = sub.add_parser("decontam", help="word n-gram overlap against benchmark sources")
    add_lake(p)
    p.add_argument("--benchmark", action="append", help="benchmark source (repeatable; default: HumanEval(+), "
                   "MBPP sanitized/+, LeetCode v0.3.1-test, CodeContests)")
    p.add_argument("-n", type=int, default=9, help="words per n-gram")
    p.add_argument("--min-matches", type=int, default=1, help="contaminated when >= this many n-grams match")
    p.add_argument("--max-benchmark-df", type=int, help="ignore n-grams shared by more benchmark items than this")
    p.add_argument("--method", action="append", choices=METHODS,
                   help="check (repeatable; default: all of ngram, test, lineage)")
    p.add_argument("--template-df", type=float, default=0.002,
                   help="ignore a source's template n-grams: those in more than this fraction of its problems "
                        "(and more than --template-min-df); a negative value matches every n-gram")
    p.add_argument("--template-min-df", type=int, default=2)
    p.set_defaults(fn=cmd_decontam)


def cmd_decontam(args) -> None:
    report = run_decontam(args.lake, args.benchmark, args.n, args.min_matches, args.max_benchmark_df,
                          tuple(args.method or METHODS),
                          template_df=None if args.template_df < 0 else args.template_df,
                          template_min_df=args.template_min_df)
    print(f"checked {report['checked']} problems against {report['benchmark_items']} benchmark items "
          f"({', '.join(report['benchmarks'])}); contaminated by source: {report['contaminated_by_source']}; "
          f"by method: {report['contaminated_by_method']}")
