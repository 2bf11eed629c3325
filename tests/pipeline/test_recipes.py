"""Seed-paper recipes (recipes/*.yaml) on real data: rules in order, per-rule removals, releases, stages, diff."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from factory.errors import FactoryError
from factory.stages.execute import add_samples, execute
from factory.stages.ingest import ingest_source
from factory.stages.mutate import run_mutate
from factory.recipes import available_recipes, load_recipe
from factory.recipes.diff import diff_recipes
from factory.recipes.rules import KINDS, check_rule_files
from factory.stages.recipe.decide import select_tests
from factory.stages.recipe.run import run_recipe
from factory.sandbox import Limits
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

POLICY = "policy-a"   # the mutants' code as samples of a named model (recipes refuse mutants as a model)
MBPPPLUS_ROWS = 40
PAPERS = {"acecoder", "klear", "skywork-or1", "acereason", "r1-code-interpreter", "deepcoder", "default"}


@pytest.fixture(scope="module")
def lake(tmp_path_factory, shared_data):
    """HumanEval + the first 40 MBPP+ rows: references executed (all HumanEval, 12 MBPP+); mutants (the 'policy')
    of 30 HumanEval problems executed.

    A slice of MBPP+, not all 378: executing any MBPP+ reference first fills the expected outputs of every MBPP+
    problem in the lake (41,124 reference runs, 88 s for one program at load 12), and 12 problems (~100 tests
    each) are enough for the 15-longest-inputs check (#43)."""
    import gzip

    lake = init_lake(tmp_path_factory.mktemp("recipes") / "lake")
    ingest_source("humaneval", None, lake=lake)
    plus = lake.parent / "mbppplus" / "MbppPlus.jsonl.gz"
    plus.parent.mkdir()
    with gzip.open(shared_data / "mbppplus" / "MbppPlus.jsonl.gz", "rt") as src, gzip.open(plus, "wt") as dst:
        dst.writelines(line for _, line in zip(range(MBPPPLUS_ROWS), src))
    ingest_source("mbppplus", [plus.parent], lake=lake)
    refs = [r[0] for r in q(lake, "SELECT p.program_id FROM silver.programs p JOIN silver.problems USING (problem_id) "
                                  "WHERE p.origin = 'reference' AND (source = 'humaneval' OR problem_id IN (SELECT "
                                  "problem_id FROM silver.problems WHERE source = 'mbppplus' ORDER BY problem_id "
                                  "LIMIT 12))")]
    execute(lake, selection="reference", limits=Limits(cpu_s=5.0), program_ids=refs)
    run_mutate(lake, ["humaneval"], max_per_program=4)
    some = [r[0] for r in q(lake, "SELECT program_id FROM silver.programs WHERE origin = 'mutant' "
                                  "ORDER BY problem_id, program_id LIMIT 120")]
    execute(lake, selection="mutants", limits=Limits(cpu_s=1.0, wall_min_s=4.0), program_ids=some)
    # model filters read samples of a named model, never mutants: the same programs stored as samples of POLICY
    rows = q(lake, "SELECT p.code, s.source_id FROM silver.programs p JOIN silver.problems s USING (problem_id) "
                   "WHERE p.program_id IN (SELECT unnest(?::VARCHAR[]))", [some])
    path = lake.parent / "policy_samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": sid, "solution": code}) + "\n" for code, sid in rows))
    ids = add_samples(lake, path, POLICY, "humaneval")
    execute(lake, selection="samples", limits=Limits(cpu_s=1.0, wall_min_s=4.0), program_ids=ids)
    return lake


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    return tmp_path_factory.mktemp("releases")


def quiet(*args, **kwargs):
    pass


def test_every_paper_has_a_recipe_and_rule_sql_reads_declared_tables():
    assert PAPERS <= set(available_recipes())
    check_rule_files()   # all kinds: file present, only catalog tables read
    for name in available_recipes():
        recipe = load_recipe(name)
        for rule in recipe.rules + [r for s in recipe.stages for r in s["rules"]]:
            assert rule["kind"] in KINDS
            assert rule["source"], f"{name}: rule {rule['name']} does not say where it comes from"


