"""The release's README.md: a Hugging Face dataset card with one `configs` entry per view."""
from __future__ import annotations

import contextlib
import json

from factory.assets import path as shipped
from factory.release.funnel import funnel_markdown


def dataset_card(manifest: dict) -> str:
    """Card text: YAML front matter (configs, data_files globs, license) + human summary."""
    views = manifest["views"]
    licenses = sorted({lic for lics in manifest["source_licenses"].values() for lic in lics})
    hf_license = licenses[0].strip().lower() if len(licenses) == 1 else "other"
    lines = ["---", f"license: {hf_license if hf_license in _HF_IDS else 'other'}", "configs:"]
    for i, (view, info) in enumerate(views.items()):
        lines += [f"- config_name: {info['config_name']}", "  data_files:"]
        for split in info.get("splits") or {"train": info["rows"]}:
            pattern = f"{split}-*.parquet" if info.get("splits") else "*.parquet"
            # a JSON string is a valid YAML double-quoted scalar
            lines += [f"  - split: {split}", f"    path: {json.dumps('data/' + info['config_name'] + '/' + pattern)}"]
        if i == 0:
            lines.append("  default: true")
    lines += ["tags:", "- code", "- reinforcement-learning", "---", "", f"# {manifest['name']}", "",
              f"Release of the code-RL dataset factory, frozen from lake snapshot "
              f"**{manifest['snapshot_id']}** (git `{manifest.get('git_sha') or 'unknown'}`, config hash "
              f"`{manifest['config_hash']}`). `manifest.json` lists every file with its sha256 and row count; "
              "`factory release verify NAME` checks them and `factory release reproduce NAME` rebuilds the "
              "files from the snapshot.", "",
              "## Configs", "", "| config | catalog view | rows | splits | files | primary key |",
              "|---|---|---|---|---|---|"]
    for view, info in views.items():
        splits = ", ".join(f"{k} {v}" for k, v in (info.get("splits") or {"train": info["rows"]}).items())
        lines.append(f"| {info['config_name']} | `{view}` | {info['rows']} | {splits} | {len(info['files'])} | "
                     f"{', '.join(info['primary_key'])} |")
    lines += ["", "Load one with `datasets.load_dataset(\"parquet\", data_dir=\"data/<config>\")` or "
              "`load_dataset(\"<this folder>\", \"<config>\")`.", ""]
    for info in views.values():
        words = info.get("column_comments") or {}
        lines += [f"### Columns of {info['config_name']}", "", "| column | type | description |", "|---|---|---|"]
        lines += [f"| {c} | {t} | {words.get(c, '').replace('|', chr(92) + '|')} |" for c, t in info["columns"]]
        lines.append("")
    if manifest.get("recipe"):
        lines += recipe_markdown(manifest["recipe"])
    lines += decontamination_markdown(manifest)
    if manifest.get("curation"):
        lines += ["## What curation kept out", "",
                  "Problems per source and how many each rule removed from the training views (a problem can "
                  "match several rules; `gold.training_exclusions` in the lake has one row per problem and "
                  "reason). Benchmark sources only ever reach the `test` split.", "",
                  *funnel_markdown(manifest["curation"]), ""]
    lines += ["## Sources and licenses", "",
              "Each row keeps its `source` (and, where the view has it, `license`); the release is "
              "subject to the license of every source it contains:", "", "| source | license |", "|---|---|"]
    lines += [f"| {source} | {'; '.join(lics)} |" for source, lics in manifest["source_licenses"].items()]
    lines.append("")
    if manifest.get("source_revisions"):   # hf-* ingests: the exact Hub commit of each source's files
        lines += ["## Hub revisions", "", "| source | revision |", "|---|---|"]
        lines += [f"| {s} | {', '.join(f'`{r}`' for r in revs)} |" for s, revs in manifest["source_revisions"].items()]
        lines.append("")
    return "\n".join(lines)


def decontamination_figures(con) -> dict:
    """What the card says about decontamination: the latest `factory decontam` run's summary in the lake (rule,
    removals per method, what the literal rule would remove and how many of those rest on one stock phrase) and
    the precision / recall measured on the audit labels (``audit/decontam/measured.json``, written by
    ``bench/decontam_audit.py --ship``)."""
    out: dict = {}
    with contextlib.suppress(Exception):   # a lake without the run table or an older summary: no run figures
        row = con.execute("SELECT message FROM ops.runs WHERE stage = 'decontam' AND status = 'success' "
                          "ORDER BY finished_at DESC LIMIT 1").fetchone()
        run = json.loads(row[0]) if row and row[0] else None
        if isinstance(run, dict):
            out["run"] = {k: run.get(k) for k in ("rule", "checked", "contaminated_by_method", "literal_ngram")}
    measured = shipped("audit", "decontam", "measured.json")
    if measured.is_file():
        out["audit"] = json.loads(measured.read_text())
    return out


