"""Suite adequacy on real HumanEval+ / MBPP+ problems in a real lake and sandbox: `factory augment` kills
surviving mutants with tests the reference passes, re-running it adds nothing, and `factory suite-reduce`
keeps the full suite's kill set with fewer tests.

The suites are the problems' *base* inputs (the original HumanEval / MBPP tests, as EvalPlus ships them),
so mutants survive them, as they survive the datasets' own tests."""
from __future__ import annotations

import gzip
import json
import random

import pytest

from factory.testgen.input_mutation import generate_inputs, greedy_rank, killed_by, mutate_value
from factory.stages.augment import run_augment, run_suite_reduce
from factory.stages.curate import curate
from factory.errors import FactoryError
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from factory.stages.mutate import run_mutate
from factory.sandbox import Limits, deserialize_value
from tests.lakeutil import factory_cli, init_lake
from tests.lakeutil import query as q

LIMITS = Limits(cpu_s=0.5, wall_min_s=3.0)   # mutants that loop forever must not cost seconds each
HE = ["HumanEval/0", "HumanEval/2", "HumanEval/12", "HumanEval/20", "HumanEval/26", "HumanEval/33",
      "HumanEval/58", "HumanEval/63"]
MBPP = ["Mbpp/2", "Mbpp/3", "Mbpp/4", "Mbpp/6"]

SURVIVING = """
    WITH v AS (SELECT test_id FROM gold.test_validation WHERE valid)
    SELECT m.program_id FROM silver.programs m JOIN gold.latest_executions e USING (program_id)
    JOIN v USING (test_id) WHERE m.origin = 'mutant' GROUP BY 1 HAVING bool_and(e.status = 'pass')"""


def _base_only(src, dst, ids):
    """The chosen records of an EvalPlus file with their plus inputs dropped (real data, smaller suites)."""
    rows = [json.loads(line) for line in gzip.open(src, "rt")]
    rows = [dict(r, plus_input=[]) for r in rows if r["task_id"] in ids]
    assert len(rows) == len(ids)
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


def _counts(lake):
    return q(lake, "SELECT (SELECT count(*) FROM silver.tests), (SELECT count(DISTINCT test_id) FROM silver.tests), "
                   "(SELECT count(*) FROM silver.executions)")[0]


@pytest.fixture(scope="module")
def lake(tmp_path_factory, shared_data):
    tmp = tmp_path_factory.mktemp("augment")
    lake = init_lake(tmp / "lake")
    ingest_source("humanevalplus", [_base_only(shared_data / "humanevalplus" / "HumanEvalPlus.jsonl.gz",
                                               tmp / "he.jsonl", HE)], lake=lake, source="he-base")
    ingest_source("mbppplus", [_base_only(shared_data / "mbppplus" / "MbppPlus.jsonl.gz", tmp / "mbpp.jsonl", MBPP)],
                  lake=lake, source="mbpp-base")
    execute(lake, selection="reference")
    run_mutate(lake, max_per_program=8)
    execute(lake, selection="mutants", limits=LIMITS)
    curate(lake)
    before = {"adequacy": {r[0]: r[1:] for r in q(lake, "SELECT source, mutants, killed, surviving, mutation_score "
                                                         "FROM gold.suite_adequacy")},
              "surviving": {r[0] for r in q(lake, SURVIVING)}}
    report = run_augment(lake, budget=6, seed=0, rounds=3, per_round=16, limits=LIMITS)
    curate(lake)
    return lake, before, report


