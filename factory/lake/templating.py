"""Parameters of the SQL transforms under sql/ and the `{{ name }}` templating that fills them in.

Curation parameters live here (`factory curate` overrides them from flags or a YAML file, and the values used
are stored with the run's config). A seed paper's threshold is owned by its recipe (recipes/<paper>.yaml, with
its source); a default here that is a paper's threshold reads it from the recipe file (:func:`recipe_param`).
"""
from __future__ import annotations

import re

from factory.errors import FactoryError

EXCLUSION_REASONS = ("contaminated", "duplicate", "other_task", "environment", "forgeable", "unvalidated")
# the benchmarks `factory decontam` checks against by default (factory.stages.dedup uses the same list)
DEFAULT_BENCHMARKS = ("humaneval", "humanevalplus", "mbpp-sanitized", "mbppplus", "leetcode-v0.3.1-test",
                      "codecontests", "bigcodebench")

def recipe_param(recipe: str, key: str):
    """A default owned by a recipe file (recipes/RECIPE.yaml `params:`), so a paper's threshold has one home.
    A plain number under `params:` is read without a YAML parser (this runs at import: `factory --help` stays
    light); anything else goes through yaml."""
    from factory.assets import path as shipped

    path = shipped("recipes", f"{recipe}.yaml")
    try:
        text = path.read_text()
        block = re.search(r"^params:\s*\n((?:[ \t]+.*\n?|\s*\n)*)", text, re.M)
        found = block and re.search(rf"^[ \t]+{re.escape(key)}:[ \t]*(-?[0-9]+(?:\.[0-9]+)?)[ \t]*(?:#.*)?$",
                                    block.group(1), re.M)
        if found:
            number = found.group(1)
            return float(number) if "." in number else int(number)
        import yaml
        return yaml.safe_load(text)["params"][key]
    except (OSError, KeyError, TypeError) as exc:
        raise FactoryError(f"{path}: params.{key} is missing ({exc})") from None


DEFAULTS: dict = {
    # test validation (AceCoder): oracle = reference programs, or "model:NAME" for an oracle model's samples
    "oracle": "reference",
    "oracle_rule": "all",                  # a test is valid when all (or any) oracle programs pass it
    # AceCoder's rules judge synthesized suites (~20 LLM-written tests); they apply to problems with synth tests
    "max_oracle_passed_excluded": 3,       # drop synthesized problems whose oracle passes <= 3 tests
    "min_kept_tests": 5,                   # ... or that keep fewer than 5 tests
    "dataset_min_kept_tests": 1,           # a dataset's own suite (MBPP: 3 asserts) needs this many valid tests
    # pass rates
    "k_list": [1, 5, 10],
    "exclude_in_process_judged": True,     # tests judged in the candidate's process (unittest verdicts it could
                                           # forge) count neither as passed nor in the total; a problem with only
                                           # such tests is excluded ('forgeable'), as factory.reward leaves them out
    # difficulty / potential / curriculum
    "difficulty_model": "mutant",          # model whose pass rates define difficulty ('auto' = most-sampled model)
    # paper filters (DeepCoder's >= 5 tests, Klear's >= 16 tests and pass rate > 0.5, Skywork's 1..n-1, AceReason's
    # epoch filter) are recipe rules: recipes/<paper>.yaml owns each threshold with its source (sql/rules/)
    "quality_min_valid_votes": recipe_param("skywork-or1", "min_valid_votes"),   # gold.problem_quality.keep
    # preference pairs (AceCoder): chosen >= 0.8, chosen - rejected >= 0.4, rejected > 0
    # the reward's CPU budget per test (factory.reward.DEFAULT_LIMITS reads it) and the headroom an export gives a
    # problem whose reference needs more than 1/reference_cpu_factor of it on some test (see gold.rl_problems)
    "reward_cpu_s": 2.0,
    "reference_cpu_factor": 4.0,           # EvalPlus's rule: limit = factor x the reference's CPU time
    "pair_min_chosen": 0.8,
    "pair_min_diff": 0.4,
    "pair_min_rejected": 0.0,
    "pair_strict": False,                  # True: '>' as in the paper's Eq. 3; False: '>=' as in AceCoder's code
    # clean by default: reasons in gold.training_exclusions that keep a problem out of the training views
    "exclude": list(EXCLUSION_REASONS),    # [] = opt in to everything (validation exclusions always apply)
    "benchmarks": "auto",                  # sources whose problems only ever reach a test split; 'auto' = those of
                                           # the latest `factory decontam` run, else DEFAULT_BENCHMARKS
    "min_reference_pass_rate": 0.99,       # gold.source_health: a source below this is reported as unhealthy
    # test visibility: 'hidden' = rewards and pass-rate scores use only tests whose input/output the prompt does
    # not show (silver.tests.visibility); 'all' = every usable test (public examples included)
    "reward_tests": "hidden",
}

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _quote(value: str) -> str:
    return value.replace("'", "''")


