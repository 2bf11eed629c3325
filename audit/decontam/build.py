"""Rebuild the decontamination audit labels from the data files (labels only: ids, kinds, the basis of a label).

    python audit/decontam/build.py --data-dir ../shared/data [--lake LAKE]

Writes, next to this file:

* ``lineage.csv``  - the same task across derived datasets, read from the files' own task ids: MBPP <->
  sanitized MBPP <-> MBPP+, HumanEval <-> HumanEval+, LeetCode slugs across the three LeetCodeDataset files;
* ``planted.csv``  - which benchmark items get a planted paraphrased copy, and by which transform
  (``factory.dedup.audit.TRANSFORMS``; the copy's text is made when the audit runs);
* ``text.csv``     - every pair of a checked problem and a benchmark item that share any word 9-gram of their
  statements (the literal rule's candidates), labelled WITHOUT the decontamination rules: same lineage (skipped:
  lineage.csv has it); two ids of one dataset - true when one statement contains the other, ambiguous for
  LeetCode I / II siblings, else false; across datasets - the share of the shorter statement's words in common
  runs (difflib): >= 0.5 true (copy), < 0.25 false (stock phrase), between: ``manual.csv`` decides (else
  ambiguous);
* ``tests.csv``    - with ``--lake`` (a lake after execute + hidden-tests): pairs sharing a normalised test
  (input and expected) or test inputs only, labelled the same way (tiny_test / shared_test / inputs_only).

``manual.csv`` (kept by hand, with a note per pair) overrides any label.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "bench"))

from harness import jsonl as _jsonl  # noqa: E402, I001  (first: the repository on sys.path)
from factory.dedup.audit import (LABEL_FIELDS, PLANTED_FIELDS, choose_planted, read_csv,  # noqa: E402
                                 write_csv)
from factory.dedup.embed import statement_text  # noqa: E402
from factory.dedup.shingle import tokenize  # noqa: E402
from factory.ingest.normalize import unquote  # noqa: E402

BENCHMARKS = ("humaneval", "humanevalplus", "mbpp-sanitized", "mbppplus", "leetcode-v0.3.1-test", "codecontests",
              "bigcodebench")
# the audit checks HumanEval against HumanEval+ (both benchmarks in the factory's default list)
AUDIT_BENCHMARKS = tuple(b for b in BENCHMARKS if b != "humaneval")
PLANT_SOURCES = ("humanevalplus", "mbppplus", "leetcode-v0.3.1-test", "codecontests", "bigcodebench")
PLANT_PER_SOURCE = 8
N = 9


def load(data: Path) -> dict:
    """source -> {source_id: {"text", "lineage"}} from the files (ids as the factory's adapters name them)."""
    out: dict = defaultdict(dict)
    for r in _jsonl(data / "mbpp" / "mbpp.jsonl"):
        out["mbpp"][str(r["task_id"])] = {"text": r["text"], "lineage": f"mbpp:{r['task_id']}"}
    for r in json.loads((data / "mbpp_sanitized" / "sanitized-mbpp.json").read_text(encoding="utf-8")):
        out["mbpp-sanitized"][str(r["task_id"])] = {"text": r["prompt"], "lineage": f"mbpp:{r['task_id']}"}
    for r in _jsonl(data / "mbppplus" / "MbppPlus.jsonl.gz"):
        n = int(r["task_id"].split("/")[1])
        out["mbppplus"][r["task_id"]] = {"text": r["prompt"], "lineage": f"mbpp:{n}"}
    for name, file in (("humaneval", "humaneval/HumanEval.jsonl.gz"),
                       ("humanevalplus", "humanevalplus/HumanEvalPlus.jsonl.gz")):
        for r in _jsonl(data / file):
            out[name][r["task_id"]] = {"text": r["prompt"], "lineage": f"humaneval:{r['task_id'].split('/')[1]}"}
    for version in ("v0.2.0-train", "v0.2.0-test", "v0.3.1-test"):
        for r in _jsonl(data / "leetcodedataset" / f"LeetCodeDataset-{version}.jsonl.gz"):
            text = r.get("problem_description") or unquote((r.get("meta") or {}).get("question_title")) or ""
            out[f"leetcode-{version}"][r["task_id"]] = {"text": text,
                                                         "lineage": f"leetcode:{r['task_id'].strip().lower()}"}
    for r in _jsonl(data / "codecontests_subset300" / "codecontests_subset300.jsonl"):
        out["codecontests"][r["task_id"]] = {"text": r["description"], "lineage": None}
    for r in _jsonl(data / "apps_mapcoder150" / "selected150.jsonl"):
        out["apps"][str(r["id"])] = {"text": r["description"], "lineage": None}
    for path in sorted((data / "kodcode_demo").glob("*.json")):
        for i, r in enumerate(json.loads(path.read_text(encoding="utf-8")), start=1):
            meta = r.get("metadata") or {}
            sid = f"{meta.get('mode', 'kodcode')}-{meta.get('prompt_id', i)}-{meta.get('row_id', '')}"
            out["kodcode"][sid] = {"text": r["instruction"], "lineage": None}
    for r in _jsonl(data / "bigcodebench" / "BigCodeBench.jsonl.gz"):
        out["bigcodebench"][r["task_id"]] = {"text": r["instruct_prompt"], "lineage": None}
    return out


def checked_sources(data: dict) -> list[str]:
    return [s for s in data if s not in AUDIT_BENCHMARKS and s != "cruxeval"]


def lineage_pairs(data: dict) -> list[dict]:
    by_lineage = defaultdict(list)
    for b in AUDIT_BENCHMARKS:
        for sid, rec in data[b].items():
            if rec["lineage"]:
                by_lineage[rec["lineage"]].append((b, sid))
    return [{"kind": "lineage", "label": "true", "source": s, "source_id": sid, "benchmark": b, "benchmark_id": bid,
             "methods": "lineage,text,test", "basis": f"same task id in the files: {rec['lineage']}"}
            for s in checked_sources(data) for sid, rec in data[s].items()
            for b, bid in by_lineage.get(rec["lineage"] or "", ())]


_SIBLING = re.compile(r"-(i|ii|iii|iv|easy|hard)$")


def _ns(lineage: str | None) -> str | None:
    return lineage.split(":", 1)[0] if lineage else None


def _norm(text: str) -> list[str]:
    return tokenize(statement_text(text or "") or text or "")


def _contains(a: list[str], b: list[str]) -> bool:
    sa, sb = " ".join(a), " ".join(b)
    return bool(sa and sb) and (sa in sb or sb in sa)


_LEAD = re.compile(r"^(?:(?:write|implement|create|given) )?(?:an? )?(?:python )?(?:function|program) (?:to|that) "
                   r"(?:(?:find|return|check|count|get|calculate|compute)s? )?(?:(?:the|whether|if) )?")


def _shared_share(a: list[str], b: list[str]) -> float:
    """The share of the shorter statement's words in common runs of 4+ (difflib), once the MBPP-style lead ("write a
    python function to find the": the template every short task shares, not its content) is dropped from both."""
    a, b = (_LEAD.sub("", " ".join(t)).split() for t in (a, b))
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if not short:
        return 0.0
    m = difflib.SequenceMatcher(None, short, long_, autojunk=False)
    return sum(bl.size for bl in m.get_matching_blocks() if bl.size >= 4) / len(short)


def label_pair(s, sid, b, bid, data, manual) -> tuple[str, str, str] | None:
    """(kind, label, basis) of a candidate pair, or None when lineage.csv has it."""
    p, q = data[s][sid], data[b][bid]
    if (s, sid, b, bid) in manual:
        m = manual[(s, sid, b, bid)]
        return m["kind"], m["label"], "manual: " + m["basis"]
    if p["lineage"] and p["lineage"] == q["lineage"]:
        return None
    a, c = _norm(p["text"]), _norm(q["text"])
    if _ns(p["lineage"]) and _ns(p["lineage"]) == _ns(q["lineage"]):
        if _ns(p["lineage"]) == "leetcode" and _SIBLING.sub("", sid) == _SIBLING.sub("", bid):
            return "sibling", "ambiguous", "LeetCode problems I / II (or easy / hard) of one setting"
        if _contains(a, c):
            return "same_statement", "true", "one statement contains the other (two task ids of one dataset)"
        return "other_task", "false", "two task ids of one dataset with different statements"
    share = _shared_share(a, c)
    if _contains(a, c) or share >= 0.5:
        return "copy", "true", f"{share:.0%} of the shorter statement's words in common runs (difflib)"
    if share < 0.25:
        return "stock_phrase", "false", f"only {share:.0%} of the shorter statement's words in common runs"
    return "review", "ambiguous", f"{share:.0%} of the shorter statement's words in common runs: not reviewed"


def _grams(text: str) -> set[str]:
    """The statement's word N-grams (a shorter statement: itself)."""
    t = _norm(text)
    return {" ".join(t)} - {""} if len(t) < N else {" ".join(t[i:i + N]) for i in range(len(t) - N + 1)}


def text_candidates(data: dict, manual: dict) -> list[dict]:
    grams = defaultdict(set)
    for b in AUDIT_BENCHMARKS:
        for bid, rec in data[b].items():
            for g in _grams(rec["text"]):
                grams[g].add((b, bid))
    return [{"kind": lab[0], "label": lab[1], "source": s, "source_id": sid, "benchmark": b, "benchmark_id": bid,
             "methods": "text", "basis": lab[2]}
            for s in checked_sources(data) for sid, rec in data[s].items()
            for b, bid in sorted(set().union(*(grams.get(g, set()) for g in _grams(rec["text"]))))
            if (lab := label_pair(s, sid, b, bid, data, manual))]


def test_candidates(lake: str, data: dict, manual: dict) -> list[dict]:
    """Pairs sharing a normalised test (input and expected) or only the inputs of a test, from a lake's tests
    (hidden tests exist only there)."""
    from factory.dedup.suite_overlap import _weight, problem_keys
    from factory.lake import connect

    with connect(lake, read_only=True) as con:
        meta = {pid: (src, sid, split) for pid, src, sid, split in con.execute(
            "SELECT problem_id, source, source_id, split FROM silver.problems").fetchall()}
        assertion = dict(con.execute("SELECT problem_id, json_extract_string(metadata, '$.assertion') "
                                     "FROM silver.problems WHERE source = 'mbppplus'").fetchall())
        tests = defaultdict(list)
        for pid, kind, code, inp, exp in con.execute(
                "SELECT problem_id, kind, code, input, expected FROM silver.tests "
                "WHERE coalesce(subset, '') <> 'plus' ORDER BY problem_id, ordinal").fetchall():
            tests[pid].append((kind, code, inp, exp))
    for pid, a in assertion.items():
        if a:
            tests[pid].append(("assert", a, None, None))
    keys = {pid: problem_keys(t, with_inputs=True) for pid, t in tests.items()}
    index = defaultdict(set)
    for pid, ks in keys.items():
        src = meta[pid][0]
        if src in AUDIT_BENCHMARKS or (meta[pid][2] == "test" and src in data and src not in checked_sources(data)):
            for k in ks:
                index[k].add(pid)
    # candidates: keys at most 3 benchmark items hold (what a shared-test rule can link at all)
    index = {k: v for k, v in index.items() if len(v) <= 3}
    rows, seen = [], set()
    for pid, ks in keys.items():
        s, sid, _ = meta[pid]
        if s not in checked_sources(data) or sid not in data.get(s, {}):
            continue
        shared = defaultdict(set)
        for k in ks:
            for bp in index.get(k, ()):
                shared[bp].add(k)
        for bp, sk in shared.items():
            b, bid, _ = meta[bp]
            if bid not in data.get(b, {}) or (s, sid, b, bid) in seen:
                continue
            seen.add((s, sid, b, bid))
            if (lab := label_pair(s, sid, b, bid, data, manual)) is None:
                continue
            io = [k for k in sk if not k.startswith("in:")]
            kind, label, basis = lab
            if label == "false" and kind in ("other_task", "stock_phrase"):
                if not io:
                    kind, basis = "inputs_only", "same test inputs, different expected values; " + basis
                elif max(_weight(k) for k in io) < 8:
                    example = min(io, key=lambda k: (len(k), k))[:60]   # the shortest key; ties by text (any hash seed)
                    kind, basis = "tiny_test", f"shares only tiny tests ({len(io)} keys, e.g. {example}); " + basis
                else:
                    kind, basis = "shared_test", f"shares {len(io)} test keys; " + basis
            rows.append({"kind": kind, "label": label, "source": s, "source_id": sid, "benchmark": b,
                         "benchmark_id": bid, "methods": "test", "basis": basis})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--lake", help="a lake after execute + hidden-tests, for tests.csv")
    args = ap.parse_args(argv)
    data = load(Path(args.data_dir))
    manual_rows = read_csv(HERE / "manual.csv", LABEL_FIELDS) if (HERE / "manual.csv").exists() else []
    manual = {(r["source"], r["source_id"], r["benchmark"], r["benchmark_id"]): r for r in manual_rows}
    lineage = lineage_pairs(data)
    write_csv(HERE / "lineage.csv", LABEL_FIELDS, lineage)
    planted = choose_planted({s: [(sid, rec["text"]) for sid, rec in sorted(data[s].items())]
                              for s in PLANT_SOURCES}, PLANT_PER_SOURCE)
    write_csv(HERE / "planted.csv", PLANTED_FIELDS, planted)
    text = _with_manual(text_candidates(data, manual), manual, "text")
    write_csv(HERE / "text.csv", LABEL_FIELDS, text)
    print(f"lineage.csv {len(lineage)} pairs {_count(lineage)}; planted.csv {len(planted)} copies; "
          f"text.csv {len(text)} pairs {_count(text)}")
    if args.lake:
        tests = _with_manual(test_candidates(args.lake, data, manual), manual, "test")
        write_csv(HERE / "tests.csv", LABEL_FIELDS, tests)
        print(f"tests.csv {len(tests)} pairs {_count(tests)}")
    return 0


def _with_manual(rows: list[dict], manual: dict, method: str) -> list[dict]:
    """``rows`` plus the manual pairs of ``method`` that no candidate found."""
    have = {(r["source"], r["source_id"], r["benchmark"], r["benchmark_id"]) for r in rows}
    return rows + [{**m, "basis": "manual: " + m["basis"]} for k, m in manual.items() if k not in have
                   and method in m["methods"].split(",")]


def _count(rows: list[dict]) -> dict:
    return dict(sorted(Counter(f"{r['kind']}/{r['label']}" for r in rows).items()))


if __name__ == "__main__":
    raise SystemExit(main())