def test_augment_kills_surviving_mutants(lake):
    lake, before, report = lake
    assert before["surviving"], "the base suites should leave mutants alive"
    after = {r[0] for r in q(lake, SURVIVING)}
    killed = before["surviving"] - after
    assert killed and after < before["surviving"]
    assert report["tests_added"] > 0
    assert report["tests_added"] == sum(s["tests_added"] for s in report["by_source"].values())
    assert sum(s["survivors_killed"] for s in report["by_source"].values()) == len(killed)
    # every augment test kills a mutant that survived the dataset suite
    rows = q(lake, """
        SELECT t.test_id, list(e.program_id) FILTER (WHERE e.status <> 'pass')
        FROM silver.tests t JOIN gold.latest_executions e USING (test_id)
        JOIN silver.programs m ON m.program_id = e.program_id AND m.origin = 'mutant'
        WHERE t.origin = 'augment' GROUP BY 1""")
    assert len(rows) == report["tests_added"]
    for test_id, kills in rows:
        assert set(kills or []) & before["surviving"], test_id
    # the per-source view moves the same way: fewer survivors, higher score, augment tests counted
    adequacy = {r[0]: r[1:] for r in q(lake, "SELECT source, mutants, killed, surviving, mutation_score, augment_tests "
                                             "FROM gold.suite_adequacy")}
    assert set(adequacy) == set(before["adequacy"]) == {"he-base", "mbpp-base"}
    for source, (mutants, killed_n, surviving, score, augment_tests) in adequacy.items():
        b_mutants, b_killed, b_surviving, b_score = before["adequacy"][source]
        assert mutants == b_mutants and killed_n >= b_killed and score >= b_score
        assert surviving == mutants - killed_n
    total = sum(a[4] for a in adequacy.values())
    assert total == report["tests_added"]
    assert sum(a[2] for a in adequacy.values()) == sum(b[2] for b in before["adequacy"].values()) - len(killed)


def test_augment_tests_are_passed_by_the_reference(lake):
    lake, _, _ = lake
    rows = q(lake, """
        SELECT t.test_id, t.kind, t.expected, t.subset, t.input, e.status, v.valid
        FROM silver.tests t JOIN silver.programs r ON r.problem_id = t.problem_id AND r.origin = 'reference'
        LEFT JOIN gold.latest_executions e ON e.program_id = r.program_id AND e.test_id = t.test_id
        LEFT JOIN gold.test_validation v ON v.test_id = t.test_id
        WHERE t.origin = 'augment'""")
    assert rows
    for test_id, kind, expected, subset, text, status, valid in rows:
        assert (kind, subset, status, valid) == ("call", "augment", "pass", True), test_id
        assert expected is not None and isinstance(deserialize_value(text), list)
    # no augment input repeats an input the problem already had
    dup = q(lake, "SELECT count(*) FROM silver.tests a JOIN silver.tests b USING (problem_id, input) "
                  "WHERE a.origin = 'augment' AND a.test_id <> b.test_id")
    assert dup == [(0,)]


def test_augment_rerun_is_idempotent(lake):
    lake, _, _ = lake
    before = _counts(lake)
    again = run_augment(lake, budget=6, seed=0, rounds=3, per_round=16, limits=LIMITS)
    assert again["tests_added"] == 0 and again["verdicts"] == 0
    assert _counts(lake) == before and before[0] == before[1]
    summary = q(lake, "SELECT message FROM ops.runs WHERE run_id = ?", [again["run_id"]])[0][0]
    assert json.loads(summary)["tests_added"] == 0