def transform_params(overrides: dict | None = None, *, run_id: str = "") -> dict:
    """DEFAULTS + overrides, plus the derived SQL fragments the templates use."""
    if unknown := set(overrides or {}) - set(DEFAULTS):
        raise FactoryError(f"unknown transform parameters {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **(overrides or {})}
    oracle = str(p["oracle"])
    if oracle == "reference":
        p["oracle_filter"], p["oracle_label"] = "p.origin = 'reference'", "reference programs"
    elif oracle.startswith("model:"):
        model = _quote(oracle.split(":", 1)[1])
        p["oracle_filter"], p["oracle_label"] = f"p.origin = 'sample' AND p.model = '{model}'", f"samples of {model}"
    else:
        raise FactoryError(f"oracle must be 'reference' or 'model:NAME', got {oracle!r}")
    if p["oracle_rule"] not in ("all", "any"):
        raise FactoryError(f"oracle_rule must be 'all' or 'any', got {p['oracle_rule']!r}")
    ks = [int(k) for k in p["k_list"]]
    if not ks or min(ks) < 1:
        raise FactoryError(f"k_list must hold positive integers, got {p['k_list']!r}")
    p["k_list"] = "[" + ", ".join(str(k) for k in ks) + "]"
    for key in ("pair_strict", "exclude_in_process_judged"):
        p[key] = _boolean(key, p[key])
    p["chosen_op"] = p["diff_op"] = ">" if p["pair_strict"] else ">="
    p["exclude_in_process_judged"] = "true" if p["exclude_in_process_judged"] else "false"  # SQL literal
    p["difficulty_model"] = _quote(str(p["difficulty_model"]))
    p["exclude"], p["exclude_label"] = _exclusions(p["exclude"])
    p["benchmarks"], p["benchmarks_label"] = _benchmarks(p["benchmarks"])
    p["min_reference_pass_rate"] = float(p["min_reference_pass_rate"])
    if p["reward_tests"] not in ("hidden", "all"):
        raise FactoryError(f"reward_tests must be 'hidden' or 'all', got {p['reward_tests']!r}")
    p["reward_all"] = "true" if p["reward_tests"] == "all" else "false"   # SQL literal
    p["reward_tests_label"] = ("every usable test (reward_tests = all)" if p["reward_tests"] == "all" else
                               "reward_tests = hidden")
    p["quality_min_valid_votes"] = _count("quality_min_valid_votes", p["quality_min_valid_votes"])
    p["run_id"] = _quote(run_id)
    return p


def _sql_list(values) -> str:
    return "[" + ", ".join(f"'{_quote(str(v))}'" for v in values) + "]::VARCHAR[]"


def _names(value) -> list[str]:
    """A `--set` list parameter: one name or a list (JSON-parsed)."""
    return [value] if isinstance(value, str) else list(value or [])


def _exclusions(value) -> tuple[str, str]:
    reasons = _names(value)
    if unknown := [r for r in reasons if r not in EXCLUSION_REASONS]:
        raise FactoryError(f"exclude: unknown reasons {unknown}; known: {list(EXCLUSION_REASONS)} "
                           "(exclude=[] keeps every problem that passed validation)")
    return _sql_list(reasons), ", ".join(reasons) or "nothing (opted in)"


def _benchmarks(value) -> tuple[str, str]:
    """'auto' is resolved in SQL, so a later `factory decontam` run changes the view without a new curate."""
    if value == "auto":
        latest = ("(SELECT CAST(json_extract(config, '$.benchmarks') AS VARCHAR[]) FROM ops.runs "
                  "WHERE stage = 'decontam' AND status = 'success' ORDER BY finished_at DESC LIMIT 1)")
        return (f"coalesce({latest}, {_sql_list(DEFAULT_BENCHMARKS)})",
                "those of the latest decontam run, else " + ", ".join(DEFAULT_BENCHMARKS))
    names = _names(value)
    return _sql_list(names), ", ".join(names) or "none"


def _count(key: str, value) -> int:
    """A non-negative integer threshold from YAML / `--set` (goes into SQL as a literal)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise FactoryError(f"{key} must be a non-negative integer, got {value!r}")
    return int(value)


def _boolean(key: str, value) -> bool:
    """A flag from YAML / `--set` (JSON-parsed, so true/false arrive as bools; strings and 0/1 are accepted)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise FactoryError(f"{key} must be true or false, got {value!r}")


def render_sql(sql: str, params: dict, where: str | None = None) -> str:
    """Replace {{ name }} placeholders; an unknown name is an error naming the SQL file."""

    def sub(match: re.Match) -> str:
        name = match.group(1)
        if name not in params:
            raise FactoryError(f"{where or 'SQL'}: unknown placeholder {{{{ {name} }}}}")
        return str(params[name])

    return _PLACEHOLDER.sub(sub, sql)
