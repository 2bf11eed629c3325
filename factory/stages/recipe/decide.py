"""The filter and release steps of a recipe's pipeline: `decide` applies the recipe's rules and curriculum stages to
the lake's candidates and commits gold.recipe_decisions / gold.recipe_rules / gold.recipe_problems in one `recipe`
stage run; `cut_releases` freezes those rows as the release NAME-<date> (and NAME-<stage>-<date> per stage).

The runner (:mod:`factory.stages.recipe.pipeline`) calls these; :mod:`factory.stages.recipe.run` is the entry point
(`factory recipe run`) that calls the runner. Neither this module nor the runner imports ``run``: no import circle.
"""
from __future__ import annotations

import json
import math

from factory.errors import FactoryError
from factory.recipes.rules import rule_sql
from factory.release.locate import free_name, same_release, today
from factory.recipes.spec import Recipe
from factory.lake.commit import config_hash, run_stage

# every recipe ends with this rule: a released problem needs usable tests and must be clean by default
RL_READY = {"kind": "rl_ready", "name": "rl_ready", "params": {},
            "source": "factory: RL rows need usable tests and no applied exclusion (gold.rl_problems)"}
RECIPE_TABLES = ("gold.recipe_decisions", "gold.recipe_rules", "gold.recipe_problems")


def _keep_set(con, rule: dict) -> set[str]:
    sql = "SELECT problem_id FROM gold.rl_problems" if rule["kind"] == "rl_ready" else rule_sql(rule)
    return {r[0] for r in con.execute(f"SELECT DISTINCT problem_id FROM ({sql})").fetchall()}


def _apply(con, rules: list[dict], candidates: list[str], first_position: int, stage: str | None):
    """Apply rules in order to candidates; returns (kept ids, rule rows, {problem: [failed rule names]})."""
    alive = list(candidates)
    failed: dict[str, list[str]] = {}
    rows = []
    for i, rule in enumerate(rules):
        keep = _keep_set(con, rule)
        for pid in candidates:
            if pid not in keep:
                failed.setdefault(pid, []).append(rule["name"])
        before = len(alive)
        alive = [pid for pid in alive if pid in keep]
        rows.append({"position": first_position + i, "rule": rule["name"], "kind": rule["kind"], "stage": stage,
                     "params": rule["params"], "source": rule.get("source"), "candidates": before,
                     "removed": before - len(alive), "remaining": len(alive)})
    return alive, rows, failed


