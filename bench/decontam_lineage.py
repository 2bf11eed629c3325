"""Decontamination recall / precision against lineage truth: every MBPP task vs MBPP+ (the same task id is the
truth), per method (9-gram text overlap, shared tests, lineage) and their unions.

Reads a lake where MBPP and MBPP+ are ingested (after `factory execute --select reference --source mbppplus` the
MBPP+ expected values are known and shared tests compare outputs too; before it, inputs only):

    python bench/decontam_lineage.py --lake demo/lake

Prints a table and writes bench/results/decontam_lineage.json.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow as pa

from factory.dedup import DecontamParams, decontaminate
from factory.dedup.suite_overlap import TestOverlapParams, lineage_overlap, problem_keys, shared_test_overlap
from factory.lake import connect


def _problems(con, source: str) -> dict:
    rows = con.execute("SELECT problem_id, question, json_extract_string(metadata, '$.lineage'), "
                       "json_extract_string(metadata, '$.assertion') FROM silver.problems WHERE source = ?",
                       [source]).fetchall()
    return {r[0]: {"question": r[1], "lineage": r[2], "assertion": r[3]} for r in rows}


def _tests(con, ids: list[str]) -> dict:
    out: dict = {}
    for pid, kind, code, inp, expected in con.execute(
            "SELECT problem_id, kind, code, input, expected FROM silver.tests WHERE list_contains(?, problem_id) "
            "AND coalesce(subset, '') <> 'plus' ORDER BY problem_id, ordinal", [ids]).fetchall():
        out.setdefault(pid, []).append((kind, code, inp, expected))
    return out


def measure(lake, problem_source: str = "mbpp", benchmark: str = "mbppplus") -> dict:
    con = connect(lake, read_only=True)
    try:
        probs, bench = _problems(con, problem_source), _problems(con, benchmark)
        tests = _tests(con, list(probs) + list(bench))
    finally:
        con.close()
    if not probs or not bench:
        raise SystemExit(f"the lake needs both {problem_source} and {benchmark} ingested")
    bench_lineages = {v["lineage"] for v in bench.values() if v["lineage"]}
    truth = {p for p, v in probs.items() if v["lineage"] in bench_lineages}
    flagged: dict[str, set] = {}
    table, _ = decontaminate(
        pa.table({"problem_id": list(probs), "text": [v["question"] for v in probs.values()]}),
        pa.table({"benchmark": [benchmark] * len(bench), "benchmark_id": list(bench),
                  "text": [v["question"] for v in bench.values()]}), DecontamParams(n=9))
    flagged["ngram (9-gram text)"] = set(table.filter(table["contaminated"])["problem_id"].to_pylist())
    bench_keys = {(benchmark, b): problem_keys(tests.get(b, []) + ([("assert", v["assertion"], None, None)]
                                                                    if v["assertion"] else []), with_inputs=False)
                  for b, v in bench.items()}
    flagged["test (shared tests)"] = {r["problem_id"] for r in shared_test_overlap(
        {p: problem_keys(tests.get(p, [])) for p in probs}, bench_keys, TestOverlapParams())}
    flagged["lineage (task id)"] = {r["problem_id"] for r in lineage_overlap(
        {p: v["lineage"] for p, v in probs.items() if v["lineage"]},
        {(benchmark, b): v["lineage"] for b, v in bench.items() if v["lineage"]})}
    a, b, c = flagged.values()
    flagged["test + lineage"] = b | c
    flagged["ngram + test + lineage (factory decontam)"] = a | b | c
    rows = []
    for name, f in flagged.items():
        tp = len(f & truth)
        rows.append({"method": name, "flagged": len(f), "true_positives": tp,
                     "recall": round(tp / len(truth), 4) if truth else None,
                     "precision": round(tp / len(f), 4) if f else None})
    expected_known = sum(1 for b in bench for t in tests.get(b, []) if t[0] == "call" and t[3] is not None)
    return {"problems": problem_source, "benchmark": benchmark, "n_problems": len(probs), "n_benchmark": len(bench),
            "truth_pairs": len(truth), "benchmark_call_tests_with_expected": expected_known, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lake", default="lake")
    ap.add_argument("--problems", default="mbpp")
    ap.add_argument("--benchmark", default="mbppplus")
    args = ap.parse_args()
    result = measure(args.lake, args.problems, args.benchmark)
    print(f"{result['problems']} ({result['n_problems']}) vs {result['benchmark']} ({result['n_benchmark']}): "
          f"{result['truth_pairs']} tasks share a lineage id")
    print("| method | flagged | true positives | recall | precision |\n|---|---|---|---|---|")
    for r in result["rows"]:
        print(f"| {r['method']} | {r['flagged']} | {r['true_positives']} | {r['recall']} | {r['precision']} |")
    out = Path(__file__).parent / "results" / "decontam_lineage.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