def decontamination_markdown(manifest: dict) -> list[str]:
    """The card's decontamination section: precision / recall per method on the audit labels, and for a recipe
    applying the literal n-gram rule, how many of its removals rest on a single stock phrase."""
    info = manifest.get("decontamination") or {}
    audit, run = info.get("audit"), info.get("run") or {}
    lines = ["## Decontamination", ""]
    literal = [r for r in (manifest.get("recipe") or {}).get("rules", [])
               if r.get("kind") == "decontaminated" and (r.get("params") or {}).get("literal_min_ngrams")]
    lit = run.get("literal_ngram") or {}
    if literal and lit:
        lines += [f"This recipe applies the papers' literal rule (any {literal[0]['params'].get('ngram_n', 9)}-gram "
                  f"shared with a benchmark item). Of the {run.get('checked')} problems checked in this lake it "
                  f"links {lit.get('removed')}; {lit.get('evidence')} of them have text evidence (informative "
                  f"n-grams covering part of the item), {lit.get('stock_only')} share only stock text or example "
                  f"values, and **{lit.get('single_stock_phrase')} rest on a single stock phrase**.", ""]
    elif run:
        lines += [f"`factory decontam` (rule `{run.get('rule')}`) removed, per method: "
                  f"{_cell(json.dumps(run.get('contaminated_by_method') or {}, sort_keys=True))}; the literal rule "
                  f"(any shared 9-gram) would have linked {lit.get('removed', '?')} problems, "
                  f"{lit.get('single_stock_phrase', '?')} of them on a single stock phrase.", ""]
    if not audit:
        return lines + ["Precision / recall: not measured in this install (audit/decontam/measured.json absent).", ""]
    lines += [f"Precision and recall per method on the audit labels ({sum((audit.get('labels') or {}).values())} "
              f"labelled pairs + {audit.get('planted')} planted copies; `docs/decontamination.md`):", "",
              "| method | flagged | precision | recall | recall lineage | recall planted |", "|---|---|---|---|---|---|"]
    fmt = lambda v: "-" if v is None else f"{v:.3f}"
    for name, m in (audit.get("methods") or {}).items():
        lines.append(f"| {name} | {m.get('flagged')} | {fmt(m.get('precision'))} | {fmt(m.get('recall'))} | "
                     f"{fmt(m.get('recall_lineage'))} | {fmt(m.get('recall_planted'))} |")
    lines.append("")
    return lines


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def recipe_markdown(recipe: dict) -> list[str]:
    """The recipe section of a card: what the recipe is, then every rule with its parameters, source and the
    number of problems it removed (in order: each rule sees what the rules before it kept)."""
    lines = [f"## Recipe `{recipe['name']}`" + (f" - stage `{recipe['stage']}`" if recipe.get("stage") else ""), ""]
    if recipe.get("title"):
        lines += [recipe["title"], ""]
    if recipe.get("paper"):
        lines += [f"Source: {recipe['paper']}", ""]
    lines += [f"Recipe file `{recipe.get('file')}`, recipe hash `{recipe.get('recipe_hash')}`, parameters "
              f"`{json.dumps(recipe.get('params', {}), sort_keys=True)}`. Candidates: {recipe.get('candidates')} "
              f"problems; kept: {recipe.get('kept')}.", ""]
    if recipe.get("tests"):
        lines += [f"Tests per problem: `{json.dumps(recipe['tests'], sort_keys=True)}`.", ""]
    if recipe.get("reward"):
        rw = recipe["reward"]
        what = "1.0 only when every test passes" if rw.get("kind") == "binary" else "the fraction of tests passed"
        lines += [f"Reward: **{rw.get('kind')}** ({what}; {rw.get('tests', 'hidden')} tests)"
                  + (f" - {rw['source']}" if rw.get("source") else "")
                  + ". `factory export` writes it into every ground truth (`\"reward\"`), and `factory.reward` / "
                    "`factory serve` score each item by it.", ""]
    if recipe.get("skipped"):
        lines += ["**Steps skipped** (`--skip`; this release does *not* do what the paper did for them):", ""]
        lines += [f"- `{s['step']}`: {_cell(s.get('reason') or '')}" for s in recipe["skipped"]]
        lines.append("")
    if recipe.get("unhealthy_sources"):
        lines += ["**Unhealthy sources** (references pass below the 0.99 a source needs here; their pass rates "
                  "measure this environment as much as the problems):", ""]
        for u in recipe["unhealthy_sources"]:
            causes = ", ".join(f"{c} {n}" for c, n in u.get("causes") or []) or "no failing verdict recorded"
            lines.append(f"- `{u['source']}`: {u['references_passed']}/{u['references_run']} references pass; "
                         f"failing: {_cell(causes)}")
        lines.append("")
    lines += ["| # | rule | kind | parameters | source | candidates | removed | remaining |",
              "|---|---|---|---|---|---|---|---|"]
    for r in recipe.get("rules", []):
        stage = f" (stage {r['stage']})" if r.get("stage") else ""
        lines.append(f"| {r['position']} | {_cell(r['rule'])}{stage} | {r['kind']} | "
                     f"{_cell(json.dumps(r['params'], sort_keys=True))} | {_cell(r.get('source') or '')} | "
                     f"{r['candidates']} | {r['removed']} | {r['remaining']} |")
    lines.append("")
    return lines


# license ids the Hub knows, as the card's `license:` (any other, or several: "other")
_HF_IDS = frozenset({"mit", "apache-2.0", "cc-by-4.0", "cc-by-nc-4.0", "cc-by-sa-4.0", "bsd-3-clause"})
