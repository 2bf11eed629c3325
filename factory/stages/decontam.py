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

from factory.dedup.suite_overlap import TestOverlapParams, lineage_overlap, key_tails, output_tail, shared_test_overlap, test_keys
from factory.errors import FactoryError
from factory.lake.templating import DEFAULT_BENCHMARKS

METHODS = ("ngram", "test", "lineage")


def run_decontam(lake=None, benchmarks: list[str] | None = None, n: int = 9, min_matches: int = 1,
                 max_benchmark_df: int | None = None, methods: tuple[str, ...] = METHODS,
                 test_params: TestOverlapParams = TestOverlapParams(), template_df: float | None = 0.002,
                 template_min_df: int = 2, rule: str = "evidence", stock_df: int | None = None,
                 min_coverage: float | None = None) -> dict:
    """Flag problems that share text evidence, an informative test or a lineage id with a benchmark problem;
    replaces silver.contamination. ``rule``: ``evidence`` (default) or ``literal`` (any ``min_matches`` shared
    n-grams: AceReason / Klear) sets ``contaminated`` of the n-gram rows; both verdicts are stored (``literal``
    column), so a recipe's ``decontaminated`` rule can apply the literal one (``literal_min_ngrams``).
    ``removals`` of the report: one entry per removed problem with its reason."""
    import numpy as np
    import pyarrow as pa

    from factory.dedup import DecontamParams, decontaminate
    from factory.dedup.embed import statement_text
    from factory.lake.commit import stage_run

    benchmarks = list(benchmarks or DEFAULT_BENCHMARKS)
    if (unknown := [m for m in methods if m not in METHODS]) or not methods:
        raise FactoryError(f"unknown decontamination method(s) {unknown}; known: {', '.join(METHODS)}")
    defaults = DecontamParams()
    try:
        params = DecontamParams(n=n, rule=rule, min_matches=min_matches, max_benchmark_df=max_benchmark_df,
                                template_df=template_df, template_min_df=template_min_df,
                                stock_df=defaults.stock_df if stock_df is None else stock_df,
                                min_coverage=defaults.min_coverage if min_coverage is None else min_coverage)
    except ValueError as exc:
        raise FactoryError(f"decontam: {exc}") from exc
    config = {"benchmarks": benchmarks, "methods": list(methods), "ngram_params": params.as_dict(),
              "text": "statement (question minus example assert / >>> lines)",
              "test_params": test_params.as_dict()}
    with stage_run("decontam", config, lake=lake) as run:
        con = run.con
        # DuckDB would otherwise keep every Parquet file it reads (the tests: GBs) cached in its buffer pool
        con.execute("SET enable_external_file_cache = false")
        present = {r[0] for r in con.execute("SELECT DISTINCT source FROM silver.problems").fetchall()}
        used = [b for b in benchmarks if b in present]
        if not used:
            raise FactoryError(f"none of the benchmark sources {benchmarks} is in the lake (have: {sorted(present)})")
        marks = ", ".join("?" for _ in used)
        lineage = "json_extract_string(metadata, '$.lineage')"
        problems = con.execute(f"SELECT problem_id, question AS text, source, {lineage} AS family "
                               f"FROM silver.problems WHERE source NOT IN ({marks}) ORDER BY problem_id",
                               used).to_arrow_table()
        bench = con.execute(f"SELECT source AS benchmark, problem_id AS benchmark_id, question AS text, "
                            f"{lineage} AS family FROM silver.problems WHERE source IN ({marks}) "
                            f"ORDER BY problem_id", used).to_arrow_table()
        as_statement = lambda t: t.set_column(t.column_names.index("text"), "text", pa.array(
            [statement_text(q or "") or (q or "") for q in t["text"].to_pylist()], pa.string()))
        run.delete("silver.contamination", "true")
        pairs = 0
        stock_phrase = {}
        if "ngram" in methods:
            table, stats = decontaminate(as_statement(problems), as_statement(bench), params)
            k = table.num_rows
            rows = pa.table({
                "problem_id": table["problem_id"].cast(pa.string()), "benchmark": table["benchmark"].cast(pa.string()),
                "benchmark_id": table["benchmark_id"].cast(pa.string()),
                "matched_ngrams": table["matched_ngrams"].cast(pa.int64()),
                "benchmark_ngrams": table["benchmark_ngrams"].cast(pa.int64()),
                "example_span": table["example_span"].cast(pa.string()),
                "ngram_n": pa.array(np.full(k, n, dtype=np.int32)),
                "contaminated": table["contaminated"], "method": pa.array(["ngram"] * k, pa.string()),
                "informative_ngrams": table["informative_ngrams"], "coverage": table["coverage"],
                "phrases": table["phrases"], "literal": table["literal"], "reason": table["reason"]})
            run.write("silver.contamination", rows)
            pairs += rows.num_rows
            stock_phrase = literal_summary(table)
        if extra := _test_and_lineage(con, used, methods, test_params):
            run.write("silver.contamination", pa.Table.from_pylist(extra, schema=pa.schema([
                ("problem_id", pa.string()), ("benchmark", pa.string()), ("benchmark_id", pa.string()),
                ("matched_ngrams", pa.int64()), ("benchmark_ngrams", pa.int64()), ("example_span", pa.string()),
                ("ngram_n", pa.int32()), ("contaminated", pa.bool_()), ("method", pa.string()),
                ("reason", pa.string())])))
            pairs += len(extra)
        flagged = con.execute("SELECT p.source, count(DISTINCT c.problem_id) FROM silver.contamination c JOIN "
                              "silver.problems p USING (problem_id) WHERE c.contaminated GROUP BY 1 ORDER BY 1").fetchall()
        by_method = con.execute("SELECT method, count(DISTINCT problem_id) FROM silver.contamination "
                                "WHERE contaminated GROUP BY 1 ORDER BY 1").fetchall()
        removals = con.execute("""
            SELECT p.source, p.source_id, b.source, b.source_id, c.method, c.reason
            FROM silver.contamination c JOIN silver.problems p USING (problem_id)
            JOIN silver.problems b ON b.problem_id = c.benchmark_id
            WHERE c.contaminated
            QUALIFY row_number() OVER (PARTITION BY c.problem_id ORDER BY CASE c.method WHEN 'lineage' THEN 0
                                       WHEN 'test' THEN 1 ELSE 2 END, c.matched_ngrams DESC, b.source_id) = 1
            ORDER BY p.source, p.source_id""").fetchall()
        report = {"benchmarks": used, "checked": problems.num_rows, "benchmark_items": bench.num_rows,
                  "pairs": pairs, "rule": params.rule, "contaminated_by_source": dict(flagged),
                  "contaminated_by_method": dict(by_method), "literal_ngram": stock_phrase}
        run.summary = json.dumps(report)
    report["run_id"] = run.run_id
    report["removals"] = [{"source": r[0], "source_id": r[1], "benchmark": r[2], "benchmark_id": r[3],
                           "method": r[4], "reason": r[5]} for r in removals]
    return report


