"""Any-order answers (#48): detection and the order-insensitive comparison on every LeetCode problem whose
statement allows any order, through the real `factory hidden-tests` path.

    python bench/any_order_audit.py [--out bench/results/any_order_audit.json]

The candidates are every LeetCodeDataset problem (train and test files, one row per slug) that the detector
(:func:`factory.testgen.any_order.any_order_phrase`) or a broad text search (``BROAD``: "any order", "order does
not matter", "arbitrary order"...) flags, plus the labelled audit set (audit/any_order/labels.jsonl: labels read
off the statements, not the detector). They are ingested into a fresh lake as training rows, their references
executed, and `factory hidden-tests` run on them. Then, on each problem's hidden tests judged by the problem's
rule (as `factory execute` judges them), in the sandbox:

* the reference; the reference's answer reversed and shuffled where the order is free: the outer order, the
  inner order too for groups (3sum), only the inner for a fixed record of sets (find-the-difference); an
  unlabelled problem gets its outer order changed;
* a wrong answer (the last element dropped, or the only one repeated): it must fail.

A problem passes when it passes every hidden test; it is scored where reversing changes the expected answer of
at least one of its hidden tests (``order_tested``: answers of one element test no order). Prints per kind and overall counts and writes the JSON.
"""
from __future__ import annotations

import json
import re
import tempfile
from collections import defaultdict
from pathlib import Path

from harness import DATA, ROOT, jsonl, machine, parser, table, timed, write  # noqa: I001  (first: sys.path)

FILES = ("LeetCodeDataset-v0.2.0-train.jsonl.gz", "LeetCodeDataset-v0.2.0-test.jsonl.gz",
         "LeetCodeDataset-v0.3.1-test.jsonl.gz")
LABELS = ROOT / "audit" / "any_order" / "labels.jsonl"
BROAD = re.compile(r"\bany\s+(?:arbitrary\s+)?order\b|\border\b[^.\n]{0,40}\b(?:does\s+not|doesn't|do\s+not|don't)"
                   r"\s+matter|\b(?:no|any)\s+particular\s+order\b|\barbitrary\s+order\b|regardless\s+of\s+the\s+order",
                   re.IGNORECASE)
FREE = {"flat": "outer", "strings": "outer", "records": "outer", "groups": "both", "record_of_sets": "inner"}
_WRAP = '''

def _audit_perm(x, how):
    if not isinstance(x, list) or len(x) < 2:
        return x
    y = x[::-1] if how == "reversed" else __import__("random").Random(len(x)).sample(x, len(x))
    return x[1:] + x[:1] if y == x else y


def _audit_tx(v, free, how):
    if how == "wrong":
        return (v[:-1] if len(v) >= 2 else v + v) if isinstance(v, list) else v
    if not isinstance(v, list):
        return v
    v = _audit_perm(v, how) if free in ("outer", "both") else v
    return [_audit_perm(x, how) for x in v] if free in ("inner", "both") else v


class {cls}({cls}):
    def {meth}(self, *args, **kwargs):
        return _audit_tx(super().{meth}(*args, **kwargs), {free!r}, {how!r})
'''


def _expected(kind: str, code: str | None, exp: str | None):
    """A hidden test's expected value: a call test's, or the literal a check test's assert compares with."""
    import ast

    from factory.sandbox import deserialize_value
    if kind == "call":
        return deserialize_value(exp)
    try:
        node = next(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Compare)).comparators[0]
        return ast.literal_eval(node.args[0] if isinstance(node, ast.Call) else node)
    except (StopIteration, ValueError, SyntaxError, TypeError):
        return None


def statement(row: dict) -> str:
    return (row.get("problem_description") or (row.get("meta") or {}).get("question_title") or "").replace("\xa0", " ")


def leetcode_rows(data: Path = DATA) -> dict[str, dict]:
    """Every LeetCodeDataset problem, one row per slug (the first file that has it)."""
    rows: dict[str, dict] = {}
    for name in FILES:
        for r in jsonl(data / "leetcodedataset" / name):
            rows.setdefault(r["task_id"], r)
    return rows


