"""The recipe runner (#43 goals 6 and 8a): no import circle between the runner and the `recipe run` entry point,
a sample step whose model already has n samples per selected problem in the lake is current (and recorded), and a
model transformers cannot load gets the factory's own one-line error naming the ways out.

The lake is a real slice of ../shared/data (tests/pipeline/recipe_slice.py); the samples are the user's own, brought
with `factory execute --samples FILE --model NAME` for a model that is not on this machine (so a sample step
that tried to load it would fail)."""
from __future__ import annotations

import json

import pytest

from factory.errors import FactoryError
from factory.stages.recipe.run import run_recipe
from tests.conftest import REPO_ROOT
from tests.lakeutil import factory_cli, init_lake
from tests.lakeutil import query as q
from tests.pipeline.recipe_slice import build_slice

MODEL = "acme-research/coder-not-on-this-machine"   # not a local path, not in the HF cache
N_PROBLEMS = 3


def quiet(*args, **kwargs):
    pass


def _intra_package_imports() -> dict[str, set[str]]:
    from tests.foundation.test_layout import imports

    pkg = REPO_ROOT / "factory" / "stages" / "recipe"
    mods = {f"factory.stages.recipe.{p.stem}": p for p in pkg.glob("*.py") if p.stem != "__init__"}
    return {m: {i for i in imports(p) if i in mods and i != m} for m, p in mods.items()}


def test_the_recipe_modules_import_no_circle():
    graph = _intra_package_imports()
    assert "factory.stages.recipe.run" not in graph["factory.stages.recipe.pipeline"], \
        "the runner (pipeline.py) must not import the entry point (run.py)"

    def reach(start, seen):
        for nxt in graph.get(start, ()):
            if nxt not in seen:
                seen.add(nxt)
                reach(nxt, seen)
        return seen

    circles = sorted(m for m in graph if m in reach(m, set()))
    assert not circles, f"import circle among {circles}: {graph}"


def test_an_unloadable_model_gets_one_factory_line_naming_the_ways_out(hf_offline):
    pytest.importorskip("transformers")
    from factory.generation import make_backend

    with pytest.raises(FactoryError) as err:
        make_backend("transformers", MODEL)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"cannot load model {MODEL!r}")
    for way in ("factory execute --samples FILE", "--backend openai", "local path"):
        assert way in text, text


@pytest.fixture(scope="module")
def lake_with_user_samples(tmp_path_factory, shared_data):
    base = tmp_path_factory.mktemp("recipe-runner")
    build_slice(base / "data", shared_data, n=3)
    lake = init_lake(base / "lake")
    r = factory_cli("ingest", "--all", "--data-dir", str(base / "data"), lake=lake)
    assert r.returncode == 0, r.stderr
    # the problems klear's sample step selects (sample_limit: the first N candidates), 4 samples each: the
    # reference with a distinct trailing comment, brought per source as a user would
    refs = q(lake, "SELECT pb.problem_id, pb.source, pb.source_id, pr.code FROM silver.problems pb "
                   "JOIN silver.programs pr USING (problem_id) WHERE pr.origin = 'reference' "
                   "QUALIFY row_number() OVER (PARTITION BY pb.problem_id ORDER BY pr.program_id) = 1 "
                   "ORDER BY pb.problem_id LIMIT ?", [N_PROBLEMS])
    candidates = [r[0] for r in q(lake, "SELECT problem_id FROM silver.problems ORDER BY problem_id LIMIT ?",
                                  [N_PROBLEMS])]
    assert [r[0] for r in refs] == candidates
    for source in sorted({r[1] for r in refs}):
        samples = base / f"samples-{source}.jsonl"
        samples.write_text("".join(json.dumps({"task_id": sid, "solution": f"{code}\n# sample {i}\n"}) + "\n"
                                   for _, src, sid, code in refs if src == source for i in range(4)))
        r = factory_cli("execute", "--samples", str(samples), "--model", MODEL, "--source", source,
                        "--workers", "2", lake=lake)
        assert r.returncode == 0, r.stderr
    return {"lake": lake, "base": base}


SETTINGS = {"strong_model": MODEL, "sample_limit": N_PROBLEMS}


def test_a_sample_step_with_enough_samples_in_the_lake_is_current(lake_with_user_samples, hf_offline):
    # offline: loading MODEL would fail fast, and the step must not try
    env = lake_with_user_samples
    out = run_recipe("klear", lake=env["lake"], releases_dir=env["base"] / "releases",
                     export_dir=env["base"] / "exports", date="20260101",
                     overrides={**SETTINGS, "n_samples": 4}, log=quiet)
    steps = {s["step"]: s for s in out["steps"]}
    assert steps["sample"]["status"] == "current", steps["sample"]
    assert steps["sample"]["summary"] == (f"model {MODEL} already has >= 4 samples for each of the {N_PROBLEMS} "
                                          "selected problems in the lake: not sampled again")
    recorded = q(env["lake"], "SELECT status, summary FROM ops.pipeline_steps WHERE recipe = 'klear' "
                              "AND step = 'sample'")
    assert recorded == [("current", steps["sample"]["summary"])]
    assert q(env["lake"], "SELECT count(*) FROM silver.programs WHERE origin = 'sample'")[0][0] == 4 * N_PROBLEMS
    # every step says how long it took and how much memory it held; measuring it leaves the process's own
    # high-water mark alone (what `/usr/bin/time` reports for the whole run)
    import resource
    assert all(s["seconds"] >= 0 and s["peak_rss_mb"] > 0 for s in out["steps"])
    # (VmRSS and the high-water mark come from per-CPU page counters the kernel syncs lazily: they may disagree by
    # a few pages, which straddled a MiB boundary once, 538 vs 539; a reset high-water mark falls far lower)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 + 2 >= \
        max(s["peak_rss_mb"] for s in out["steps"])
    # the samples were executed: the strong-model rule reads their pass rates
    assert q(env["lake"], "SELECT count(*) FROM gold.model_pass_rates WHERE model = ?", [MODEL])[0][0] >= 1


def test_a_sample_step_short_of_samples_names_the_ways_out(lake_with_user_samples, hf_offline):
    env = lake_with_user_samples
    with pytest.raises(FactoryError, match=r"cannot load model .*Ways out: bring its samples") as err:
        run_recipe("klear", lake=env["lake"], releases_dir=env["base"] / "releases",
                   export_dir=env["base"] / "exports", date="20260101",
                   overrides={**SETTINGS, "n_samples": 5}, log=quiet)
    assert "\n" not in str(err.value)