def literal_summary(table) -> dict:
    """What the literal rule (any shared n-gram) removes beyond the evidence rule: ``removed`` problems with any
    shared n-gram, ``evidence`` problems the evidence rule flags, ``single_stock_phrase`` problems whose only
    link to every benchmark item is one shared phrase of stock text or example values (no informative
    n-gram), and ``stock_only`` those with no informative shared n-gram at all."""
    by_problem: dict = {}
    for pid, lit, ev, inf, phrases in zip(table["problem_id"].to_pylist(), table["literal"].to_pylist(),
                                          table["evidence"].to_pylist(), table["informative_ngrams"].to_pylist(),
                                          table["phrases"].to_pylist()):
        s = by_problem.setdefault(pid, {"literal": False, "evidence": False, "informative": False, "single": True})
        s["literal"] |= bool(lit)
        s["evidence"] |= bool(ev)
        s["informative"] |= inf > 0
        s["single"] &= phrases == 1
    lit = [s for s in by_problem.values() if s["literal"]]
    return {"removed": len(lit), "evidence": sum(s["evidence"] for s in lit),
            "stock_only": sum(not s["informative"] for s in lit),
            "single_stock_phrase": sum(not s["informative"] and s["single"] for s in lit)}


def _test_and_lineage(con, used: list[str], methods, test_params: TestOverlapParams,
                      checked_sources: tuple[str, ...] = ()) -> list[dict]:
    """silver.contamination rows of the test and lineage checks: problems that could reach a train split (not a
    benchmark source, not a test split) against benchmark problems and every test-split problem. ``checked_sources`` are
    checked even where their split is test (the audit checks HumanEval against HumanEval+)."""
    if "test" not in methods and "lineage" not in methods:
        return []
    marks = ", ".join("?" for _ in used)
    target = f"(p.source IN ({marks}) OR p.split = 'test')"
    if checked_sources:
        target = f"({target} AND p.source NOT IN ({', '.join('?' for _ in checked_sources)}))"
    meta = con.execute(f"""
        SELECT p.problem_id, p.source, {target} AS is_target, json_extract_string(p.metadata, '$.lineage'),
               json_extract_string(p.metadata, '$.assertion')
        FROM silver.problems p""", used + list(checked_sources)).fetchall()
    targets = {pid: (src, lineage, assertion) for pid, src, t, lineage, assertion in meta if t}
    checked = {pid: lineage for pid, src, t, lineage, _ in meta if not t}
    rows: list[dict] = []
    if "lineage" in methods:
        rows += [_row(r, "lineage") for r in lineage_overlap(
            {p: lin for p, lin in checked.items() if lin},
            {(src, pid): lin for pid, (src, lin, _) in targets.items() if lin})]
    if "test" in methods:
        info: dict = {}   # the digest keys of long tests (MB-sized inputs): keys, never the test text, are kept
        bench_of = {pid: src for pid, (src, _, _) in targets.items()}
        bench_tests = _stream_keys(con, bench_of, info)
        bench_keys = {}
        for pid, (src, _, assertion) in targets.items():
            keys = bench_tests.pop(pid, set())
            if assertion:   # MBPP+ keeps MBPP's asserts
                keys |= test_keys("assert", assertion, None, None, info=info)
            if keys:
                bench_keys[(src, pid)] = keys
        # a checked problem's key matters only when a benchmark item has it: only those are kept
        wanted = set().union(*bench_keys.values()) if bench_keys else set()
        problem_k = _stream_keys(con, checked, info, wanted) if wanted else {}
        families = {pid: lin for pid, lin in checked.items() if lin}
        families.update({pid: lin for pid, (_, lin, _) in targets.items() if lin})
        rows += [_row(r, "test") for r in shared_test_overlap(
            {p: problem_k[p] for p in checked if problem_k.get(p)}, bench_keys, test_params, families, info)]
    return rows


