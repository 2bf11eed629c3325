"""Decontamination finds the known sanitized-MBPP / MBPP overlaps, exactly as a brute force does."""
from __future__ import annotations

import pyarrow as pa
import pytest

from factory.dedup import DecontamParams, decontaminate, tokenize
from factory.dedup.decontam import OUTPUT_COLUMNS

from ._data import humaneval, leetcode, mbpp, mbpp_sanitized


def _ngrams(text: str, n: int) -> set[str]:
    t = tokenize(text)
    if not t:
        return set()
    return {" ".join(t)} if len(t) < n else {" ".join(t[i:i + n]) for i in range(len(t) - n + 1)}


@pytest.fixture(scope="module")
def tables(shared_data):
    san, mb = mbpp_sanitized(shared_data), mbpp(shared_data)
    probs = pa.table({"problem_id": [str(r["task_id"]) for r in san], "text": [r["prompt"] for r in san]})
    bench = pa.table({"benchmark": ["mbpp"] * len(mb), "benchmark_id": [str(r["task_id"]) for r in mb],
                      "text": [r["text"] for r in mb]})
    return probs, bench


LITERAL = DecontamParams(rule="literal")   # any shared n-gram (the papers' plain rule)


def _pairs(tab, flag="contaminated"):
    return [(r["problem_id"], r["benchmark_id"]) for r in tab.to_pylist() if r[flag]]


def test_matches_brute_force_9grams(tables):
    """Every pair sharing a 9-gram is returned (whatever the rule), with the exact count of shared n-grams."""
    probs, bench = tables
    tab, st = decontaminate(probs, bench, LITERAL)
    assert tab.column_names == list(OUTPUT_COLUMNS)
    bsets = [(bid, _ngrams(t, 9)) for bid, t in zip(bench["benchmark_id"].to_pylist(), bench["text"].to_pylist())]
    truth = {}
    for pid, t in zip(probs["problem_id"].to_pylist(), probs["text"].to_pylist()):
        ps = _ngrams(t, 9)
        for bid, bs in bsets:
            if ps & bs:
                truth[(pid, bid)] = len(ps & bs)
    got = {(r["problem_id"], r["benchmark_id"]): r["matched_ngrams"] for r in tab.to_pylist()}
    assert got == truth
    assert all(tab["literal"].to_pylist()) and tab["contaminated"].to_pylist() == tab["literal"].to_pylist()
    same = {pid for pid, bid in got if pid == bid}
    assert len(same) == 294  # sanitized prompts sharing a 9-gram with their own MBPP statement
    assert st["n_flagged_problems"] == 308 == st["n_literal_problems"]
    norm = {pid: " ".join(tokenize(t)) for pid, t in zip(probs["problem_id"].to_pylist(), probs["text"].to_pylist())}
    for r in tab.to_pylist():  # span is contiguous (normalised) problem text; every row says why
        assert r["example_span"] in norm[r["problem_id"]]
        assert len(r["example_span"].split()) >= min(9, r["benchmark_ngrams"])
        assert r["reason"] and (r["informative_ngrams"] > 0) == ("informative 9-grams (" in r["reason"])


def test_literal_min_matches(tables):
    probs, bench = tables
    k2, st = decontaminate(probs, bench, DecontamParams(rule="literal", min_matches=2))
    pairs = _pairs(k2)
    assert sum(a != b for a, b in pairs) == 136 and len({a for a, b in pairs if a == b}) == 267
    assert min(r["matched_ngrams"] for r in k2.to_pylist() if r["contaminated"]) >= 2


