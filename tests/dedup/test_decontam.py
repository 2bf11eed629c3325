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


RAW = DecontamParams(template_df=None, ignore_numeric=False)   # every n-gram matched (the papers' plain rule)


def test_matches_brute_force_9grams(tables):
    probs, bench = tables
    tab, st = decontaminate(probs, bench, RAW)
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
    same = {pid for pid, bid in got if pid == bid}
    assert len(same) == 294  # sanitized prompts sharing a 9-gram with their own MBPP statement
    assert st["n_flagged_problems"] == 308
    norm = {pid: " ".join(tokenize(t)) for pid, t in zip(probs["problem_id"].to_pylist(), probs["text"].to_pylist())}
    for r in tab.to_pylist():  # span is contiguous (normalised) problem text
        assert r["example_span"] in norm[r["problem_id"]]
        assert len(r["example_span"].split()) >= min(9, r["benchmark_ngrams"])


def test_rules_reduce_boilerplate_matches(tables):
    probs, bench = tables
    any_, _ = decontaminate(probs, bench, RAW)
    k2, _ = decontaminate(probs, bench, DecontamParams(min_matches=2, template_df=None, ignore_numeric=False))
    df1, _ = decontaminate(probs, bench, DecontamParams(max_benchmark_df=1, template_df=None, ignore_numeric=False))
    cross = lambda t: sum(a != b for a, b in zip(t["problem_id"].to_pylist(), t["benchmark_id"].to_pylist()))
    assert cross(any_) == 653 and cross(k2) == 136 and cross(df1) == 10
    assert min(k2["matched_ngrams"].to_pylist()) >= 2
    same = lambda t: len({a for a, b in zip(t["problem_id"].to_pylist(), t["benchmark_id"].to_pylist()) if a == b})
    assert same(k2) == 267 and same(df1) == 278


def test_template_ngrams_are_not_contamination_but_copies_are(tables):
    """MBPP's statement template ("write a python function to ...") links sanitized-MBPP prompts to 653 other
    MBPP tasks; dropping each source's template n-grams (document frequency) leaves 62 such cross-task pairs,
    while 289 of the 294 prompts still match their own MBPP task (the 5 others share only template words with
    it; `factory decontam`'s lineage check pairs them by task id)."""
    probs, bench = tables
    tab, st = decontaminate(probs, bench)
    pairs = list(zip(tab["problem_id"].to_pylist(), tab["benchmark_id"].to_pylist()))
    assert sum(a != b for a, b in pairs) == 62
    assert len({a for a, b in pairs if a == b}) == 289
    assert st["n_template_ngrams"] == 76
    # a benchmark task pasted into a template-heavy statement is still caught
    text = bench["text"].to_pylist()[0]
    planted = pa.table({"problem_id": ["copy"], "text": ["Write a python function to " + text + " Example 1: 1 2 3"]})
    hit, _ = decontaminate(planted, bench.slice(0, 50))
    assert bench["benchmark_id"].to_pylist()[0] in hit["benchmark_id"].to_pylist()


def test_digit_runs_are_example_data():
    probs = pa.table({"problem_id": ["p"], "text": ["nums = [1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1] in the example"]})
    bench = pa.table({"benchmark": ["b"], "benchmark_id": ["1"], "text": ["Input: 1 0 0 1 0 1 0 0 0 1 1 output 3"]})
    assert decontaminate(probs, bench)[0].num_rows == 0
    assert decontaminate(probs, bench, DecontamParams(ignore_numeric=False))[0].num_rows == 1


def test_span_is_first_contiguous_run():
    probs = pa.table({"problem_id": ["p"], "text": ["zero one two three four five six seven eight nine ten X eleven"]})
    bench = pa.table({"benchmark": ["b"], "benchmark_id": ["1"], "text": ["one two three four five six seven eight nine ten"]})
    tab, _ = decontaminate(probs, bench, DecontamParams(n=5, template_df=None))
    r = tab.to_pylist()[0]
    assert r["matched_ngrams"] == 6 and r["example_span"] == "one two three four five six seven eight nine ten"


def test_leetcode_train_not_contaminated_by_humaneval(shared_data):
    lc = leetcode(shared_data, "v0.2.0-train")
    he = humaneval(shared_data)
    probs = pa.table({"problem_id": [r["task_id"] for r in lc], "text": [r["statement"] for r in lc]})
    bench = pa.table({"benchmark": ["humaneval"] * len(he), "benchmark_id": [r["task_id"] for r in he],
                      "text": [r["prompt"] for r in he]})
    tab, st = decontaminate(probs, bench, DecontamParams(min_matches=2))
    assert st["n_problem_ngrams"] > 100_000
    assert tab.num_rows <= 5