STREAM_ROWS = 256   # tests per Arrow batch read from silver.tests (MB-sized inputs: a batch stays small)
NOT_PLUS = "coalesce(subset, '') <> 'plus'"   # EvalPlus' generated inputs are never another dataset's tests


def _stream_keys(con, problems: dict, info: dict, wanted: set | None = None) -> dict[str, set]:
    """Test keys per problem of ``problems`` (ids), reading silver.tests in Arrow batches (test text held a batch
    at a time, never the whole table). ``wanted``: keep only these keys, and read a stdin/stdout test's input
    only when its keys (``...=>`` + its normalised expected output) can end like one of them: a first pass
    reads ids, kinds and expected outputs only; the second reads the whole rows of the candidates (every test
    of ``problems`` when ``wanted`` is None)."""
    import pyarrow as pa

    from factory.dedup.lsh import _registered
    from factory.ingest.visibility import normalise

    # how the wanted keys end: a stdio test's keys end '=>' + its normalised output
    tails = None if wanted is None else set().union(*(info[k][4] if k in info else key_tails(k) for k in wanted))
    # the narrow pass: no test text is read
    with _registered(con, ids=pa.table({"problem_id": pa.array(list(problems), pa.string())})) as (ids,):
        reader = con.execute(f"SELECT t.test_id, t.kind, t.expected FROM silver.tests t SEMI JOIN {ids} "
                             f"USING (problem_id) WHERE {NOT_PLUS}").to_arrow_reader(STREAM_ROWS * 16)
        candidates = [tid for batch in reader for tid, kind, expected in zip(*(c.to_pylist() for c in batch.columns))
                      if tails is None or kind != "stdio" or (
                          expected is not None and output_tail(normalise(expected)) in tails)]
    keys: dict[str, set] = {}
    if not candidates:
        return keys
    # the candidates' whole rows, by a semi-join
    with _registered(con, ids=pa.table({"test_id": pa.array(candidates, pa.string())})) as (ids,):
        reader = con.execute("SELECT t.problem_id, t.kind, t.code, t.input, t.expected FROM silver.tests t "
                             f"SEMI JOIN {ids} USING (test_id)").to_arrow_reader(STREAM_ROWS)
        for batch in reader:
            for pid, kind, code, inp, expected in zip(*(batch.column(i).to_pylist() for i in range(5))):
                got = test_keys(kind, code, inp, expected, info=info)
                if wanted is not None:
                    got &= wanted
                if got:
                    keys.setdefault(pid, set()).update(got)
    return keys


