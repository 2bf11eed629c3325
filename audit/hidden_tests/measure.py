"""Audit of `factory hidden-tests`: the rate of wrong generated tests on a deterministic sample (#40).

    python audit/hidden_tests/measure.py --work /tmp/audit-hidden [--data ../shared/data]

1. A lake with a deterministic sample of LeetCodeDataset v0.2.0-train problems (by sha256 of the slug: tree /
   linked-list problems, problems whose statement says "in any order", the rest), two-sum and 3sum, and every
   KodCode demo problem; references executed, then `factory hidden-tests` (defaults: 8 per problem).
2. A deterministic sample of the generated tests (sha256 of the test id), stratified by kind: plain call tests,
   tree/list ``check`` tests, any-order tests, KodCode pytest tests.
3. Independent criteria on each sampled test:
   * ``second``: a second solution from the dataset - LeetCodeDataset's ``response`` (a different model-written
     Solution), KodCode's other passing trial - qualified by passing every one of the problem's own dataset tests;
     it is run on the generated test under the same judging rule. Disagreement flags the test.
   * ``permuted``: for a test judged order-insensitively, a program returning the reference's answer permuted
     must pass, one dropping an element must fail.
   * ``null``: the expected value is not None/null (unless the problem's examples expect it).
4. ``labels.jsonl`` (this folder) holds the manual review: one line per flagged or reviewed test, with
   ``label`` = ``right`` | ``wrong`` and the reason. The rate is wrong / sampled, where a test is wrong if its
   label says so (an unreviewed flag counts as wrong).

Writes ``sample.jsonl`` (the sampled tests with each criterion's outcome; ids and short input excerpts only) and
prints the figures for docs/test-generation.md.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "bench"))

from harness import ROOT, jsonl  # noqa: E402, I001  (first: the repository on sys.path)

PER_CLASS_PROBLEMS = {"node": 25, "any_order": 25, "plain": 50}
PER_CLASS_TESTS = {"plain": 30, "node": 25, "any_order": 20, "pytest": 25}


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def build(work: Path, data: Path) -> Path:
    from factory.sandbox import Limits
    from factory.stages.curate import curate
    from factory.stages.execute import execute
    from factory.stages.hidden_tests import run_hidden_tests
    from factory.stages.ingest import ingest_source
    from factory.testgen.any_order import any_order_phrase
    from tests.lakeutil import init_lake
    lake = work / "lake"
    if (work / "report.json").exists():
        return lake
    rows = jsonl(data / "leetcodedataset" / "LeetCodeDataset-v0.2.0-train.jsonl.gz")
    classes: dict[str, list] = {"node": [], "any_order": [], "plain": []}
    for r in sorted(rows, key=lambda r: _h(r["task_id"])):
        c = ("node" if "tree_node(" in r["test"] or "list_node(" in r["test"] else
             "any_order" if any_order_phrase(r["meta"]["question_title"]) else "plain")
        classes[c].append(r)
    chosen = {r["task_id"]: r for c, n in PER_CLASS_PROBLEMS.items() for r in classes[c][:n]}
    chosen.update({r["task_id"]: r for r in rows if r["task_id"] in ("two-sum", "3sum")})
    work.mkdir(parents=True, exist_ok=True)
    path = work / "LeetCodeDataset-v0.2.0-train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen.values()))
    init_lake(lake)
    ingest_source("leetcode", [path], lake=lake)
    ingest_source("kodcode", sorted((data / "kodcode_demo").glob("Verified_KodCode_*_Complete.json")), lake=lake)
    execute(lake, selection="reference", limits=Limits(cpu_s=4.0))
    report = run_hidden_tests(lake)
    curate(lake)
    (work / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    return lake


def second_solutions(data: Path) -> dict[str, str]:
    """source_id -> a second solution's code (LeetCode ``response``; KodCode: another passing trial)."""
    out = {r["task_id"]: code   # the response's last code block
           for r in jsonl(data / "leetcodedataset" / "LeetCodeDataset-v0.2.0-train.jsonl.gz")
           if (code := (re.findall(r"```python\n(.*?)```", r.get("response") or "", re.S) or [None])[-1])}
    for f in sorted((data / "kodcode_demo").glob("Verified_KodCode_*_Complete.json")):
        for r in json.loads(f.read_text()):
            m = r.get("metadata") or {}
            sid = f"{m.get('mode')}-{m.get('prompt_id')}-{m.get('row_id')}"
            for name, trial in (r.get("trials") or {}).items():
                ok = str(trial.get("test_result", "")).lower() in ("pass", "passed", "true", "1")
                if name != r.get("chosen_trial") and ok and trial.get("solution_code"):
                    out[sid] = trial["solution_code"]
                    break
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    from factory.judging.rules import NO_OVERRIDE, load_judging
    from factory.lake import connect
    from factory.sandbox import Job, Limits, SandboxPool, TestSpec, deserialize_value
    from factory.sandbox.rows import merge_verdicts
    from factory.testgen.any_order import INNER, permuted, wrong
    from factory.stages.hidden_tests import _stub

    lake = build(args.work, args.data)
    with connect(lake, read_only=True) as con:
        judging = load_judging(con, time_limits=False)
        tests = con.execute("""
            SELECT t.test_id, t.kind, t.code, t.input, t.expected, p.problem_id, p.source, p.source_id,
                   p.entry_point, coalesce(p.test_preamble, '') AS preamble, p.question
            FROM silver.tests t JOIN silver.problems p USING (problem_id)
            WHERE t.subset = 'hidden' ORDER BY t.test_id""").to_arrow_table().to_pylist()
        own = {}
        for pid, tid, kind, code, inp, exp in con.execute("""
                SELECT problem_id, test_id, kind, code, input, expected FROM silver.tests
                WHERE subset IS DISTINCT FROM 'hidden'""").fetchall():
            own.setdefault(pid, []).append((tid, kind, code, inp, exp))
    for t in tests:
        t["rule"] = rule = judging.get(t["problem_id"], NO_OVERRIDE)
        t["cls"] = ("pytest" if t["kind"] == "pytest" else "node" if t["kind"] == "check" else
                    "any_order" if rule.policy == "program" else "plain")
    sample = [t for cls, n in PER_CLASS_TESTS.items()
              for t in sorted((t for t in tests if t["cls"] == cls), key=lambda t: _h(t["test_id"]))[:n]]
    seconds = second_solutions(args.data)

    def spec(t, test_id, kind, code, inp, exp):
        return t["rule"].apply(TestSpec(test_id, kind, code=code, input=inp, expected=exp))

    jobs, qualify = [], {}
    for t in {t["problem_id"]: t for t in sample}.values():
        if (code := seconds.get(t["source_id"])) is None:
            continue
        specs = [spec(t, "own|" + tid, k, c, i, e) for tid, k, c, i, e in own.get(t["problem_id"], [])]
        specs += [spec(s, "gen|" + s["test_id"], s["kind"], s["code"], s["input"], s["expected"])
                  for s in sample if s["problem_id"] == t["problem_id"]]
        jobs.append(Job(program_id="second|" + t["problem_id"], code=code, tests=specs,
                        entry_point=t["entry_point"], preamble=t["preamble"]))
        qualify[t["problem_id"]] = [s.test_id for s in specs if s.test_id.startswith("own|")]
    for s in sample:
        if s["rule"].policy == "program" and s["kind"] == "call":
            value = deserialize_value(s["expected"])
            if isinstance(value, list) and len(value) >= 2:
                code = s["rule"].code or ""
                depth = INNER if "OUTER = False" in code else 2 if "DEPTH = 2" in code else 1
                for tag, answer in (("perm", permuted(value, depth)), ("wrong", wrong(value))):
                    if stub := _stub(s["entry_point"], answer):
                        jobs.append(Job(program_id=f"{tag}|{s['test_id']}", code=stub,
                                        tests=[spec(s, s["test_id"], "call", None, s["input"], s["expected"])],
                                        entry_point=s["entry_point"], preamble=s["preamble"]))
    with SandboxPool(Limits(cpu_s=4.0)) as pool:
        merged = merge_verdicts(list(pool.run(jobs)))
    status = {k: v.status for k, (v, _) in merged.items()}
    labels = {r["test_id"]: r for r in jsonl(HERE / "labels.jsonl")} if (HERE / "labels.jsonl").exists() else {}
    out, wrong_n, flagged, by_cls = [], 0, 0, Counter()
    for s in sample:
        pid = s["problem_id"]
        rec = {"test_id": s["test_id"], "class": s["cls"], "source": s["source"], "problem": s["source_id"],
               "input": (s["input"] or s["code"] or "")[-160:], "expected": (s["expected"] or "")[:80]}
        if pid in qualify:
            qualified = all(status.get((f"second|{pid}", x)) == "pass" for x in qualify[pid])
            got = status.get((f"second|{pid}", "gen|" + s["test_id"]))
            rec["second"] = ("agrees" if got == "pass" else "disagrees") if qualified else "unqualified"
        else:
            rec["second"] = "none"
        if (f"perm|{s['test_id']}", s["test_id"]) in status:
            rec["permuted"] = ("ok" if status[(f"perm|{s['test_id']}", s["test_id"])] == "pass"
                               and status.get((f"wrong|{s['test_id']}", s["test_id"])) == "fail" else "bad")
        rec["null"] = s["kind"] == "call" and deserialize_value(s["expected"]) is None
        rec["flagged"] = flag = rec["second"] == "disagrees" or rec.get("permuted") == "bad" or rec["null"]
        label = labels.get(s["test_id"])
        rec["label"] = label["label"] if label else ("wrong?" if flag else "unreviewed")
        is_wrong = (label["label"] == "wrong") if label else flag
        flagged += flag
        wrong_n += is_wrong
        by_cls[(s["cls"], "wrong" if is_wrong else "ok")] += 1
        out.append(rec)
    (HERE / "sample.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in out))
    report = json.loads((args.work / "report.json").read_text())
    crit = Counter(r["second"] for r in out)
    print(json.dumps({"sampled": len(out), "flagged": flagged, "wrong": wrong_n,
                      "wrong_rate": round(wrong_n / max(len(out), 1), 3), "second_solution": dict(crit),
                      "permuted": dict(Counter(r.get("permuted") for r in out if "permuted" in r)),
                      "labelled": sum(1 for r in out if r["test_id"] in labels),
                      "by_class": {f"{a}/{b}": n for (a, b), n in sorted(by_cls.items())},
                      "stage": {k: report[k] for k in ("tests_added", "problems_with_tests", "problems",
                                                        "rejected_inputs", "any_order", "skipped_by_reason")}},
                     indent=1))


if __name__ == "__main__":
    main()
