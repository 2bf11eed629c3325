"""Recipe files (`recipes/<name>.yaml`): load, apply `--set` overrides, fill `{{ param }}` references, validate.

A recipe is data, not a code path::

    name: skywork-or1
    title: ...                    # one line
    paper: ...                    # where the recipe comes from
    params: {policy_model: mutant, n_samples: 16}     # what `--set k=v` may change
    sources: [mbpp, kodcode]      # optional: candidates only from these sources
    pipeline:                     # the steps in order, each a registered stage with its parameters; inputs and
      - {stage: ingest}           # outputs are catalog names (factory.recipes.pipeline.STEP_KINDS, overridable
      - {stage: dedup}            # per step with `inputs:`/`outputs:`); see docs/recipes.md
      - {stage: sample, model: "{{ policy_model }}", n: 16}
      - {stage: execute, models: ["{{ policy_model }}"]}
      - {stage: curate}
      - {stage: filter}           # the rules below
      - {stage: release}
      - {stage: export, format: verl}
    # (older files: `prepare: [{stage: dedup}, ...]` - ingest, prepare, sample/execute per named model, curate,
    #  filter, release, export are then derived)
    curate: {difficulty_model: "{{ policy_model }}"}  # `factory curate` parameters for this recipe
    rules:                        # applied in order; each removes the candidates it does not keep
      - {rule: model_correct_range, model: "{{ policy_model }}", min_correct: 1, min_wrong: 1, source: "..."}
    difficulty: {model: "{{ policy_model }}"}          # pass rate / potential columns of the release
    tests: {select: longest_inputs, k: 15}            # or {select: all} (default)
    reward: {kind: binary, source: "..."}            # the paper's reward: binary (all tests pass) or soft
                                                      # (fraction passed); `factory export` writes it into
                                                      # every row's ground truth and factory.reward obeys it
    stages:                       # optional curriculum: each stage is its own release NAME-<stage>-<date>
      - {name: stage1, rules: [...], top_potential: 0.25}

A string that is exactly ``"{{ p }}"`` takes the parameter's value with its type; ``{{ p }}`` inside a longer
string is replaced by the value's text.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from factory.lake.catalog import PROJECT_ROOT
from factory.errors import FactoryError, did_you_mean
from factory.recipes.rules import resolve_rule
from factory.lake.commit import config_hash

RECIPES_DIR = PROJECT_ROOT / "recipes"
TOP_KEYS = {"name", "title", "paper", "description", "params", "sources", "prepare", "pipeline", "curate", "rules",
            "difficulty", "tests", "stages", "reward"}
PREPARE_STAGES = ("dedup", "decontam", "dedup-embed", "judge-quality", "curate", "hidden-tests")
TEST_SELECTIONS = ("all", "longest_inputs")
REWARD_KINDS = ("binary", "soft")
_WHOLE = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")
_INNER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class Recipe:
    name: str
    file: str
    title: str
    paper: str
    params: dict
    sources: list
    prepare: list
    curate: dict
    rules: list              # resolved rules: {kind, name, source, params}
    difficulty_model: str
    tests: dict
    stages: list = field(default_factory=list)   # {name, rules, top_potential}
    reward: dict = field(default_factory=lambda: {"kind": "soft", "tests": "hidden", "source": None})
    skipped: list = field(default_factory=list)   # [{step, reason}]: steps left out by `--skip` (recorded)
    pipeline: list = field(default_factory=list)  # [factory.recipes.pipeline.Step] in order

    @property
    def hash(self) -> str:
        return config_hash(self.resolved())

    def resolved(self) -> dict:
        return {"name": self.name, "params": self.params, "sources": self.sources,
                "pipeline": [s.as_dict() for s in self.pipeline], "curate": self.curate, "rules": self.rules, "difficulty_model": self.difficulty_model,
                "tests": self.tests, "stages": self.stages, "reward": self.reward,
                **({"skipped": self.skipped} if self.skipped else {})}


def recipe_path(name_or_path: str) -> Path:
    """`recipes/NAME.yaml` for a bare name, else the path given."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or len(p.parts) > 1:   # a file path; a bare name is never looked up in CWD
        if not p.is_file():
            raise FactoryError(f"recipe file {p} does not exist")
        return p
    path = RECIPES_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise FactoryError(f"unknown recipe {name_or_path!r}; known: {', '.join(available_recipes())}"
                           f"{did_you_mean(name_or_path, available_recipes())}")
    return path