AUDIT_DIR = "audit/decontam"


def audit_decontam(lake=None, audit_dir=None, params=None, test_params: TestOverlapParams = TestOverlapParams(),
                   benchmarks: list[str] | None = None) -> dict:
    """Precision and recall of each method on the audit labels (``audit/decontam``: lineage.csv, text.csv, tests.csv,
    planted.csv) over the problems of ``lake`` (read only). The audit checks every problem of a non-benchmark source and
    HumanEval against the benchmark sources minus HumanEval (so HumanEval <-> HumanEval+ is scored); planted copies are
    made from the benchmark items' questions and checked as problems of a source ``planted``. Methods: ``text`` (the
    evidence rule), ``text_literal`` (any shared n-gram), ``test``, ``lineage``, ``default`` (text + test + lineage:
    what `factory decontam` removes) and ``literal_default`` (text_literal + test + lineage)."""
    from collections import Counter
    from pathlib import Path

    import pyarrow as pa

    from factory.assets import path as shipped
    from factory.dedup import DecontamParams, decontaminate
    from factory.dedup.audit import LABEL_FIELDS, PLANTED_FIELDS, plant, planted_id, read_csv, score
    from factory.dedup.embed import statement_text
    from factory.lake import connect

    root = Path(audit_dir) if audit_dir else shipped(*AUDIT_DIR.split("/"))
    if not (root / "lineage.csv").is_file():
        raise FactoryError(f"no decontamination audit labels at {root} (audit/decontam/build.py writes them)")
    params = params or DecontamParams()
    labels = [row for name in ("lineage.csv", "text.csv", "tests.csv") if (root / name).is_file()
              for row in read_csv(root / name, LABEL_FIELDS)]
    planted = read_csv(root / "planted.csv", PLANTED_FIELDS) if (root / "planted.csv").is_file() else []
    used_all = [b for b in (benchmarks or DEFAULT_BENCHMARKS) if b != "humaneval"]
    with connect(lake, read_only=True) as con:
        rows = con.execute("SELECT problem_id, source, source_id, question, json_extract_string(metadata, "
                           "'$.lineage') FROM silver.problems ORDER BY problem_id").fetchall()
        present = {r[1] for r in rows}
        used = [b for b in used_all if b in present]
        ident = {r[0]: (r[1], r[2]) for r in rows}
        by_key = {(r[1], r[2]): r for r in rows}
        checked = [r for r in rows if r[1] not in used]
        bench = [r for r in rows if r[1] in used]
        copies = []
        for pl in planted:
            item = by_key.get((pl["benchmark"], pl["benchmark_id"]))
            if item is None:
                continue
            pid = planted_id(pl["transform"], pl["benchmark"], pl["benchmark_id"])
            copies.append((pid, "planted", pid, plant(item[3] or "", pl["transform"]), None))
            ident[pid] = ("planted", pid)
            labels.append({"kind": "planted", "label": "true", "source": "planted", "source_id": pid,
                           "benchmark": pl["benchmark"], "benchmark_id": pl["benchmark_id"], "methods": "text",
                           "basis": f"planted copy: {pl['transform']}"})
        stm = lambda q: statement_text(q or "") or (q or "")
        probs = pa.table({"problem_id": [r[0] for r in checked + copies], "source": [r[1] for r in checked + copies],
                          "text": [stm(r[3]) for r in checked + copies], "family": [r[4] for r in checked + copies]})
        btab = pa.table({"benchmark": [r[1] for r in bench], "benchmark_id": [r[0] for r in bench],
                         "text": [stm(r[3]) for r in bench], "family": [r[4] for r in bench]})
        table, _ = decontaminate(probs, btab, params)
        # every problem outside the benchmark sources is checked, test splits included (the stage treats a test
        # split as a target; the audit measures what each method finds)
        extra = _test_and_lineage(con, used, ("test", "lineage"), test_params,
                                  checked_sources=tuple(sorted(present - set(used))))
    pair = lambda p, b: ident[p] + ident[b]
    flagged = {"text": set(), "text_literal": set(), "test": set(), "lineage": set()}
    for p, b, ev, lit in zip(table["problem_id"].to_pylist(), table["benchmark_id"].to_pylist(),
                             table["evidence"].to_pylist(), table["literal"].to_pylist()):
        if ev:
            flagged["text"].add(pair(p, b))
        if lit:
            flagged["text_literal"].add(pair(p, b))
    for r in extra:
        flagged[r["method"]].add(pair(r["problem_id"], r["benchmark_id"]))
    flagged["default"] = flagged["text"] | flagged["test"] | flagged["lineage"]
    flagged["literal_default"] = flagged["text_literal"] | flagged["test"] | flagged["lineage"]
    counts = Counter(f"{r['kind']}/{r['label']}" for r in labels)
    return {"labels": dict(sorted(counts.items())), "planted": len(copies), "benchmarks": used,
            "params": params.as_dict(), "test_params": test_params.as_dict(), "methods": score(labels, flagged)}


