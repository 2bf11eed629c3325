"""The factory's augmented suites vs CodeContests' own, CodeContests+ style (#41), on a real slice of
../shared/data/codecontests_subset300: references executed, AST mutants executed, `factory augment` on stdio
problems (the dataset's inputs mutated, expected outputs from the reference), then TPR / TNR per suite.

bench/codecontests_suites.py@3d3f87a runs the same on every eligible problem; docs/test-generation.md ("Suites: ...")."""
from __future__ import annotations

import json
import random

import pytest

from factory.ingest.hub.suites import AUGMENTED, UNLABELLED_SUITES, caught_only_by, suite_rates, valid_problems
from factory.lake import connect
from factory.sandbox import Limits
from factory.stages.augment import run_augment
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from factory.stages.mutate import run_mutate
from factory.testgen.stdio_mutation import generate_stdio_inputs, key, parse, stdio_contract, structural
from tests.lakeutil import init_lake

PROBLEMS = 10


@pytest.fixture(scope="module")
def records(shared_data) -> list[dict]:
    """The first 10 problems whose reference passes all their tests (the dataset's own verification file)."""
    folder = shared_data / "codecontests_subset300"
    if not folder.is_dir():
        pytest.skip("codecontests_subset300 not in the shared data")
    verified = {r[0]: r[1] == r[2] for r in json.loads((folder / "verify_reference_solutions.json").read_text())}
    rows = [json.loads(line) for line in (folder / "codecontests_subset300.jsonl").open()]
    return [r for r in rows if verified.get(r["task_id"])][:PROBLEMS]


def test_stdin_mutants_keep_shape_counts_and_contract(records):
    """Every generated input of the slice keeps a dataset input's shape and count fields and the seeds' facts."""
    made = 0
    for rec in records:
        seeds = [t["input"] for t in rec["tests"]]
        contract = stdio_contract(seeds)
        shapes = {tuple(len(tokens) for tokens in parse(s)): parse(s) for s in seeds}
        seen = {key(s) for s in seeds}
        for text, _ in generate_stdio_inputs(seeds, 20, random.Random(rec["task_id"]), seen, 20000):
            lines = parse(text)
            shape = tuple(len(tokens) for tokens in lines)
            assert shape in shapes, (rec["task_id"], text)
            assert contract.holds(lines)
            assert key(text) not in {key(s) for s in seeds}
            made += 1
        for s in seeds:     # a count field of a seed (n before n lines) is one that mutation keeps
            lines = parse(s)
            if len(lines) > 2 and len(lines[0]) == 1 and lines[0][0] == str(len(lines) - 1):
                assert (0, 0) in structural(lines)
    assert made >= 5 * len(records)


def test_contract_rejects_what_no_seed_shows():
    seeds = ["4\n1 2\n2 3\n3 4\n", "3\n1 3\n2 3\n"]          # trees on 1..n with a < b on every edge
    c = stdio_contract(seeds)
    assert c.holds(parse("4\n1 2\n1 3\n3 4\n"))
    assert not c.holds(parse("4\n1 2\n2 1\n3 4\n"))          # a > b (and a repeated edge)
    assert not c.holds(parse("4\n1 2\n1 2\n3 4\n"))          # repeated edge, not connected
    assert not c.holds(parse("4\n1 2\n2 3\n1 3\n"))          # a cycle
    assert not c.holds(parse("4\n0 2\n2 3\n3 4\n"))          # 0: no seed has one
    assert not c.holds(parse("4\n1 2\n2 3\n3 5\n"))          # above n
    c = stdio_contract(seeds + ["1\n"])                      # a one-vertex tree has no edge: it vetoes no fact
    assert not c.holds(parse("3\n1 2\n1 2\n"))             # 538_E's hand-checked invalid input (a repeated edge)


def test_augmented_suite_catches_more_and_keeps_every_reference(tmp_path, records):
    """On 10 real problems: `factory augment` adds stdio tests, the reference passes every one of them (TPR
    stays 1.0 in every suite: a wrong expected output would lower it), and the augmented suites reject
    strictly more of the demonstrably wrong mutants than the suites they extend (TNR grows: a run that adds
    nothing, or tests that kill nothing, fails here)."""
    path = tmp_path / "codecontests_subset300.jsonl"     # a slice of the real file, in the test's own folder
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    lake = init_lake(tmp_path / "lake")
    limits = Limits(cpu_s=2.0)
    ingest_source("codecontests", [path], lake=lake)
    execute(lake, selection="reference", workers=2, limits=limits)
    run_mutate(lake, None, max_per_program=10, seed=0)
    execute(lake, selection="mutants", workers=2, limits=limits)
    public = run_augment(lake, None, public_only=True, rounds=2, limits=limits, workers=2)   # from the examples
    full = run_augment(lake, None, rounds=2, limits=limits, workers=2)            # past the whole original suite
    assert public["tests_added"] > 0 and full["tests_added"] > 0, (public, full)
    con = connect(lake, read_only=True)
    try:
        problems = valid_problems(con, "codecontests")
        assert len(problems) == PROBLEMS
        ref_on_augment = con.execute("""
            SELECT e.status, count(*) FROM silver.tests t JOIN silver.programs r
              ON r.problem_id = t.problem_id AND r.origin = 'reference'
            JOIN gold.latest_executions e ON e.program_id = r.program_id AND e.test_id = t.test_id
            WHERE t.origin = 'augment' GROUP BY 1""").fetchall()
        n_augment = con.execute("SELECT count(*) FROM silver.tests WHERE origin = 'augment'").fetchone()[0]
        rates = {r["suite"]: r for r in suite_rates(con, "codecontests", UNLABELLED_SUITES, wrong=("mutant",),
                                                    problems=problems)}
        misses = caught_only_by(con, "codecontests", UNLABELLED_SUITES["original"], AUGMENTED, wrong=("mutant",),
                                problems=problems)
    finally:
        con.close()
    assert ref_on_augment == [("pass", n_augment)]            # the reference judged on and passing every new test
    assert all(r["tpr"] == 1.0 and r["correct"] == PROBLEMS for r in rates.values()), rates
    wrong = {r["incorrect"] for r in rates.values()}
    assert len(wrong) == 1 and wrong.pop() > 0                # every suite scored on the same wrong programs
    assert rates["original"]["tnr"] < rates["original+augmented"]["tnr"] == 1.0
    assert rates["public"]["tnr"] < rates["public+augmented"]["tnr"]
    assert rates["public"]["tnr"] <= rates["original"]["tnr"]
    assert len(misses) == round((1 - rates["original"]["tnr"]) * rates["original"]["incorrect"]) > 0