def labels(path: Path = LABELS) -> dict[str, dict]:
    return {r["task_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def _prf(pred: set, yes: set, labelled: set) -> dict:
    tp = len(pred & yes)
    fp = len((pred & labelled) - yes)
    return {"flagged": len(pred & labelled), "tp": tp, "fp": fp, "fn": len(yes - pred),
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / len(yes), 3) if yes else None}


def measure(work: Path, data: Path = DATA, per_problem: int = 5) -> dict:
    """The audit on a fresh lake under ``work`` (hidden tests: ``per_problem`` per problem, 2 rounds of 12)."""
    from factory.judging.rules import NO_OVERRIDE, load_judging
    from factory.lake import connect
    from factory.lake.commit import stage_run
    from factory.sandbox import Job, Limits, SandboxPool, TestSpec
    from factory.sandbox.rows import merge_verdicts
    from factory.stages.execute import execute
    from factory.stages.hidden_tests import ORIGIN_ANY_ORDER, run_hidden_tests
    from factory.stages.ingest import ingest_source
    from factory.testgen.any_order import any_order_phrase
    rows, lab = leetcode_rows(data), labels()
    detected = {t for t, r in rows.items() if any_order_phrase(statement(r))}
    broad = {t for t, r in rows.items() if BROAD.search(statement(r))}
    cands = sorted((detected | broad | set(lab)) & set(rows))
    src = work / "LeetCodeDataset-v0.2.0-train.jsonl"      # training rows: hidden-tests only touches those
    src.write_text("".join(json.dumps(rows[t]) + "\n" for t in cands))
    lake = work / "lake"
    with stage_run("init", {}, lake=lake, create=True) as run:
        run.materialize()
    ingest_source("leetcode", [src], lake=lake)
    execute(lake, selection="reference", limits=Limits(cpu_s=4.0))
    report = run_hidden_tests(lake, per_problem=per_problem, rounds=2, per_round=12)
    with connect(lake, read_only=True) as con:
        judging = load_judging(con, time_limits=False)
        tests = defaultdict(list)
        for sid, pid, tid, kind, code, inp, exp, ep, pre, ref in con.execute("""
                SELECT p.source_id, p.problem_id, t.test_id, t.kind, t.code, t.input, t.expected, p.entry_point,
                       coalesce(p.test_preamble, ''), r.code
                FROM silver.tests t JOIN silver.problems p USING (problem_id)
                JOIN silver.programs r ON r.problem_id = p.problem_id AND r.origin = 'reference'
                WHERE t.subset = 'hidden' ORDER BY t.ordinal""").fetchall():
            tests[sid].append((pid, tid, kind, code, inp, exp, ep, pre, ref))
        checkers = {sid: code for sid, code in con.execute(
            "SELECT p.source_id, c.code FROM silver.checkers c JOIN silver.problems p USING (problem_id) "
            f"WHERE c.origin = '{ORIGIN_ANY_ORDER}'").fetchall()}
    jobs, hows = [], ("reference", "reversed", "shuffled", "wrong")
    for sid, ts in tests.items():
        pid, ep, pre, ref = ts[0][0], ts[0][6], ts[0][7], ts[0][8]
        rule = judging.get(pid, NO_OVERRIDE)
        specs = [rule.apply(TestSpec(tid, kind, code=c, input=i, expected=e)) for _, tid, kind, c, i, e, *_ in ts]
        cls, meth = re.fullmatch(r"(\w+)\(\)\.(\w+)", ep).groups()
        free = FREE.get(lab.get(sid, {}).get("kind"), "outer")
        for how in hows:
            code = ref if how == "reference" else ref + _WRAP.format(cls=cls, meth=meth, free=free, how=how)
            jobs.append(Job(program_id=f"{sid}|{how}", code=code, tests=specs, entry_point=ep, preamble=pre))
    with SandboxPool(Limits(cpu_s=4.0)) as pool:
        merged = merge_verdicts(list(pool.run(jobs)))
    problems = {}
    for t in cands:
        lb, ts = lab.get(t, {}), tests.get(t, [])
        relaxed = t in checkers or any("sorted(candidate(" in (x[3] or "") for x in ts)
        depth = re.search(r"\nDEPTH = (.+)\n", checkers[t]).group(1) if t in checkers else ("1" if relaxed else "0")
        depth += " (inner only)" if "\nOUTER = False\n" in checkers.get(t, "") else ""
        helpers: dict = {}
        exec(_WRAP.split("\nclass ")[0], helpers)
        changed = [helpers["_audit_tx"](v, FREE.get(lb.get("kind"), "outer"), "reversed") != v
                   for v in (_expected(x[2], x[3], x[5]) for x in ts)]
        p = {"label": lb.get("any_order"), "order_tested": any(changed), "kind": lb.get("kind"), "wording": lb.get("wording"),
             "phrase": any_order_phrase(statement(rows[t])), "broad": t in broad, "hidden_tests": len(ts),
             "relaxed": relaxed, "depth": depth}
        for how in hows:
            st = [merged.get((f"{t}|{how}", x[1]), (None,))[0] for x in ts]
            p[how] = round(sum(v is not None and v.status == "pass" for v in st) / len(st), 3) if st else None
        problems[t] = p
    return {"candidates": len(cands), "detected": len(detected & set(cands)), "broad": len(broad & set(cands)),
            "hidden_tests_report": {k: report[k] for k in ("tests_added", "problems_with_tests", "any_order",
                                                          "skipped_by_reason")},
            "problems": problems, "summary": summarize(problems)}


def summarize(problems: dict) -> dict:
    """Detection precision/recall on the labels, and per kind how many problems score 1.0."""
    labelled = {t for t, p in problems.items() if p["label"]}
    yes = {t for t in labelled if problems[t]["label"] == "yes"}
    out = {"labelled": len(labelled), "positives": len(yes),
           **{k: _prf({t for t, p in problems.items() if p[k]}, yes, labelled) for k in ("phrase", "broad", "relaxed")}}
    groups = defaultdict(list)
    for t, p in problems.items():
        if p["order_tested"]:
            groups["negatives" if p["label"] == "no" else "unlabelled" if not p["label"] else "positives"].append(t)
            if p["label"] == "yes":
                groups[f"yes:{p['kind']}"].append(t)
                if p["wording"] != "standard":
                    groups["yes:wording"].append(t)
    out["scores"] = {g: {"scored": len(ts), **{h: sum(problems[t][h] == 1.0 for t in ts)
                                              for h in ("reference", "reversed", "shuffled", "wrong")},
                         "failing_reversed": sorted(t for t in ts if problems[t]["reversed"] != 1.0)}
                     for g, ts in sorted(groups.items())}
    return out


def main(argv=None) -> int:
    ap = parser(__doc__, "any_order_audit.json", {"--per-problem": 5})
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        seconds, result = timed(measure, Path(d), per_problem=args.per_problem)
    result["seconds"], result["machine"] = round(seconds, 1), machine()
    s = result["summary"]
    print(f"{result['candidates']} candidates: {result['detected']} detected, {result['broad']} by the broad search; "
          f"{s['labelled']} labelled ({s['positives']} any-order); {result['seconds']} s")
    print(table([{"detection": k, **{c: s[k][c] for c in ("flagged", "tp", "fp", "fn", "precision", "recall")}}
                 for k in ("phrase", "broad", "relaxed")]))
    print(table([{"set": g, **{c: r[c] for c in ("scored", "reference", "reversed", "shuffled", "wrong")}}
                 for g, r in s["scores"].items()]))
    for g, r in s["scores"].items():
        if r["failing_reversed"] and g != "negatives":
            print(f"{g} reversed < 1.0: {', '.join(r['failing_reversed'])}")
    write(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