def _row(r: dict, method: str) -> dict:
    return {"problem_id": r["problem_id"], "benchmark": r["benchmark"], "benchmark_id": r["benchmark_id"],
            "matched_ngrams": int(r["matched"]), "benchmark_ngrams": None, "example_span": r["example"],
            "ngram_n": 0, "contaminated": True, "method": method, "reason": r.get("reason")}


def register(sub, add_lake) -> None:
    """Add `decontam` to the `factory` parser."""
    p = sub.add_parser("decontam", help="benchmark decontamination: text evidence, shared tests, task lineage")
    add_lake(p)
    p.add_argument("--benchmark", action="append", help="benchmark source (repeatable; default: HumanEval(+), "
                   "MBPP sanitized/+, LeetCode v0.3.1-test, CodeContests, BigCodeBench)")
    p.add_argument("-n", type=int, default=9, help="words per n-gram")
    p.add_argument("--rule", choices=("evidence", "literal"), default="evidence",
                   help="evidence (default): informative shared n-grams covering a share of the benchmark item; "
                        "literal: any --min-matches shared n-grams (AceReason / Klear); both are stored")
    p.add_argument("--min-matches", type=int, default=1, help="literal rule: contaminated when >= this many "
                   "n-grams match")
    p.add_argument("--stock-df", type=int, help="evidence rule: an n-gram in more task families than this is "
                   "stock text (default: DecontamParams.stock_df)")
    p.add_argument("--min-coverage", type=float, help="evidence rule: share of the benchmark item's informative "
                   "n-grams that must be shared (default: DecontamParams.min_coverage)")
    p.add_argument("--max-benchmark-df", type=int, help="stock text: n-grams in more benchmark items than this")
    p.add_argument("--method", action="append", choices=METHODS,
                   help="check (repeatable; default: all of ngram, test, lineage)")
    p.add_argument("--template-df", type=float, default=0.002,
                   help="stock text: a source's template n-grams, those in more than this fraction of its "
                        "problems (and more than --template-min-df); a negative value turns the check off")
    p.add_argument("--template-min-df", type=int, default=2)
    p.add_argument("--show", type=int, default=None, help="print at most this many removals with their reason "
                   "(default: all)")
    p.set_defaults(fn=cmd_decontam)


def cmd_decontam(args) -> None:
    report = run_decontam(args.lake, args.benchmark, args.n, args.min_matches, args.max_benchmark_df,
                          tuple(args.method or METHODS),
                          template_df=None if args.template_df < 0 else args.template_df,
                          template_min_df=args.template_min_df, rule=args.rule, stock_df=args.stock_df,
                          min_coverage=args.min_coverage)
    removals = report["removals"]
    shown = removals if args.show is None else removals[:max(0, args.show)]
    for r in shown:
        print(f"removed {r['source']} {r['source_id']}: {r['method']} vs {r['benchmark']} {r['benchmark_id']} - "
              f"{r['reason']}")
    if len(shown) < len(removals):
        print(f"... {len(removals) - len(shown)} more (silver.contamination has every pair and its reason)")
    lit = report.get("literal_ngram") or {}
    print(f"checked {report['checked']} problems against {report['benchmark_items']} benchmark items "
          f"({', '.join(report['benchmarks'])}); contaminated by source: {report['contaminated_by_source']}; "
          f"by method: {report['contaminated_by_method']}")
    if lit:
        print(f"literal rule (any shared {args.n}-gram) would remove {lit['removed']} problems: {lit['evidence']} "
              f"with text evidence, {lit['stock_only']} on stock text / example values only, "
              f"{lit['single_stock_phrase']} on a single stock phrase")