def decide(recipe: Recipe, lake) -> dict:
    """Apply the rules and stages; commit the recipe's three tables in one stage run."""
    rhash = recipe.hash

    def body(run):
        con = run.con
        where = "WHERE source IN (SELECT unnest(?::VARCHAR[]))" if recipe.sources else ""
        cand_rows = con.execute(f"SELECT problem_id, source FROM silver.problems {where} ORDER BY problem_id",
                                [recipe.sources] if recipe.sources else []).fetchall()
        if not cand_rows:
            raise FactoryError(f"recipe {recipe.name}: no candidate problems in the lake"
                               + (f" for sources {recipe.sources}" if recipe.sources else "")
                               + ": run `factory ingest` first")
        source_of = dict(cand_rows)
        candidates = [r[0] for r in cand_rows]
        from factory.release.funnel import unhealthy_with_causes
        used = set(source_of.values())
        unhealthy = [{k: r[k] for k in ("source", "references_run", "references_passed", "reference_pass_rate",
                                        "causes")} for r in unhealthy_with_causes(con) if r["source"] in used]
        base_rules = recipe.rules + [RL_READY]
        kept, rule_rows, failed = _apply(con, base_rules, candidates, 1, None)
        potential = _potentials(con, recipe.difficulty_model)
        split_of = dict(con.execute("SELECT problem_id, split FROM gold.clean_problems").fetchall())
        stage_sets, position = {}, len(rule_rows) + 1
        for st in recipe.stages:
            members, rows, _ = _apply(con, st["rules"], kept, position, st["name"])
            position += len(rows)
            if st["top_potential"] is not None:
                chosen = top_potential(members, potential, st["top_potential"], split_of)
                rows.append({"position": position, "rule": f"top_potential_{st['top_potential']}",
                             "kind": "top_potential", "stage": st["name"],
                             "params": {"fraction": st["top_potential"], "model": recipe.difficulty_model},
                             "source": "highest improvement potential 4p(1-p) first (fraction of the train split)",
                             "candidates": len(members), "removed": len(members) - len(chosen),
                             "remaining": len(chosen)})
                position += 1
                members = chosen
            rule_rows += rows
            stage_sets[st["name"]] = set(members)
        stages_of = {pid: [s for s in stage_sets if pid in stage_sets[s]] for pid in kept}
        kept_set = set(kept)

        for table in RECIPE_TABLES:
            run.delete(table, "recipe = ?", [recipe.name])
        run.write("gold.recipe_decisions", [
            {"recipe": recipe.name, "problem_id": pid, "source": source_of[pid], "kept": pid in kept_set,
             "removed_by": (failed.get(pid) or [None])[0] if pid not in kept_set else None,
             "failed_rules": json.dumps(failed.get(pid, [])),
             "stages": json.dumps(stages_of.get(pid, [])) if pid in kept_set else None,
             "recipe_hash": rhash} for pid in candidates])
        run.write("gold.recipe_rules", [
            {**r, "recipe": recipe.name, "params": json.dumps(r["params"], sort_keys=True), "recipe_hash": rhash}
            for r in rule_rows])
        problems = _problem_rows(con, recipe, kept, stages_of, potential, rhash)
        run.write("gold.recipe_problems", problems)
        content = config_hash({"recipe_hash": rhash, "kept": sorted(kept),
                               "stages": {k: sorted(v) for k, v in stage_sets.items()},
                               "tests": sorted((p["problem_id"], p["tests"]) for p in problems)})
        run.summary = (f"recipe {recipe.name}: {len(kept)} of {len(candidates)} kept; "
                       + "; ".join(f"{r['rule']} -{r['removed']}" for r in rule_rows))
        return {"recipe": recipe.name, "recipe_hash": rhash, "content_hash": content, "run_id": run.run_id,
                "candidates": len(candidates), "kept": len(kept), "rules": rule_rows,
                "stages": {k: len(v) for k, v in stage_sets.items()}, "commit_retries": run.commit_retries,
                "unhealthy_sources": unhealthy}

    # two recipes committing at once on a PostgreSQL catalog both delete from the recipe tables: DuckLake refuses
    # the second commit, and the body runs again on the new state (run_stage)
    return run_stage("recipe", {"name": recipe.name, "recipe_hash": rhash, "recipe": recipe.resolved()}, body,
                     lake=lake)


def top_potential(members: list[str], potential: dict, fraction: float, split_of: dict) -> list[str]:
    """A curriculum stage's top ``fraction`` by potential, counted over the train split: the highest-potential
    ceil(fraction x train members) train problems, plus the test-split problems at or above the last one's
    potential (test rows never shift a train cut). With no train member the fraction is of all members."""
    def pot(p):
        return potential.get(p) if potential.get(p) is not None else -1

    def ranked(ps):
        return sorted(ps, key=lambda p: (-pot(p), p))

    train = [p for p in members if split_of.get(p) != "test"]
    if not train:
        return ranked(members)[:math.ceil(fraction * len(members))]
    kept = ranked(train)[:math.ceil(fraction * len(train))]
    cut = pot(kept[-1]) if kept else float("inf")
    kept_set = set(kept) | {p for p in members if split_of.get(p) == "test" and pot(p) >= cut}
    return [p for p in ranked(members) if p in kept_set]


def _potentials(con, model: str) -> dict:
    """problem_id -> improvement potential 4p(1-p) of ``model``'s mean pass rate (problems it sampled)."""
    return dict(con.execute("SELECT problem_id, 4 * mean_pass_rate * (1 - mean_pass_rate) FROM gold.model_pass_rates "
                            "WHERE model = ?", [model]).fetchall())


_RL_COLUMNS = ("problem_id", "source", "source_id", "question", "starter_code", "entry_point", "test_preamble",
               "test_format", "difficulty_label", "license", "split", "prompt", "tests", "public_tests",
               "n_public_tests", "checker", "cpu_s", "language")