def test_suite_reduce_keeps_the_kill_set(lake):
    lake, _, _ = lake
    report = run_suite_reduce(lake, k=3)
    rows = q(lake, "SELECT problem_id, full_tests, reduced_tests, top_k_tests, full_killed, reduced_killed, "
                   "kill_set_unchanged, reduced_test_ids, top_k_test_ids, k FROM gold.reduced_suites")
    assert len(rows) == report["problems"] == len(HE) + len(MBPP)
    # recompute both kill sets from the verdicts, independently of the stage's own bookkeeping
    kills = {}
    for problem_id, test_id, mutant in q(lake, """
            SELECT t.problem_id, t.test_id, e.program_id FROM gold.test_validation v JOIN silver.tests t USING (test_id)
            JOIN gold.latest_executions e USING (test_id) JOIN silver.programs m ON m.program_id = e.program_id
            WHERE v.valid AND m.origin = 'mutant' AND m.problem_id = t.problem_id AND e.status <> 'pass'"""):
        kills.setdefault(problem_id, {}).setdefault(test_id, set()).add(mutant)
    valid = dict(q(lake, "SELECT t.problem_id, count(*) FROM gold.test_validation v JOIN silver.tests t "
                         "USING (test_id) WHERE v.valid GROUP BY 1"))
    shrunk = 0
    for pid, full_n, red_n, top_n, full_k, red_k, same, red_ids, top_ids, k in rows:
        by_test = kills.get(pid, {})
        full = set().union(*by_test.values()) if by_test else set()
        reduced = set().union(*(by_test.get(t, set()) for t in json.loads(red_ids)))
        assert reduced == full and same and full_k == red_k == len(full), pid
        assert full_n == valid[pid] and 1 <= red_n <= full_n and len(json.loads(red_ids)) == red_n
        assert k == 3 and top_n == min(3, full_n) and json.loads(top_ids)[:min(red_n, 3)] == json.loads(red_ids)[:3]
        shrunk += red_n < full_n
    assert shrunk > 0
    assert report["by_source"]["he-base"]["kill_set_changed"] == 0


def test_suite_reduce_refuses_a_stale_validation(lake):
    lake, _, _ = lake
    # a test newer than the last curate has no validation row: the reduction would silently ignore it
    cli = factory_cli("suite-reduce", "--k", "5", lake=lake)
    assert cli.returncode == 0, cli.stderr
    assert "problems reduced (k=5)" in cli.stdout
    from factory.lake.commit import stage_run
    pid = q(lake, "SELECT problem_id FROM silver.problems ORDER BY problem_id LIMIT 1")[0][0]
    with stage_run("test", {}, lake=lake) as run:
        run.write("silver.tests", [{"test_id": "stale-test", "problem_id": pid, "ordinal": 999, "kind": "call",
                                    "input": "[1]", "expected": "1", "comparison": "exact", "origin": "augment"}])
    try:
        with pytest.raises(FactoryError, match="1 tests have no validation row.*run `factory curate` first"):
            run_suite_reduce(lake)
    finally:
        with stage_run("test", {}, lake=lake) as run:
            run.delete("silver.tests", "test_id = 'stale-test'")


def test_generation_is_deterministic_and_typed():
    seeds = [[[3, 1, 2], "abc", 4, (1, "x")], [[], "", 0, (2, "y")]]
    a = generate_inputs(seeds, 30, random.Random("s"), set(), 500)
    assert a == generate_inputs(seeds, 30, random.Random("s"), set(), 500)
    assert a != generate_inputs(seeds, 30, random.Random("t"), set(), 500)
    assert len({text for text, _ in a}) == len(a) == 30
    for _, args in a:
        assert [type(x) for x in args] == [list, str, int, tuple] and len(args[3]) == 2
    rng = random.Random(0)
    value = {"k": [1, 2.5, "s", True]}
    assert all(isinstance(mutate_value(value, rng), dict) for _ in range(20)) and value == {"k": [1, 2.5, "s", True]}
    assert {type(mutate_value(True, rng)) for _ in range(5)} == {bool}


def test_greedy_rank_covers_minimally():
    kills = {"a": frozenset({1, 2}), "b": frozenset({2, 3}), "c": frozenset({1, 2, 3}), "d": frozenset(),
             "e": frozenset({4}), "f": frozenset({4})}
    ranking, cover = greedy_rank(kills, {t: i for i, t in enumerate("abcdef")})
    assert ranking[:cover] == ["c", "e"] and killed_by(kills, ranking[:cover]) == killed_by(kills, kills)
    assert ranking == ["c", "e", "a", "b", "f", "d"]   # then most kills, ties by ordinal
    assert greedy_rank({"x": frozenset(), "y": frozenset()}, {"x": 1, "y": 0}) == (["y", "x"], 1)
    assert greedy_rank({}, {}) == ([], 0)
