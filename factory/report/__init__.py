"""`factory report`: one HTML page with PNG plots (matplotlib, Agg) of what the lake holds.

The page opens with the headline table (per source: problems, tests, reference and sample pass rates, problems
in RL training, contamination removed; then the releases), then the figures.
Figures: problems/tests per source, pass-rate histograms per source and model, test validity (tests every
reference passes), difficulty vs potential (when gold.difficulty has rows), the stage funnel from
ops.runs, the recipe comparison (gold.recipe_*), and the latest RM / GRPO curves and best-of-N table from ops.train_metrics. A figure whose data is
absent is replaced by a note saying what to run.
"""
from __future__ import annotations

import html
import os
from pathlib import Path

from factory.lake import connect, current_snapshot
from factory.report import data, plots
from factory.lake.commit import failed_runs, utcnow


def build_report(lake=None, out: str | os.PathLike = "report", snapshot: int | None = None) -> Path:
    """Write OUT/index.html and its PNGs; returns the HTML path."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    con = connect(lake, read_only=True, snapshot=snapshot)
    try:
        snap = current_snapshot(con)
        head = data.headline(con)
        src = data.source_counts(con)
        rates = data.program_pass_rates(con)
        valid = data.test_validity(con)
        diff = data.difficulty(con)
        fun, runs = data.funnel(con)
        for row in failed_runs(lake):  # failed runs leave no trace in the lake, only in its failed-runs log
            runs.setdefault(row.get("stage", "?"), {}).setdefault("failed", 0)
            runs[row.get("stage", "?")]["failed"] += 1
        curves = data.train_curves(con)
        kept_out = data.curation(con)
        recipe_runs = data.recipes(con)
    finally:
        con.close()
    sections = [
        ("Problems and tests per source", plots.sources(src, out / "sources.png"),
         "no problems yet: run `factory ingest`"),
        ("Pass rate per program, by source and model", plots.pass_rates(rates, out / "pass_rates.png"),
         "no executions yet: run `factory execute` to get verdicts"),
        ("Test validity: tests passed by the reference solutions", plots.validity(valid, out / "test_validity.png"),
         "no reference executions yet: run `factory execute --select reference`"),
        ("Difficulty vs potential 4p(1-p)", plots.difficulty(diff or [], out / "difficulty.png"),
         "gold.difficulty is not in the lake" if diff is None else
         "gold.difficulty is empty: run `factory curate` after sampling or mutating programs"),
        ("What reaches training, and what curation kept out (per source)",
         plots.curation(kept_out, out / "curation.png"),
         "gold.training_exclusions is not in the lake: run `factory curate`" if kept_out is None else "no problems"),
        ("Recipes compared: problems kept, difficulty, potential, overlap",
         plots.recipes(recipe_runs, out / "recipes.png"),
         "no recipe has run yet: run `factory recipe run NAME` (recipes/*.yaml)"),
        ("Stage funnel (from ops.runs)", plots.funnel(fun, runs, out / "funnel.png"), "no stage runs recorded"),
        ("Training and best-of-N (latest runs, from ops.train_metrics)", plots.training(curves, out / "training.png"),
         "no training runs yet: run `factory train rm`, `factory eval bon` or `factory train rl`"),
    ]
    page = out / "index.html"
    page.write_text(_html(snap, head, src, sections))
    return page


HEADLINE = (("source", "source"), ("problems", "problems"), ("tests", "tests"),
            ("reference pass rate", "reference_pass_rate"), ("references passing all tests", "references_all_pass"),
            ("sample pass rate", "sample_pass_rate"), ("in RL training", "rl_problems"),
            ("contamination removed", "contamination_removed"))


def _cell(row: dict, key: str) -> str:
    value = row[key]
    if key == "references_all_pass":
        return f"{value} / {row['references']}" if row["references"] else "not executed"
    if key.endswith("pass_rate"):
        return "-" if value is None else f"{value:.3f}"
    return "not curated" if value is None else html.escape(str(value))


def headline_html(head: dict) -> str:
    """The table the report opens with (data.headline): sources, problems, tests, pass rates, what reaches RL
    training, contamination removed; then the releases."""
    rows = head["sources"]
    out = ["<table id='headline'><tr>" + "".join(f"<th>{html.escape(t)}</th>" for t, _ in HEADLINE) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{_cell(r, k)}</td>" for _, k in HEADLINE) + "</tr>")
    if len(rows) > 1:
        total = {"source": "total", "references": sum(r["references"] for r in rows),
                 "references_all_pass": sum(r["references_all_pass"] for r in rows)}
        for k in ("problems", "tests", "rl_problems", "contamination_removed"):
            total[k] = None if any(r[k] is None for r in rows) else sum(r[k] for r in rows)
        for k, n in (("reference_pass_rate", "references"), ("sample_pass_rate", "samples")):
            weighted = [(r[k], r[n]) for r in rows if r[k] is not None]
            total[k] = sum(a * b for a, b in weighted) / sum(b for _, b in weighted) if weighted else None
        out.append("<tr class='total'>" + "".join(f"<td><b>{_cell(total, k)}</b></td>" for _, k in HEADLINE) + "</tr>")
    out.append("</table>")
    rel = head["releases"]
    out.append(f"<p id='releases'>Releases: {len(rel)}" + (f" ({html.escape(', '.join(rel[:10]))}"
               f"{', ...' if len(rel) > 10 else ''})" if rel else " (none yet: `factory release create` or "
                                                                   "`factory recipe run`)") + "</p>")
    return "".join(out)


def _html(snap: int, head: dict, src: list[tuple], sections: list[tuple]) -> str:
    e = html.escape
    rows = "".join(f"<tr><td>{e(s)}</td><td>{p}</td><td>{t}</td><td>{e(', '.join(f'{k}: {v}' for k, v in sorted(kinds.items())))}"
                   "</td></tr>" for s, p, t, kinds in src)
    body = [f"<h1>Dataset factory report</h1><p>Lake snapshot {snap}, generated {utcnow():%Y-%m-%d %H:%M:%S} UTC.</p>",
            headline_html(head),
            "<h2>Tests by kind</h2>"
            "<table><tr><th>source</th><th>problems</th><th>tests</th><th>tests by kind</th></tr>" + rows + "</table>"]
    for title, png, note in sections:
        body.append(f"<h2>{e(title)}</h2>")
        if png is not None:
            body.append(f'<img src="{e(png.name)}" alt="{e(title)}">')
        else:
            body.append(f'<p class="note">Skipped: {e(note)}.</p>')
    style = ("body{font-family:sans-serif;max-width:1400px;margin:2em auto}img{max-width:100%}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}.note{color:#a60}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Dataset factory report</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")
