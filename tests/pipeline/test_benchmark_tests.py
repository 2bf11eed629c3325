"""Benchmarks count every test (#40 goal 5): test visibility (silver.tests.visibility) filters the training views
only. HumanEval/34's only test equals its docstring example, so it is `public`; a benchmark still scores it, so
HumanEval has 164 of 164 programs in gold.program_pass_rates, best-of-N candidates and RL test rows. A train
problem whose tests are all public (LeetCode: the statement's examples) still gets no pass rate and no RL row.

Real data: all of HumanEval (references executed) and the first LeetCode v0.2.0 train problems.
"""
from __future__ import annotations

import gzip
import json

import pytest

from factory.stages.curate import curate
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from factory.sandbox import Limits
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

LC = "LeetCodeDataset-v0.2.0-train.jsonl.gz"


@pytest.fixture(scope="module")
def lake(tmp_path_factory, shared_data):
    base = tmp_path_factory.mktemp("benchmark-tests")
    lake = init_lake(base / "lake")
    ingest_source("humaneval", [shared_data / "humaneval" / "HumanEval.jsonl.gz"], lake=lake)
    rows = []
    with gzip.open(shared_data / "leetcodedataset" / LC, "rt") as fh:
        for line in fh:
            rows.append(line)
            if len(rows) == 5:
                break
    (base / "lc").mkdir()
    with gzip.open(base / "lc" / LC, "wt") as fh:
        fh.write("".join(rows))
    ingest_source("leetcode", [base / "lc" / LC], lake=lake)
    execute(lake, selection="reference", limits=Limits(cpu_s=10, memory_mb=1024), workers=2)
    curate(lake)
    return lake


def test_humaneval_34_is_public_only_and_still_scored(lake):
    vis = q(lake, "SELECT t.visibility, count(*) FROM silver.tests t JOIN silver.problems p USING (problem_id) "
                  "WHERE p.source = 'humaneval' AND p.source_id = 'HumanEval/34' GROUP BY 1")
    assert vis == [("public", 1)]
    rate = q(lake, "SELECT r.n_tests, r.all_passed FROM gold.program_pass_rates r JOIN silver.problems p "
                   "USING (problem_id) WHERE p.source_id = 'HumanEval/34' AND r.origin = 'reference'")
    assert rate == [(1, True)]
    tests = q(lake, "SELECT r.n_tests, r.n_public_tests, r.tests FROM gold.rl_problems r "
                    "WHERE r.source_id = 'HumanEval/34'")
    [(n, n_public, text)] = tests
    assert (n, n_public) == (1, 0) and json.loads(text)[0]["code"]


def test_humaneval_references_164_of_164(lake):
    scored = q(lake, "SELECT count(*), count(*) FILTER (WHERE all_passed AND complete) FROM gold.program_pass_rates r "
                     "JOIN silver.problems p USING (problem_id) WHERE p.source = 'humaneval' AND r.origin = 'reference'")
    assert scored == [(164, 164)]
    # every test of every benchmark problem counts: the denominators are the problems' whole suites
    whole = q(lake, "SELECT count(*) FROM gold.program_pass_rates r JOIN (SELECT problem_id, count(*) AS n FROM "
                    "silver.tests GROUP BY 1) t USING (problem_id) JOIN silver.problems p USING (problem_id) "
                    "WHERE p.source = 'humaneval' AND r.n_tests = t.n")
    assert whole == [(164,)]
    assert q(lake, "SELECT count(*) FROM gold.bon_candidates b JOIN silver.problems p USING (problem_id) "
                   "WHERE p.source = 'humaneval'") == [(164,)]
    assert q(lake, "SELECT count(*) FROM gold.rl_problems WHERE source = 'humaneval' AND split = 'test'") == [(164,)]
    funnel = {r["source"]: r for r in curate(lake).funnel}
    assert funnel["humaneval"]["test"] == 164 and funnel["humaneval"]["no_usable_tests"] == 0


def test_visibility_still_filters_training(lake):
    # LeetCode train problems: the statement's examples are their only tests (public) - no reward test, so no
    # pass rate and no RL row until `factory hidden-tests` adds hidden ones
    rows = q(lake, "SELECT p.problem_id, count(*) FILTER (WHERE t.visibility = 'hidden') FROM silver.problems p "
                   "JOIN silver.tests t USING (problem_id) WHERE p.source LIKE 'leetcode%' GROUP BY 1")
    public_only = {pid for pid, hidden in rows if hidden == 0}
    assert len(public_only) >= 3
    assert not q(lake, "SELECT problem_id FROM gold.program_pass_rates WHERE list_contains(?, problem_id)",
                 [sorted(public_only)])
    assert not q(lake, "SELECT problem_id FROM gold.rl_problems WHERE list_contains(?, problem_id)",
                 [sorted(public_only)])
    leak = q(lake, "SELECT rl_rows_all_reward_public, rl_public_only_excluded FROM gold.test_leakage "
                   "WHERE source LIKE 'leetcode%' AND split = 'train'")
    assert leak == [(0, len(public_only))]