@pytest.mark.parametrize("body, message", [
    ("name: x\nrules: [{rule: nope}]\n", "unknown rule kind 'nope'"),
    ("name: x\nrules: [{rule: min_tests, min_test: 3}]\n", r"has no parameter\(s\) \['min_test'\]"),
    ("name: x\nrules: [{rule: min_tests, min_tests: -1}]\n", "must be >= 0"),
    ("name: x\nrules: [{rule: model_solves}]\n", "needs `model`"),
    ("name: x\nrules: [{rule: min_tests, min_tests: '{{ k }}'}]\n", r"\{\{ k \}\} is not a parameter"),
    ("name: x\nrule: []\n", r"unknown keys \['rule'\]"),
    ("name: x\nrules: [{rule: clean}]\nstages: [{name: s, top_potential: 2}]\n", "top_potential must be"),
    ("name: x\nrules: [{rule: clean}]\ntests: {select: longest_inputs}\n", "tests.k must be"),
    ("name: 'a b'\nrules: [{rule: clean}]\n", "`name` must be"),
])
def test_bad_recipe_files_name_the_file_and_field(tmp_path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(FactoryError, match=message) as err:
        load_recipe(str(path))
    assert str(path) in str(err.value) or "bad.yaml:" in str(err.value), str(err.value)   # names the file


def test_set_overrides_only_declared_params():
    assert load_recipe("deepcoder", {"max_tests": 7}).tests == {"select": "longest_inputs", "k": 7}
    with pytest.raises(FactoryError, match=r"--set \['max_test'\]: recipe deepcoder has no such parameter"):
        load_recipe("deepcoder", {"max_test": 7})


def test_longest_inputs_keeps_the_k_longest_in_original_order():
    tests = [{"input": "x" * n} for n in (3, 9, 1, 9, 5)]
    assert select_tests(tests, {"select": "longest_inputs", "k": 3}) == [tests[1], tests[3], tests[4]]
    assert select_tests(tests, {"select": "all"}) == tests
    assert select_tests([{"code": "assert f(1) == 2"}], {"select": "longest_inputs", "k": 1})


def test_deepcoder_recipe_rules_counts_release_and_card(lake, releases):
    # the pipeline (ingest idle: no --data-dir, dedup, decontam, curate, filter, release, export); the fixture
    # executed the references this test needs, the rest of MBPP+ is not run here (--skip execute, recorded)
    out = run_recipe("deepcoder", lake=lake, releases_dir=releases, date="20260101", log=quiet, skip=["execute"])
    rules = out["rules"]
    assert rules[0]["candidates"] == out["candidates"] == 164 + MBPPPLUS_ROWS
    for before, after in zip(rules, rules[1:]):
        assert after["candidates"] == before["remaining"] == before["candidates"] - before["removed"]
    assert rules[-1]["remaining"] == out["kept"]
    # the decisions agree with the counts: removed_by is the first failing rule, kept ones fail none
    removed = dict(q(lake, "SELECT removed_by, count(*) FROM gold.recipe_decisions WHERE recipe = 'deepcoder' "
                           "AND NOT kept GROUP BY 1"))
    assert removed == {r["rule"]: r["removed"] for r in rules if r["removed"]}
    # min_tests really removed problems with < 5 usable tests, and only those
    few = {r[0] for r in q(lake, "SELECT problem_id FROM gold.rl_problems WHERE n_tests < 5")}
    by_min = {r[0] for r in q(lake, "SELECT problem_id FROM gold.recipe_decisions WHERE recipe = 'deepcoder' "
                                    "AND list_contains(CAST(json_extract_string(failed_rules, '$[*]') AS VARCHAR[]), "
                                    "'min_tests')")}
    # (a problem with no RL row - e.g. HumanEval/34, whose one test the prompt shows - fails min_tests too)
    absent = {r[0] for r in q(lake, "SELECT problem_id FROM silver.problems WHERE problem_id NOT IN "
                                    "(SELECT problem_id FROM gold.rl_problems)")}
    assert few and few <= by_min and by_min - few <= absent
    # 15 longest inputs: MBPP+ problems have hundreds of tests; the kept 15 are the longest ones
    rows = q(lake, "SELECT problem_id, tests, n_tests, n_tests_available FROM gold.recipe_problems "
                   "WHERE recipe = 'deepcoder' AND n_tests_available > 15")
    assert rows and all(n == 15 for _, _, n, _ in rows)
    pid, tests, _, _ = rows[0]
    lengths = sorted((len(t["input"] or t["code"] or "") for t in json.loads(
        q(lake, "SELECT tests FROM gold.rl_problems WHERE problem_id = ?", [pid])[0][0])), reverse=True)
    assert sorted((len(t["input"] or t["code"] or "") for t in json.loads(tests)), reverse=True) == lengths[:15]

    # the release: loaded by `datasets`, one row per kept problem, card with every rule
    import datasets
    [name] = out["releases"]
    assert name == "deepcoder-20260101"
    ds = datasets.load_dataset(str(releases / name), "recipe_problems", cache_dir=str(releases / ".hf-cache"))
    assert sum(len(split) for split in ds.values()) == out["kept"]
    card = (releases / name / "README.md").read_text()
    for r in rules:
        assert f"| {r['position']} | {r['rule']} |" in card and f"| {r['candidates']} | {r['removed']} |" in card
    assert "blog: >= 5 unit tests" in card and '{"min_tests": 5}' in card
    # trainers take a recipe release like any other: verl rows, one per kept problem
    from factory.release.export import export_release
    export_release(name, "verl", releases / "verl", releases_dir=releases)
    import pyarrow.parquet as pq
    assert sum(pq.read_table(f).num_rows for f in (releases / "verl").glob("*.parquet")) == out["kept"]


def test_rerun_replaces_rows_and_reuses_the_release(lake, releases):
    # the same recipe as test_deepcoder_recipe_rules_counts_release_and_card (its skipped execute step included)
    first = run_recipe("deepcoder", lake=lake, releases_dir=releases, date="20260101", prepare=False, log=quiet,
                       skip=["execute"])
    rows = q(lake, "SELECT count(*) FROM gold.recipe_decisions WHERE recipe = 'deepcoder'")[0][0]
    again = run_recipe("deepcoder", lake=lake, releases_dir=releases, date="20260101", prepare=False, log=quiet,
                       skip=["execute"])
    assert q(lake, "SELECT count(*) FROM gold.recipe_decisions WHERE recipe = 'deepcoder'")[0][0] == rows
    assert again["releases"] == first["releases"] == ["deepcoder-20260101"]
    changed = run_recipe("deepcoder", lake=lake, releases_dir=releases, date="20260101", prepare=False,
                         overrides={"max_tests": 10}, log=quiet, skip=["execute"])
    assert changed["releases"] == ["deepcoder-20260101.2"]
    assert q(lake, "SELECT max(n_tests) FROM gold.recipe_problems WHERE recipe = 'deepcoder'")[0][0] == 10
    assert '"max_tests": 10' in (releases / "deepcoder-20260101.2" / "README.md").read_text()


def test_potential_stages_are_cumulative_releases(lake, releases):
    out = run_recipe("r1-code-interpreter", lake=lake, releases_dir=releases, date="20260101", prepare=False,
                     log=quiet, overrides={"policy_model": POLICY})
    n = out["kept"]
    assert n > 8
    assert out["stages"] == {f"stage{i}": math.ceil(f * n) for i, f in enumerate((0.25, 0.5, 0.75, 1.0), 1)}
    pot = dict(q(lake, "SELECT problem_id, potential FROM gold.recipe_problems WHERE recipe = 'r1-code-interpreter'"))
    stage_of = dict(q(lake, "SELECT problem_id, curriculum_stage FROM gold.recipe_problems "
                            "WHERE recipe = 'r1-code-interpreter'"))
    s1 = [p for p, s in stage_of.items() if s == 1]
    later = [p for p, s in stage_of.items() if s > 1]
    assert min(pot[p] for p in s1) >= max(pot[p] for p in later)
    import pyarrow.parquet as pq
    for i in range(1, 5):
        table = pq.read_table(releases / f"r1-code-interpreter-stage{i}-20260101" / "data" / "recipe_problems")
        assert table.num_rows == out["stages"][f"stage{i}"]
        assert max(table.column("curriculum_stage").to_pylist()) == i


def test_policy_difficulty_rule_and_per_model_difficulty(lake, releases):
    out = run_recipe("acereason", lake=lake, releases_dir=releases, date="20260101", prepare=False, log=quiet,
                     overrides={"policy_model": POLICY}, skip=["model_solves"])   # no strong model sampled here
    stage2 = {r[0] for r in q(lake, "SELECT problem_id FROM gold.recipe_problems WHERE recipe = 'acereason' "
                                    "AND stages LIKE '%stage2%'")}
    expect = {r[0] for r in q(lake, f"SELECT problem_id FROM gold.model_pass_rates WHERE model = '{POLICY}' AND n >= 4 "
                                    "AND correct <= 0.375 * n")} & {r[0] for r in q(
        lake, "SELECT problem_id FROM gold.recipe_decisions WHERE recipe = 'acereason' AND kept")}
    assert stage2 == expect and out["stages"]["stage2"] == len(expect) > 0
    md = dict(q(lake, "SELECT problem_id, model_difficulty FROM gold.recipe_problems WHERE recipe = 'acereason'"))
    pid = next(iter(stage2))
    correct = dict(q(lake, "SELECT model, correct FROM gold.model_pass_rates WHERE problem_id = ?", [pid]))
    assert json.loads(md[pid]) == correct


def test_diff_names_the_rule_that_dropped_each_problem(lake, releases, tmp_path):
    run_recipe("default", lake=lake, releases_dir=releases, date="20260101", prepare=False, log=quiet)
    d = diff_recipes("default", "deepcoder-20260101", releases_dir=releases)
    assert d["only_b"]["problems"] == 0
    kept = dict(q(lake, "SELECT recipe, count(*) FILTER (WHERE kept) FROM gold.recipe_decisions GROUP BY 1"))
    assert d["kept_a"] == kept["default"]
    assert sum(d["only_a"]["why_other_dropped"].values()) == d["kept_a"] - d["kept_both"] > 0
    assert set(d["only_a"]["why_other_dropped"]) <= {"min_tests", "minhash_dedup", "reference_verified", "clean"}
    # the CLI finds them under the lake's releases folder given only --lake (#43: every command takes --lake)
    from factory.recipes.diff import diff_text
    home = tmp_path / "home"
    (home / "lake").mkdir(parents=True)
    (home / "lake" / "releases").symlink_to(releases, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTORY_")}
    env["XDG_CONFIG_HOME"] = str(home)   # no user config names a releases folder
    out = subprocess.run([sys.executable, "-m", "factory.cli", "recipe", "diff", "default", "deepcoder-20260101",
                          "--lake", str(home / "lake")], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == diff_text(d)


def test_unknown_source_fails_without_writing(lake, tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("name: empty\nsources: [no-such-source]\nrules: [{rule: clean, source: test}]\n")
    runs = q(lake, "SELECT count(*) FROM ops.runs")[0][0]
    with pytest.raises(FactoryError, match="no candidate problems"):
        run_recipe(str(path), lake=lake, releases_dir=tmp_path / "rel", prepare=False, log=quiet)
    assert q(lake, "SELECT count(*) FROM ops.runs")[0][0] == runs
    assert not (tmp_path / "rel").exists()


def test_report_compares_the_recipes(lake, releases, tmp_path):
    from factory.report import build_report
    from factory.report.data import recipes
    from factory.lake import connect

    run_recipe("default", lake=lake, releases_dir=releases, date="20260101", prepare=False, log=quiet)
    con = connect(lake, read_only=True)
    try:
        data = recipes(con)
    finally:
        con.close()
    assert {"default", "deepcoder"} <= set(data)
    assert len(data["default"]["kept"]) == q(lake, "SELECT count(*) FROM gold.recipe_decisions "
                                                   "WHERE recipe = 'default' AND kept")[0][0]
    page = build_report(lake, tmp_path / "report")
    assert (tmp_path / "report" / "recipes.png").stat().st_size > 10_000
    assert "Recipes compared" in page.read_text()


def test_a_recipe_that_keeps_nothing_cuts_no_release(lake, tmp_path):
    out = run_recipe("skywork-or1", lake=lake, releases_dir=tmp_path / "rel", prepare=False, log=quiet,
                     overrides={"policy_model": POLICY, "min_samples": 1000},
                     skip=["embedding_dedup", "quality_vote"])
    assert out["kept"] == 0 and out["releases"] == []
    assert q(lake, "SELECT removed_by, count(*) FROM gold.recipe_decisions WHERE recipe = 'skywork-or1' "
                   "AND removed_by = 'model_correct_range' GROUP BY 1")
    assert not (tmp_path / "rel").exists() or not any((tmp_path / "rel").iterdir())
