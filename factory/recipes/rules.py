"""Rule kinds a recipe can name: each is one SQL file in sql/rules/ that selects the problem_ids a rule KEEPS.

A rule in a recipe is ``{rule: KIND, name?: ..., source?: ..., <params>}``; parameters missing from the recipe
take the kind's defaults below, unknown ones are refused. Values enter SQL as literals: numbers are checked to be
numbers, names are quoted.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import takewhile
from pathlib import Path

from factory.lake.catalog import PROJECT_ROOT, default_catalog, sql_references
from factory.errors import FactoryError
from factory.lake.templating import render_sql

RULES_DIR = PROJECT_ROOT / "sql" / "rules"
REQUIRED = object()


@dataclass(frozen=True)
class RuleKind:
    name: str
    params: dict            # name -> default (REQUIRED = must be given)
    names: tuple = ()       # params that are names (quoted into SQL), the others are numbers

    @property
    def path(self) -> Path:
        return RULES_DIR / f"{self.name}.sql"

    def description(self) -> str:
        """The SQL file's leading comment (what the rule keeps), one line."""
        lines = takewhile(lambda line: line.startswith("--"), self.path.read_text().splitlines())
        return " ".join(line[2:].strip() for line in lines).removeprefix("keep: ")


_MODEL = {"model": REQUIRED, "min_samples": 1}
KINDS: dict[str, RuleKind] = {k.name: k for k in (
    RuleKind("clean", {}),
    RuleKind("min_tests", {"min_tests": 5}),
    RuleKind("reference_verified", {"min_correct": 1}),
    RuleKind("model_correct_range", {**_MODEL, "min_correct": 1, "min_wrong": 1}, ("model",)),
    RuleKind("model_solves", {**_MODEL, "min_correct": 1}, ("model",)),
    RuleKind("model_max_solved_fraction", {**_MODEL, "max_fraction": REQUIRED}, ("model",)),
    RuleKind("model_min_mean_pass_rate", {**_MODEL, "min_rate": REQUIRED}, ("model",)),
    RuleKind("min_potential", {**_MODEL, "min_potential": REQUIRED}, ("model",)),
    RuleKind("minhash_dedup", {}),
    RuleKind("decontaminated", {"ngram_n": 9, "literal_min_ngrams": 0}),
    RuleKind("embedding_dedup", {"threshold": 0.95, "model": "all-MiniLM-L6-v2", "text_field": "statement"},
             ("model", "text_field")),
    RuleKind("quality_vote", {"min_valid_votes": 9, "unjudged": "keep"}, ("unjudged",)),
    RuleKind("acecoder_hard", dict(_MODEL), ("model",)),
)}
RULE_KEYS = ("rule", "name", "source")


def resolve_rule(raw: dict, where: str) -> dict:
    """{kind, name, source, params} with defaults filled in and every value checked; `where` names the spot
    in the recipe file for error messages."""
    if not isinstance(raw, dict) or "rule" not in raw:
        raise FactoryError(f"{where}: a rule is a mapping with a `rule:` kind (one of {', '.join(KINDS)})")
    kind = KINDS.get(raw["rule"])
    if kind is None:
        raise FactoryError(f"{where}: unknown rule kind {raw['rule']!r}; known: {', '.join(KINDS)}")
    given = {k: v for k, v in raw.items() if k not in RULE_KEYS}
    if unknown := sorted(set(given) - set(kind.params)):
        raise FactoryError(f"{where}: rule {kind.name} has no parameter(s) {unknown}; it takes "
                           f"{sorted(kind.params) or 'none'}")
    params = {}
    for key, default in kind.params.items():
        value = given.get(key, default)
        if value is REQUIRED:
            raise FactoryError(f"{where}: rule {kind.name} needs `{key}`")
        params[key] = _check_value(kind, key, value, where)
    return {"kind": kind.name, "name": str(raw.get("name") or kind.name), "source": raw.get("source"),
            "params": params}


def _check_value(kind: RuleKind, key: str, value, where: str):
    if key in kind.names:
        if not isinstance(value, str) or not value.strip():
            raise FactoryError(f"{where}: rule {kind.name}: `{key}` must be a non-empty name, got {value!r}")
        if key == "unjudged" and value not in ("keep", "remove"):
            raise FactoryError(f"{where}: rule {kind.name}: `unjudged` must be keep or remove, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FactoryError(f"{where}: rule {kind.name}: `{key}` must be a number, got {value!r}")
    if value < 0:
        raise FactoryError(f"{where}: rule {kind.name}: `{key}` must be >= 0, got {value!r}")
    return value


def rule_sql(rule: dict) -> str:
    """The SELECT of problem_ids the rule keeps, parameters filled in."""
    kind = KINDS[rule["kind"]]
    values = {k: (v.replace("'", "''") if isinstance(v, str) else v) for k, v in rule["params"].items()}
    return render_sql(kind.path.read_text(), values, str(kind.path.relative_to(PROJECT_ROOT)))


@lru_cache(maxsize=None)
def check_rule_files(kinds: tuple[str, ...] | None = None) -> None:
    """Each rule kind (default: all) has its SQL file, which reads only tables data_catalog.yaml declares."""
    catalog = default_catalog()
    for kind in (KINDS[k] for k in (kinds or tuple(KINDS))):
        if not kind.path.is_file():
            raise FactoryError(f"rule kind {kind.name}: missing {kind.path}")
        if unknown := sorted(sql_references(kind.path.read_text()) - set(catalog.tables)):
            raise FactoryError(f"{kind.path} reads undeclared tables {unknown}")
