"""`factory hidden-tests` on real LeetCodeDataset rows: public-only problems (their tests are the statement's
examples) get hidden tests from the reference, so they come back into the RL view without revealing any reward
test in the prompt, and the reward on the exported rows still scores references 1.0 and wrong programs 0.0."""
from __future__ import annotations

import gzip
import json

import pyarrow.parquet as pq
import pytest

import factory.reward as reward_module
from factory.ingest.visibility import statement_text, visibility
from factory.release import create_release
from factory.release.export import export_release
from factory.sandbox import Limits, deserialize_value
from factory.stages.curate import curate
from factory.stages.execute import execute
from factory.stages.hidden_tests import run_hidden_tests
from factory.stages.ingest import ingest_source
from factory.testgen.input_mutation import inferred_contract
from factory.testgen.nodes import example_calls
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

N = 16


@pytest.fixture(scope="module")
def lake(tmp_path_factory, shared_data):
    base = tmp_path_factory.mktemp("hidden")
    src = shared_data / "leetcodedataset" / "LeetCodeDataset-v0.2.0-train.jsonl.gz"
    rows = [json.loads(line) for _, line in zip(range(N), gzip.open(src, "rt"))]
    path = base / "LeetCodeDataset-v0.2.0-train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lake = init_lake(base / "lake")
    ingest_source("leetcode", [path], lake=lake)
    execute(lake, selection="reference", limits=Limits(cpu_s=4.0))
    curate(lake)
    before = q(lake, "SELECT count(*) FROM gold.rl_problems")[0][0]
    report = run_hidden_tests(lake, per_problem=6, rounds=2, per_round=12)
    curate(lake)
    return base, lake, before, report


def test_public_only_problems_get_hidden_tests_and_return_to_the_rl_view(lake):
    _, lake, before, report = lake
    public_only = q(lake, "SELECT count(*) FROM (SELECT problem_id FROM silver.tests WHERE subset IS DISTINCT FROM "
                          "'hidden' GROUP BY 1 HAVING bool_and(coalesce(visibility, 'public') = 'public'))")[0][0]
    assert public_only >= N // 2          # LeetCode v0.2.0-train: most tests are the statement's examples
    assert report["tests_added"] > 0 and report["problems_with_tests"] >= public_only // 2, report
    after = q(lake, "SELECT count(*) FROM gold.rl_problems")[0][0]
    assert after >= before + report["problems_with_tests"] // 2, (before, after, report)
    # every generated test: hidden, validated by the reference, inside the examples' contract, never in the prompt
    rows = q(lake, """SELECT t.kind, t.code, t.input, t.expected, t.visibility, p.question, p.starter_code, v.valid,
                             (SELECT list(x.code) FROM silver.tests x WHERE x.problem_id = t.problem_id
                              AND x.kind = 'check') AS checks
                      FROM silver.tests t JOIN silver.problems p USING (problem_id)
                      LEFT JOIN gold.test_validation v USING (test_id) WHERE t.subset = 'hidden'""")
    assert len(rows) == report["tests_added"]
    for kind, code, inp, exp, vis, question, starter, valid, checks in rows:
        assert vis == "hidden" and valid is True
        assert visibility(statement_text(question, starter), kind, code, inp, exp) == "hidden"
        if kind == "check":   # a tree/linked-list problem (#40): written like the dataset's own check
            assert "tree_node(" in code or "list_node(" in code, code
            continue
        seeds = [list(e.args) + list(e.kwargs.values()) for c in checks for e in example_calls(c)]
        assert inferred_contract(seeds)(deserialize_value(inp)), inp


def test_rerun_adds_nothing(lake):
    _, lake, _, _ = lake
    n = q(lake, "SELECT count(*) FROM silver.tests WHERE subset = 'hidden'")[0][0]
    again = run_hidden_tests(lake, per_problem=6, rounds=2, per_round=12)
    assert again["tests_added"] == 0
    assert q(lake, "SELECT count(*) FROM silver.tests WHERE subset = 'hidden'")[0][0] == n


def test_exported_rewards_use_the_hidden_tests(lake, tmp_path):
    base, lake, _, _ = lake
    create_release("hidden", ["gold.rl_problems"], lake=lake, releases_dir=base / "releases")
    export_release("hidden", "verl", tmp_path / "verl", releases_dir=base / "releases")
    rows = pq.read_table(tmp_path / "verl" / "train.parquet").to_pylist()
    refs = dict(q(lake, "SELECT problem_id, code FROM silver.programs WHERE origin = 'reference'"))
    truths, answers, wrong = [], [], []
    for r in rows:
        gt = json.loads(r["reward_model"]["ground_truth"])
        prompt = r["prompt"][0]["content"]
        for inp, out in zip(gt.get("inputs", []), gt.get("outputs", [])):   # no reward test is in the prompt
            assert visibility(statement_text(prompt), "call", None, json.dumps(inp), json.dumps(out)) == "hidden"
        truths.append(r["reward_model"]["ground_truth"])
        answers.append(f"```python\n{refs[r['extra_info']['problem_id']]}\n```")
        method = gt.get("fn_name", gt.get("entry_point", "")).split(".")[-1]
        wrong.append(f"```python\nclass Solution:\n    def {method}(self, *a, **k):\n        raise ValueError\n```")
    assert len(rows) >= 4
    assert reward_module.score_completions(answers, truths) == [1.0] * len(rows)
    assert reward_module.score_completions(wrong, truths) == [0.0] * len(rows)
