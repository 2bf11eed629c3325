"""`factory recipe diff A B`: which problems one recipe's release keeps and the other's does not, and why.

A and B are release names, or recipe names (then the newest full release of that recipe). Everything is read from the
release folders (their gold.recipe_decisions and gold.recipe_rules), so two teams can compare releases without the lake.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from factory.errors import FactoryError
from factory.release.locate import load_manifest, resolve_releases_dir
from factory.release.export import view_rows


def find_release(name: str, releases_dir=None) -> str:
    """A release name as given, else the newest release (by creation time) cut for recipe NAME (no stage)."""
    root = resolve_releases_dir(releases_dir)
    if (root / name / "manifest.json").is_file():
        return name
    found = []
    for manifest in root.glob("*/manifest.json"):
        try:
            m = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        recipe = m.get("recipe") or {}
        if recipe.get("name") == name and not recipe.get("stage"):
            found.append((m.get("created_at", ""), manifest.parent.name))
    if not found:
        raise FactoryError(f"no release {name!r} and no release of recipe {name!r} under {root}: run "
                           f"`factory recipe run {name}` first")
    return max(found)[1]


def _table(path: Path, manifest: dict, view: str) -> list[dict]:
    rows = view_rows(path, manifest, view)
    if rows is None:
        raise FactoryError(f"release {manifest['name']} has no {view}: it was not cut by `factory recipe run`")
    return rows


def diff_recipes(a: str, b: str, releases_dir=None, examples: int = 5) -> dict:
    sides = {}
    for label, name in (("a", a), ("b", b)):
        release = find_release(name, releases_dir)
        path, manifest = load_manifest(release, releases_dir)
        decisions = {d["problem_id"]: d for d in _table(path, manifest, "gold.recipe_decisions")}
        rules = _table(path, manifest, "gold.recipe_rules")
        sides[label] = {"release": release, "recipe": (manifest.get("recipe") or {}).get("name"),
                        "decisions": decisions, "rules": rules}
    da, db = sides["a"]["decisions"], sides["b"]["decisions"]
    kept_a = {p for p, d in da.items() if d["kept"]}
    kept_b = {p for p, d in db.items() if d["kept"]}
    out = {"a": sides["a"]["release"], "b": sides["b"]["release"],
           "recipe_a": sides["a"]["recipe"], "recipe_b": sides["b"]["recipe"],
           "kept_a": len(kept_a), "kept_b": len(kept_b), "kept_both": len(kept_a & kept_b),
           "jaccard": round(len(kept_a & kept_b) / len(kept_a | kept_b), 4) if kept_a | kept_b else None}
    for mine, other, key in ((kept_a, db, "only_a"), (kept_b, da, "only_b")):
        only = sorted(mine - {p for p, d in other.items() if d["kept"]})
        why = Counter(_reason(other.get(p)) for p in only)
        out[key] = {"problems": len(only), "why_other_dropped": dict(why.most_common()),
                    "examples": [{"problem_id": p, "other_failed": _failed(other.get(p))} for p in only[:examples]]}
    out["rules_only_a"], out["rules_only_b"], out["rules_changed"] = _rule_diff(sides["a"]["rules"],
                                                                                  sides["b"]["rules"])
    return out


def _reason(decision: dict | None) -> str:
    return "not a candidate (source not selected)" if decision is None else decision["removed_by"] or "kept"


def _failed(decision: dict | None) -> list[str]:
    return json.loads(decision["failed_rules"]) if decision else ["not a candidate"]


def _rule_diff(ra: list[dict], rb: list[dict]):
    key = lambda r: (r["stage"] or "", r["rule"])  # noqa: E731
    a, b = {key(r): r for r in ra}, {key(r): r for r in rb}
    only_a = [f"{k[1]}{' @' + k[0] if k[0] else ''} {a[k]['params']}" for k in a if k not in b]
    only_b = [f"{k[1]}{' @' + k[0] if k[0] else ''} {b[k]['params']}" for k in b if k not in a]
    changed = [f"{k[1]}: {a[k]['params']} -> {b[k]['params']}" for k in a if k in b and a[k]["params"] != b[k]["params"]]
    return only_a, only_b, changed


def diff_text(d: dict) -> str:
    lines = [f"A = {d['a']} (recipe {d['recipe_a']}): {d['kept_a']} problems",
             f"B = {d['b']} (recipe {d['recipe_b']}): {d['kept_b']} problems",
             f"in both: {d['kept_both']} (Jaccard {d['jaccard']})"]
    for key, label, other in (("only_a", "only in A", "B"), ("only_b", "only in B", "A")):
        part = d[key]
        lines.append(f"{label}: {part['problems']}")
        lines += [f"    {n:>6}  {other} removed them by {reason}" for reason, n in part["why_other_dropped"].items()]
        lines += [f"    e.g. {ex['problem_id']}: fails {', '.join(ex['other_failed'])} in {other}"
                  for ex in part["examples"]]
    for key, label in (("rules_only_a", "rules only in A"), ("rules_only_b", "rules only in B"),
                       ("rules_changed", "rules with other parameters")):
        if d[key]:
            lines.append(f"{label}:")
            lines += [f"    {r}" for r in d[key]]
    return "\n".join(lines)
