"""One documented path, one dataset (#40 goal 1): docs/tour.md's stage-by-stage commands and `factory recipe run
default` build the same release from the same data, row for row.

Real data: a small slice of ../shared/data (tests/pipeline/recipe_slice.py: MBPP+ and the MBPP rows of the same
tasks, MBPP train rows, LeetCode train rows whose only tests are the statement's examples, KodCode). One lake is
built by running docs/tour.md's commands as written (the data folder swapped for the slice), the other by the one
command; their releases are compared row by row.
"""
from __future__ import annotations

import re
import shlex

import pytest

from factory.stages.recipe.run import run_recipe
from tests.conftest import REPO_ROOT
from tests.lakeutil import factory_cli, init_lake
from tests.lakeutil import query as q
from tests.pipeline.recipe_slice import build_slice

FIRST, LAST = "factory init", "factory recipe run default --no-prepare"


def readme_path() -> list[str]:
    """docs/tour.md's stage-by-stage commands from `factory init` to the default release, comments dropped."""
    text = (REPO_ROOT / "docs" / "tour.md").read_text()
    section = text.split("## The pipeline, stage by stage", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.+?)\n```", section, flags=re.S)
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    lines = [line for line in lines if line.startswith("factory ")]
    return lines[lines.index(FIRST):lines.index(LAST) + 1]


def test_the_readme_path_runs_every_check_after_the_data_it_needs():
    steps = [" ".join(c.split()[:2]) for c in readme_path()]
    assert steps == ["factory init", "factory ingest", "factory dedup", "factory execute", "factory hidden-tests",
                     "factory decontam", "factory curate", "factory recipe"]
    # the same order as the default recipe's pipeline (the one command)
    from factory.recipes import load_recipe
    recipe = [s.stage for s in load_recipe("default").pipeline]
    assert recipe[:recipe.index("curate") + 1] == ["ingest", "dedup", "execute", "hidden-tests", "decontam", "curate"]


ROW_COLUMNS = ("problem_id", "source", "source_id", "split", "prompt", "tests", "n_tests", "public_tests",
               "n_public_tests", "pass_rate", "checker", "cpu_s", "model_difficulty")


@pytest.fixture(scope="module")
def lakes(tmp_path_factory, shared_data):
    base = tmp_path_factory.mktemp("documented-path")
    data = base / "data"
    build_slice(data, shared_data, n=5)
    readme_lake, releases = base / "readme-lake", base / "readme-releases"
    for cmd in readme_path():
        argv = [a.replace("../shared/data", str(data)) for a in shlex.split(cmd)[1:]]
        r = factory_cli(*argv, lake=readme_lake, releases=releases)
        assert r.returncode == 0, f"{cmd}: {r.stderr[-2000:]}"
    recipe_lake = init_lake(base / "recipe-lake")
    out = run_recipe("default", lake=recipe_lake, data_dir=data, releases_dir=base / "recipe-releases",
                     export_dir=base / "exports", log=lambda *a, **k: None)
    return readme_lake, recipe_lake, out


def rows(lake) -> list[tuple]:
    cols = ", ".join(ROW_COLUMNS)
    return q(lake, f"SELECT {cols} FROM gold.recipe_problems WHERE recipe = 'default' ORDER BY problem_id")


def test_readme_and_recipe_give_the_same_release_row_for_row(lakes):
    readme_lake, recipe_lake, out = lakes
    a, b = rows(readme_lake), rows(recipe_lake)
    assert len(a) == out["kept"] > 0
    assert [r[0] for r in a] == [r[0] for r in b]
    for x, y in zip(a, b):
        assert x == y, f"{x[0]}: " + ", ".join(c for c, u, v in zip(ROW_COLUMNS, x, y) if u != v)
    # and the same decisions for every candidate: kept, or the rule that removed it
    decisions = "SELECT problem_id, kept, removed_by FROM gold.recipe_decisions WHERE recipe = 'default' ORDER BY 1"
    assert q(readme_lake, decisions) == q(recipe_lake, decisions)
    # hidden tests are part of the path: the LeetCode rows train on generated hidden tests
    assert q(readme_lake, "SELECT count(*) FROM gold.recipe_problems WHERE source LIKE 'leetcode%' "
                          "AND split = 'train'")[0][0] >= 1


def test_every_removal_has_a_count_and_an_example(lakes):
    """docs/funnel.md's table: per source, each reason a problem left with, its count and one example; the counts
    of the no-usable-test causes add up to the funnel's `no_usable_tests`."""
    from factory.lake import connect
    from factory.release.funnel import REASONS, curation_funnel, funnel_detail_markdown, removal_examples

    _, recipe_lake, _ = lakes
    con = connect(recipe_lake, read_only=True)
    try:
        funnel, examples = curation_funnel(con), removal_examples(con)
    finally:
        con.close()
    for r in funnel:
        got = {x["reason"]: x for x in examples.get(r["source"], [])}
        assert all(x["n"] > 0 and x["example"] for x in got.values()), got
        assert {k: v["n"] for k, v in got.items() if k in REASONS} == {k: r[k] for k in REASONS if r[k]}
        assert sum(v["n"] for k, v in got.items() if k.startswith("no usable tests")) == r["no_usable_tests"]
    by = {r["source"]: r for r in funnel}
    # the MBPP rows that are MBPP+'s tasks leave as contaminated, the example names the benchmark task
    mbpp = {x["reason"]: x for x in examples["mbpp"]}
    assert by["mbpp"]["contaminated"] >= 5 and "mbppplus" in mbpp["contaminated"]["example"]
    table = funnel_detail_markdown(funnel, examples)
    assert len(table) == 2 + sum(max(1, len(examples.get(r["source"], []))) for r in funnel)
