"""Decontamination on real data: precision / recall on the audit labels (audit/decontam), the named true pairs stay
removed, the named false ones stay in, and a recipe with the papers' literal rule still removes on any 9-gram.

One lake of every dataset under the shared data folder (ingest only: the test method sees the datasets' own tests;
generated hidden tests are measured by bench/decontam_audit.py on a lake after `factory hidden-tests`)."""
from __future__ import annotations

import json

import pytest

from factory.dedup.suite_overlap import TestOverlapParams as OverlapParams
from factory.dedup.suite_overlap import problem_keys, shared_test_overlap
from factory.lake import connect
from factory.stages.decontam import audit_decontam, run_decontam
from tests.lakeutil import copy_lake


@pytest.fixture(scope="module")
def lake(tmp_path_factory, ingested_all):
    return copy_lake(ingested_all, tmp_path_factory.mktemp("decontam-audit") / "lake")


@pytest.fixture(scope="module")
def report(lake):
    return run_decontam(lake)


def _q(lake, sql, params=None):
    con = connect(lake, read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _pairs(lake, where: str) -> set:
    return {tuple(r) for r in _q(lake, f"""
        SELECT p.source, p.source_id, b.source, b.source_id, c.method FROM silver.contamination c
        JOIN silver.problems p USING (problem_id) JOIN silver.problems b ON b.problem_id = c.benchmark_id
        WHERE {where}""")}


def test_audit_precision_and_recall(lake):
    res = audit_decontam(lake)
    m = res["methods"]
    assert res["labels"]["lineage/true"] == 977 and res["planted"] >= 150
    # the default (text evidence + test + lineage): every lineage pair and every planted copy, precision >= 0.95
    assert m["default"]["by_kind"]["lineage"]["rate"] == 1.0
    assert m["default"]["by_kind"]["planted"]["rate"] == 1.0
    assert m["default"]["precision"] >= 0.95
    assert m["text"]["precision"] >= 0.95 and m["text"]["by_kind"]["planted"]["rate"] == 1.0
    assert m["test"]["precision"] >= 0.95
    assert m["lineage"]["precision"] == 1.0 and m["lineage"]["by_kind"]["lineage"]["rate"] == 1.0
    # stock phrases and other tasks of one dataset: the evidence rule links none of the literal rule's pairs
    assert m["text"]["by_kind"]["stock_phrase"]["flagged"] == 0
    assert m["text_literal"]["by_kind"]["stock_phrase"]["rate"] == 1.0 and m["text_literal"]["precision"] < 0.5


def test_named_pairs(lake, report):
    removed = _pairs(lake, "c.contaminated")
    # true: LeetCode find-k-pairs-with-smallest-sums is MBPP 408 (text evidence), with a reason naming the passage
    assert ("leetcode-v0.2.0-train", "find-k-pairs-with-smallest-sums", "mbpp-sanitized", "408", "ngram") in removed
    reason = _q(lake, """SELECT c.reason FROM silver.contamination c JOIN silver.problems p USING (problem_id)
        JOIN silver.problems b ON b.problem_id = c.benchmark_id WHERE p.source_id = 'find-k-pairs-with-smallest-sums'
        AND b.source = 'mbpp-sanitized' AND b.source_id = '408'""")[0][0]
    assert "one element from the first array and one element from the second array" in reason
    # false: MBPP 654 (perimeter) shares only the arguments (10, 20) with MBPP 458 (area)
    assert not {r for r in removed if r[:2] == ("mbpp", "654") and r[3] in ("458", "Mbpp/458")}
    # false: LeetCode train problems sharing one stock phrase with a benchmark item stay in (literal links only)
    lit_only = _q(lake, """SELECT count(DISTINCT c.problem_id) FROM silver.contamination c
        JOIN silver.problems p USING (problem_id) WHERE p.source = 'leetcode-v0.2.0-train' AND c.method = 'ngram'
        AND c.literal AND c.phrases = 1 AND c.informative_ngrams = 0
        AND c.problem_id NOT IN (SELECT problem_id FROM silver.contamination WHERE contaminated)""")[0][0]
    assert lit_only > 100
    # the stock phrases issue #40 names: linked by the literal rule, never by the evidence rule ("the quick brown
    # fox ..." sits in example lines - an MBPP+ assert, BigCodeBench >>> lines - which the text check does not read)
    stock = {"at most one edge between any pair of vertices": True, "the quick brown fox jumps over the lazy dog": None,
             "1 1 1 1 1 1 1 output 0": True, "n vertices numbered from 0 to n 1 and": True}
    for phrase, linked in stock.items():
        rows = _q(lake, "SELECT bool_or(literal), bool_or(contaminated) FROM silver.contamination c "
                        "JOIN silver.problems p USING (problem_id) WHERE p.source = 'leetcode-v0.2.0-train' "
                        "AND c.method = 'ngram' AND c.example_span LIKE ?", [f"%{phrase}%"])
        assert rows[0] == (linked, False if linked else None), phrase
    text_removed = {r for r in removed if r[0] == "leetcode-v0.2.0-train" and r[4] == "ngram"}
    assert len(text_removed) <= 3, text_removed
    # every removal carries a reason a person can check
    assert report["removals"] and all(r["reason"] for r in report["removals"])
    assert _q(lake, "SELECT count(*) FROM silver.contamination WHERE contaminated AND reason IS NULL")[0][0] == 0


def test_literal_rule_still_removes_on_any_9gram(lake, report):
    """A recipe's `decontaminated` rule with literal_min_ngrams: 1 (AceReason / Klear) removes every problem sharing
    any 9-gram; the default rule keeps the stock-phrase ones. The run's summary counts the single-phrase ones."""
    from factory.recipes.rules import resolve_rule, rule_sql

    lit = resolve_rule({"rule": "decontaminated", "ngram_n": 9, "literal_min_ngrams": 1}, "test")
    default = resolve_rule({"rule": "decontaminated", "ngram_n": 9}, "test")
    kept = lambda rule: {r[0] for r in _q(lake, rule_sql(rule))}
    any_gram = {r[0] for r in _q(lake, "SELECT problem_id FROM silver.contamination WHERE method = 'ngram' "
                                       "AND matched_ngrams >= 1")}
    assert any_gram and not (kept(lit) & any_gram)
    assert len(any_gram - kept(default)) < len(any_gram) / 3
    summary = json.loads(_q(lake, "SELECT message FROM ops.runs WHERE stage = 'decontam' AND status = 'success' "
                                  "ORDER BY finished_at DESC LIMIT 1")[0][0])
    lit_sum = summary["literal_ngram"]
    assert lit_sum["removed"] == len(any_gram)
    assert 0 < lit_sum["single_stock_phrase"] <= lit_sum["stock_only"] < lit_sum["removed"]


def test_tests_need_input_and_expected_and_ignore_trivial_values():
    """MBPP 458 (area) and 654 (perimeter) share the arguments (10, 20), not the expected value; the same argument
    tuple with another expected value, or a tiny test many tasks have, links nothing; HumanEval/55's Fibonacci
    tests in LeetCode form do."""
    area = problem_keys([("assert", "assert rectangle_area(10,20)==200", None, None)])
    perim = problem_keys([("assert", "assert rectangle_perimeter(10,20)==60", None, None),
                          ("assert", "assert rectangle_perimeter(10,5)==30", None, None)])
    assert not shared_test_overlap({"654": perim}, {("mbppplus", "Mbpp/458"): area})
    assert not shared_test_overlap({"654": perim}, {("mbppplus", "Mbpp/458"): problem_keys(
        [("call", None, "[10, 20]", None)], with_inputs=False)})
    fib_he = problem_keys([("check", f"def check(candidate):\n    assert candidate({a}) == {b}\n", None, None)
                           for a, b in ((10, 55), (1, 1), (8, 21), (11, 89), (12, 144))])
    fib_lc = problem_keys([("check", f"def check(candidate):\n    assert candidate(n = {a}) == {b}\n", None, None)
                           for a, b in ((2, 1), (3, 2), (4, 3), (8, 21), (10, 55), (11, 89), (12, 144))])
    found = shared_test_overlap({"fibonacci-number": fib_lc}, {("humanevalplus", "HumanEval/55"): fib_he})
    assert [r["benchmark_id"] for r in found] == ["HumanEval/55"] and "== 144" in found[0]["reason"]
    tiny = {k: problem_keys([("check", f"def check(candidate):\n    assert candidate({a}) == {b}\n", None, None)])
            for k, (a, b) in {"a": (2, 0), "b": (10, -1), "c": (13, "False")}.items()}
    bench = {("humaneval", f"HumanEval/{i}"): tiny["a"] | tiny["b"] | tiny["c"] for i in range(5)}
    assert not shared_test_overlap({"p": tiny["a"] | tiny["b"] | tiny["c"]}, bench, OverlapParams())
    one = {("humaneval", "HumanEval/0"): tiny["a"] | tiny["b"] | tiny["c"]}
    assert not shared_test_overlap({"p": tiny["a"] | tiny["b"] | tiny["c"]}, one)
    assert shared_test_overlap({"p": tiny["a"] | tiny["b"] | tiny["c"]}, one, OverlapParams(min_test_chars=0))


def test_release_card_quotes_the_figures(lake, report):
    """Every card gets the audit's precision / recall (audit/decontam/measured.json); a recipe with the literal
    rule also gets how many of its removals rest on a single stock phrase (this lake's decontam run)."""
    from factory.release.card import decontamination_figures, decontamination_markdown

    con = connect(lake, read_only=True)
    try:
        figures = decontamination_figures(con)
    finally:
        con.close()
    single = report["literal_ngram"]["single_stock_phrase"]
    assert figures["run"]["literal_ngram"]["single_stock_phrase"] == single > 0
    measured = figures["audit"]["methods"]["default"]
    assert measured["precision"] >= 0.95 and measured["recall_lineage"] == 1.0 and measured["recall_planted"] == 1.0
    literal = {"recipe": {"rules": [{"kind": "decontaminated", "params": {"ngram_n": 9, "literal_min_ngrams": 1}}]},
               "decontamination": figures}
    text = "\n".join(decontamination_markdown(literal))
    assert f"**{single} rest on a single stock phrase**" in text
    assert f"| default | {measured['flagged']} | {measured['precision']:.3f} |" in text
    plain = "\n".join(decontamination_markdown({"decontamination": figures}))
    assert "literal rule" in plain and "| lineage |" in plain