def _problem_rows(con, recipe: Recipe, kept: list[str], stages_of: dict, potential: dict,
                  rhash: str) -> list[dict]:
    if not kept:
        return []
    cols = ", ".join(f"r.{c}" for c in _RL_COLUMNS)
    cur = con.execute(f"""
        SELECT {cols}, m.mean_pass_rate, md.model_difficulty, md.model_samples
        FROM gold.rl_problems AS r
        LEFT JOIN gold.model_pass_rates AS m ON m.problem_id = r.problem_id AND m.model = ?
        LEFT JOIN gold.model_difficulty AS md ON md.problem_id = r.problem_id
        WHERE r.problem_id IN (SELECT unnest(?::VARCHAR[]))
        ORDER BY r.problem_id""", [recipe.difficulty_model, kept])
    names = [d[0] for d in cur.description]
    order = [s["name"] for s in recipe.stages]
    out = []
    for values in cur.fetchall():
        row = dict(zip(names, values))
        tests = json.loads(row["tests"])
        chosen = select_tests(tests, recipe.tests)
        p = row.pop("mean_pass_rate")
        pid = row["problem_id"]
        in_stages = stages_of.get(pid, [])
        row.update(recipe=recipe.name, tests=json.dumps(chosen), n_tests=len(chosen), n_tests_available=len(tests),
                   pass_rate=p, potential=potential.get(pid),
                   curriculum_stage=min((order.index(s) + 1 for s in in_stages), default=None) if order else None,
                   stages=json.dumps(in_stages) if order else None, recipe_hash=rhash)
        out.append(row)
    return out


def select_tests(tests: list[dict], spec: dict) -> list[dict]:
    """`all`, or DeepCoder's rule: with more than k tests keep the k with the longest inputs (an assert/check
    test's input is its code); ties by original order, the kept tests stay in their original order."""
    if spec.get("select", "all") == "all" or len(tests) <= spec["k"]:
        return tests

    def size(t: dict) -> int:
        text = t.get("input") if t.get("input") is not None else t.get("code")
        return len(text or "")

    ranked = sorted(range(len(tests)), key=lambda i: (-size(tests[i]), i))[:spec["k"]]
    return [tests[i] for i in sorted(ranked)]


def rules_table(rows: list[dict]) -> str:
    """Plain-text table of the per-rule removals (printed by `factory recipe run`)."""
    head = f"{'#':>3}  {'rule':<34} {'stage':<10} {'candidates':>10} {'removed':>8} {'remaining':>9}"
    return "\n".join([head, "-" * len(head)] + [
        f"{r['position']:>3}  {r['rule'][:34]:<34} {(r['stage'] or '')[:10]:<10} {r['candidates']:>10} "
        f"{r['removed']:>8} {r['remaining']:>9}" for r in rows])


def cut_releases(recipe: Recipe, decided: dict, *, lake=None, releases_dir=None, date: str | None = None,
                 log=print) -> list[str]:
    """Release NAME-<date> (problems, decisions, rules) and NAME-<stage>-<date> per stage. A release of the same
    recipe with the same content already on disk is reused instead of cutting an identical one."""
    from factory.release.create import create_release
    from factory.release.locate import resolve_releases_dir

    date = date or today()
    root = resolve_releases_dir(releases_dir, lake)
    info = {"name": recipe.name, "title": recipe.title, "paper": recipe.paper, "file": recipe.file,
            "recipe_hash": decided["recipe_hash"], "content_hash": decided["content_hash"],
            "run_id": decided["run_id"], "params": recipe.params, "tests": recipe.tests, "skipped": recipe.skipped,
            "unhealthy_sources": decided["unhealthy_sources"],
            "difficulty_model": recipe.difficulty_model, "reward": recipe.reward, "candidates": decided["candidates"],
            "kept": decided["kept"], "rules": decided["rules"], "stages": decided["stages"]}
    match = f"recipe = '{recipe.name}'"
    wanted = [(f"{recipe.name}-{date}", None, ["gold.recipe_problems", "gold.recipe_decisions", "gold.recipe_rules"],
               {v: match for v in RECIPE_TABLES})]
    for st in recipe.stages:
        pred = f"{match} AND list_contains(CAST(json_extract_string(stages, '$[*]') AS VARCHAR[]), '{st['name']}')"
        wanted.append((f"{recipe.name}-{st['name']}-{date}", st["name"], ["gold.recipe_problems"],
                       {"gold.recipe_problems": pred}))
    names = []
    for base, stage, views, filters in wanted:
        rows = decided["stages"][stage] if stage else decided["kept"]
        if not rows:
            log(f"release {base}: not cut - the recipe keeps no problems{' in stage ' + stage if stage else ''} "
                "(`datasets` cannot load an empty split); gold.recipe_decisions says which rule removed them")
            continue
        if existing := same_release(root, base, decided["content_hash"], stage):
            log(f"release {existing}: unchanged (same recipe and rows), not cut again")
            names.append(existing)
            continue
        name = free_name(root, base)
        create_release(name, views, lake=lake, releases_dir=releases_dir, row_filters=filters,
                       recipe={**info, "stage": stage})
        log(f"release {name}: cut ({'stage ' + stage if stage else 'all stages'})")
        names.append(name)
    return names


