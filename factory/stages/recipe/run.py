"""`factory recipe run NAME`: walk the recipe's pipeline (ingest ... execute, curate, filter, release, export) through
the runner (:mod:`factory.stages.recipe.pipeline`), which this module imports, never the other way round.

One `recipe` stage run writes gold.recipe_decisions (every candidate: kept, or the first rule that removed it and
every rule it fails), gold.recipe_rules (per rule: parameters, source, candidates, removed) and
gold.recipe_problems (the kept problems as RL rows) - replacing the recipe's earlier rows in one transaction.
Then the release ``NAME-<date>`` freezes those rows (and ``NAME-<stage>-<date>`` each curriculum stage), with a
dataset card listing every rule, its threshold, its source and what it removed.
"""
from __future__ import annotations

from factory.errors import FactoryError
from factory.recipes.rules import check_rule_files
from factory.recipes.spec import Recipe, load_recipe


def run_recipe(name: str, *, lake=None, releases_dir=None, overrides: dict | None = None, prepare: bool = True,
               release: bool = True, date: str | None = None, skip: list[str] | None = None, log=print,
               data_dir=None, export_dir=None) -> dict:
    """Run a recipe's pipeline (recipe.pipeline: ingest ... filter, release, export) through the one runner
    (:mod:`factory.stages.recipe.pipeline`); returns {recipe, candidates, kept, rules, stages, releases, steps,
    exports}.

    A step whose input is missing (a model filter with no samples of its model and no sample step that can run
    here, a quality vote with no judges, an embedding dedup without the `embed` extra, no problems and no
    ``data_dir``) refuses the whole run with what to run or set, before any step runs; ``skip`` names steps
    (pipeline steps, rules or curriculum stages) to leave out instead, recorded in the release's manifest and
    card. ``prepare=False`` runs only the filter and release steps on the lake as it is."""
    from factory.stages.recipe.pipeline import Context, run_pipeline

    recipe = load_recipe(name, overrides)
    check_rule_files(tuple(sorted({r["kind"] for r in recipe.rules + [r for s in recipe.stages for r in s["rules"]]})))
    recipe = apply_skips(recipe, lake, skip or [], prepare, data_dir)
    leave_out = {s["step"]: s["reason"] for s in recipe.skipped}
    for st in recipe.pipeline:
        if not prepare and st.stage not in ("filter", "release") and st.name not in leave_out:
            leave_out[st.name] = "--no-prepare: the lake's current tables are the input"
    ctx = Context(recipe=recipe, lake=lake, data_dir=data_dir, releases_dir=releases_dir, export_dir=export_dir,
                  date=date, release=release, log=log)
    steps = run_pipeline(ctx, recipe.pipeline, leave_out)
    decided = ctx.decided
    from factory.release.funnel import health_lines
    for line in health_lines(decided["unhealthy_sources"]):   # a source below 0.99 reference pass rate
        log(f"UNHEALTHY source {line} (recipe {recipe.name} uses it; `factory health` for the environment)")
    return {**decided, "releases": ctx.releases, "steps": steps, "exports": ctx.exports}


def apply_skips(recipe: Recipe, lake, skip: list[str], prepare: bool, data_dir=None) -> Recipe:
    """Refuse (FactoryError listing every missing input) unless each refused step is skipped; returns the recipe
    without its skipped rules and stages, ``recipe.skipped`` saying which steps were left out and why."""
    from factory.lake import connect
    from factory.recipes.preflight import check_skips, refusals, skipped_prepare

    skip = check_skips(recipe, skip)
    with connect(lake, read_only=True) as con:
        found = refusals(recipe, con, skip=skip, prepare=prepare, data_dir=data_dir)
        reasons = dict(refusals(recipe, con, skip=[], prepare=prepare, data_dir=data_dir)) if skip else {}
    if found:
        raise FactoryError(f"recipe {recipe.name} refuses to run: {len(found)} step(s) cannot do what the paper "
                           "did with this lake (nothing was changed):\n"
                           + "\n".join(f"  - {why}" for _, why in found))
    if not skip:
        return recipe
    gone = set(skip)
    recipe.skipped = [{"step": s, "reason": reasons.get(s, "skipped by --skip")} for s in skip]
    serving = skipped_prepare(recipe, skip)   # steps that exist only for skipped rules go with them
    recipe.skipped += [{"step": st.name, "reason": f"serves only the skipped rules ({', '.join(skip)})"}
                       for st in recipe.pipeline if st.stage in serving and st.name not in gone]
    recipe.rules = [r for r in recipe.rules if r["name"] not in gone]
    recipe.stages = [{**st, "rules": [r for r in st["rules"] if r["name"] not in gone]}
                     for st in recipe.stages if st["name"] not in gone]
    return recipe