def test_evidence_rule_drops_template_matches_keeps_copies(tables):
    """MBPP's statement template ("write a python function to ...") links sanitized-MBPP prompts to 653 other
    MBPP tasks under the literal rule; the evidence rule (informative n-grams covering >= 25% of the item) keeps
    24 such cross-task pairs, all one-sentence tasks differing in a word or two, while 280 of the 294 prompts still
    match their own MBPP task (the rest share only template words; `factory decontam`'s lineage check pairs them
    by task id). Given task families (the lineage ids), two ids of one dataset need a near-whole copy: only
    the pairs whose statements are the same task text remain."""
    probs, bench = tables
    tab, st = decontaminate(probs, bench)
    pairs = _pairs(tab)
    assert sum(a != b for a, b in pairs) == 24
    assert len({a for a, b in pairs if a == b}) == 280
    assert st["n_stock_ngrams"] == 76
    fam = lambda t, col: t.append_column("family", pa.array([f"mbpp:{i}" for i in t[col].to_pylist()]))
    tab_f, _ = decontaminate(fam(probs, "problem_id"), fam(bench, "benchmark_id"))
    cross = {(a, b) for a, b in _pairs(tab_f) if a != b}
    assert cross == {("104", "569"), ("427", "928"), ("602", "217"), ("756", "434")}
    # a benchmark task pasted into a template-heavy statement is still caught
    text = bench["text"].to_pylist()[0]
    planted = pa.table({"problem_id": ["copy"], "text": ["Write a python function to " + text + " Example 1: 1 2 3"]})
    hit, _ = decontaminate(planted, bench.slice(0, 50))
    assert bench["benchmark_id"].to_pylist()[0] in [b for _, b in _pairs(hit)]


def test_digit_runs_are_example_data():
    probs = pa.table({"problem_id": ["p"], "text": ["nums = [1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1] in the example"]})
    bench = pa.table({"benchmark": ["b"], "benchmark_id": ["1"], "text": ["Input: 1 0 0 1 0 1 0 0 0 1 1 output 3"]})
    tab, _ = decontaminate(probs, bench)
    assert tab.num_rows == 1 and not tab["contaminated"][0].as_py() and tab["literal"][0].as_py()
    assert tab["informative_ngrams"][0].as_py() == 0 and "no informative 9-gram" in tab["reason"][0].as_py()
    assert decontaminate(probs, bench, LITERAL)[0]["contaminated"][0].as_py()


def test_one_stock_phrase_is_not_evidence():
    """A long statement sharing one stock sentence with a benchmark item is linked by the literal rule only."""
    stock = "there is at most one edge between any pair of vertices"
    probs = pa.table({"problem_id": ["p"], "text": [f"Count the bridges of a graph of n nodes. {stock}. "
                                                    "Return the answer modulo a large prime after sorting."]})
    bench = pa.table({"benchmark": ["b"], "benchmark_id": ["1"], "text": [
        f"You are given a weighted undirected graph. {stock}. Find the shortest cycle through vertex zero and print "
        "its length, or minus one when the graph is a forest; weights are positive and at most one thousand."]})
    tab, _ = decontaminate(probs, bench)
    r = tab.to_pylist()[0]
    assert r["literal"] and not r["evidence"] and r["phrases"] == 1 and stock in r["example_span"]
    assert 0 < r["coverage"] < 0.25


def test_span_is_longest_contiguous_run():
    probs = pa.table({"problem_id": ["p"], "text": ["zero one two three four five six seven eight nine ten X eleven"]})
    bench = pa.table({"benchmark": ["b"], "benchmark_id": ["1"], "text": ["one two three four five six seven eight nine ten"]})
    tab, _ = decontaminate(probs, bench, DecontamParams(n=5, template_df=None))
    r = tab.to_pylist()[0]
    assert r["matched_ngrams"] == 6 and r["example_span"] == "one two three four five six seven eight nine ten"
    probs = pa.table({"problem_id": ["p"], "text": ["alpha beta gamma delta epsilon X one two three four five six"]})
    bench = pa.table({"benchmark": ["b"], "benchmark_id": ["1"], "text": ["alpha beta gamma delta epsilon Y "
                                                                          "one two three four five six"]})
    r = decontaminate(probs, bench, DecontamParams(n=5, template_df=None))[0].to_pylist()[0]
    assert r["phrases"] == 2 and r["example_span"] == "one two three four five six"


def test_leetcode_train_not_contaminated_by_humaneval(shared_data):
    lc = leetcode(shared_data, "v0.2.0-train")
    he = humaneval(shared_data)
    probs = pa.table({"problem_id": [r["task_id"] for r in lc], "text": [r["statement"] for r in lc]})
    bench = pa.table({"benchmark": ["humaneval"] * len(he), "benchmark_id": [r["task_id"] for r in he],
                      "text": [r["prompt"] for r in he]})
    tab, st = decontaminate(probs, bench)
    assert st["n_problem_ngrams"] > 100_000
    assert st["n_flagged_problems"] == 0 < st["n_literal_problems"]