def available_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def parse_overrides(pairs: list[str]) -> dict:
    """`k=v` strings from `--set`; v is JSON when it parses (numbers, lists, true/false), else text."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise FactoryError(f"--set {pair!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def load_recipe(name_or_path: str, overrides: dict | None = None) -> Recipe:
    path = recipe_path(name_or_path)
    where = _display(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise FactoryError(f"{where}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise FactoryError(f"{where}: a recipe is a YAML mapping")
    if unknown := sorted(set(raw) - TOP_KEYS):
        raise FactoryError(f"{where}: unknown keys {unknown}; a recipe has {sorted(TOP_KEYS)}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME_OK.match(name):
        raise FactoryError(f"{where}: `name` must be letters, digits, '.', '_' or '-', got {name!r}")
    params = dict(raw.get("params") or {})
    if bad := sorted(set(overrides or {}) - set(params)):
        raise FactoryError(f"--set {bad}: recipe {name} has no such parameter; its params are "
                           f"{sorted(params) or 'none'}")
    params.update(overrides or {})
    body = _fill({k: v for k, v in raw.items() if k not in ("params",)}, params, where)

    rules = [resolve_rule(r, f"{where}: rules[{i}]") for i, r in enumerate(_list(body, "rules", where))]
    if not rules:
        raise FactoryError(f"{where}: a recipe needs at least one rule")
    _unique([r["name"] for r in rules], f"{where}: rules")
    stages = []
    for i, st in enumerate(_list(body, "stages", where)):
        at = f"{where}: stages[{i}]"
        if not isinstance(st, dict) or not isinstance(st.get("name"), str) or not _NAME_OK.match(st["name"]):
            raise FactoryError(f"{at}: a stage is a mapping with a `name` (letters, digits, '.', '_', '-')")
        if extra := sorted(set(st) - {"name", "rules", "top_potential"}):
            raise FactoryError(f"{at}: unknown keys {extra}; a stage has name, rules, top_potential")
        top = st.get("top_potential")
        if top is not None and (isinstance(top, bool) or not isinstance(top, (int, float)) or not 0 < top <= 1):
            raise FactoryError(f"{at}: top_potential must be a fraction in (0, 1], got {top!r}")
        srules = [resolve_rule(r, f"{at}.rules[{j}]") for j, r in enumerate(st.get("rules") or [])]
        stages.append({"name": st["name"], "rules": srules, "top_potential": top})
    _unique([s["name"] for s in stages], f"{where}: stages")

    prepare = _list(body, "prepare", where)
    for i, step in enumerate(prepare):
        if not isinstance(step, dict) or step.get("stage") not in PREPARE_STAGES:
            raise FactoryError(f"{where}: prepare[{i}]: `stage` must be one of {', '.join(PREPARE_STAGES)}")
    if prepare and body.get("pipeline"):
        raise FactoryError(f"{where}: give either `pipeline:` (every step) or the older `prepare:`, not both")
    tests = dict(body.get("tests") or {"select": "all"})
    if tests.get("select", "all") not in TEST_SELECTIONS:
        raise FactoryError(f"{where}: tests.select must be one of {TEST_SELECTIONS}, got {tests.get('select')!r}")
    tests.setdefault("select", "all")
    if tests["select"] == "longest_inputs":
        k = tests.get("k")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise FactoryError(f"{where}: tests.k must be a positive integer for longest_inputs, got {k!r}")
    sources = body.get("sources") or []
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise FactoryError(f"{where}: `sources` must be a list of source names")
    curate = body.get("curate") or {}
    if not isinstance(curate, dict):
        raise FactoryError(f"{where}: `curate` must be a mapping of curate parameters")
    difficulty = body.get("difficulty") or {}
    model = difficulty.get("model", curate.get("difficulty_model", "mutant"))
    if not isinstance(model, str) or not model:
        raise FactoryError(f"{where}: difficulty.model must be a model name, got {model!r}")
    from factory.recipes.pipeline import parse_pipeline
    from factory.recipes.preflight import named_models

    named = named_models(rules + [r for st in stages for r in st["rules"]],
                         model if any(st["top_potential"] is not None for st in stages) else None)
    pipeline = parse_pipeline(_list(body, "pipeline", where), [dict(p) for p in prepare], where, named)
    prepare = [{"stage": s.stage, **s.params} for s in pipeline if s.stage in PREPARE_STAGES]
    return Recipe(name=name, file=where, title=str(body.get("title") or ""), paper=str(body.get("paper") or ""),
                  params=params, sources=sources, prepare=prepare, curate=curate, rules=rules,
                  difficulty_model=model, tests=tests, stages=stages, reward=_reward(body, curate, where),
                  pipeline=pipeline)


def _reward(body: dict, curate: dict, where: str) -> dict:
    """The recipe's reward spec: {kind: binary|soft, tests: hidden|all (curate's reward_tests), source}."""
    from factory.lake.templating import DEFAULTS

    raw = body.get("reward") or {}
    if not isinstance(raw, dict):
        raise FactoryError(f"{where}: `reward` must be a mapping {{kind: binary|soft, source: ...}}")
    if extra := sorted(set(raw) - {"kind", "source"}):
        raise FactoryError(f"{where}: reward: unknown keys {extra}; a reward has kind, source")
    kind = raw.get("kind", "soft")
    if kind not in REWARD_KINDS:
        raise FactoryError(f"{where}: reward.kind must be one of {', '.join(REWARD_KINDS)}, got {kind!r}")
    return {"kind": kind, "tests": str(curate.get("reward_tests", DEFAULTS["reward_tests"])),
            "source": raw.get("source")}


def _display(path: Path) -> str:
    full = path.resolve()
    return str(full.relative_to(PROJECT_ROOT)) if full.is_relative_to(PROJECT_ROOT) else str(path)


def _list(body: dict, key: str, where: str) -> list:
    value = body.get(key) or []
    if not isinstance(value, list):
        raise FactoryError(f"{where}: `{key}` must be a list")
    return value


def _unique(names: list[str], where: str) -> None:
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise FactoryError(f"{where}: names must be unique, repeated: {dup} (give one a `name:`)")


def _fill(value, params: dict, where: str):
    """Replace {{ p }} references by parameter values, recursively."""
    if isinstance(value, dict):
        return {k: _fill(v, params, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, params, where) for v in value]
    if isinstance(value, str):
        whole = _WHOLE.match(value.strip())
        return _param(whole.group(1), params, where) if whole else _INNER.sub(
            lambda m: str(_param(m.group(1), params, where)), value)
    return value


def _param(key: str, params: dict, where: str):
    if key not in params:
        raise FactoryError(f"{where}: {{{{ {key} }}}} is not a parameter of this recipe; params: {sorted(params)}")
    return params[key]


def steps_text(recipe: Recipe) -> str:
    """`factory recipe show`: every step in order, its thresholds and the paper source it comes from; the
    recipe file is the one place a paper's threshold lives."""
    def params(d: dict) -> str:
        return ", ".join(f"{k}={json.dumps(v)}" for k, v in d.items()) or "-"

    from factory.recipes.pipeline import graph_text

    lines = [f"{recipe.name}: {recipe.title}", f"paper: {recipe.paper}", f"file: {recipe.file}  (owns every "
             f"threshold below; --set {', '.join(sorted(recipe.params)) or '-'})", "",
             "pipeline (each step runs unless its outputs are current; --skip STEP leaves one out, recorded):",
             graph_text(recipe.pipeline), "", f"filter step: the rules in order (curate parameters: "
             f"{params(recipe.curate)})"]
    def rules(rules: list[dict], prefix: str = "") -> list[tuple[str, str | None]]:
        return [(f"{prefix}rule {r['name']} ({r['kind']})  {params(r['params'])}", r.get("source") or "NOT GIVEN")
                for r in rules]

    steps = rules(recipe.rules) + [("rule rl_ready  usable tests, clean by default (gold.rl_problems)",
                                    "factory: RL rows need usable tests and no applied exclusion")]
    for st in recipe.stages:
        steps += rules(st["rules"], f"stage {st['name']}: ")
        if st["top_potential"] is not None:
            steps.append((f"stage {st['name']}: top {st['top_potential']} by potential 4p(1-p) of "
                          f"{recipe.difficulty_model}",
                          "highest improvement potential first (fraction of the train split)"))
        if not st["rules"] and st["top_potential"] is None:
            steps.append((f"stage {st['name']}: every kept problem", None))
    for n, (text, source) in enumerate(steps, 1):
        lines.append(f"{n:>2}. {text}")
        if source is not None:
            lines.append(f"      source: {source}")
    lines.append(f"tests: {params(recipe.tests)}")
    lines.append(f"reward: {recipe.reward['kind']} over {recipe.reward['tests']} tests"
                 + (f"  (source: {recipe.reward['source']})" if recipe.reward.get("source") else ""))
    return "\n".join(lines)
