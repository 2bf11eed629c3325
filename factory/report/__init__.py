"""`factory report`: one HTML page with PNG plots (matplotlib, Agg) of what the lake holds.

The page opens with the headline table (per source: problems, tests, reference and sample pass rates, problems in RL
training, contamination removed; then the releases), then the figures: problems/tests per source, pass-rate
histograms per source and model, test validity (tests every reference passes), difficulty vs potential (when
gold.difficulty has rows), the stage funnel (ops.runs), the recipe comparison (gold.recipe_*), the latest RM / GRPO
curves and best-of-N table (ops.train_metrics). A figure without data is replaced by a note saying what to run.
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
    with connect(lake, read_only=True, snapshot=snapshot) as con:
        snap = current_snapshot(con)
        head = data.headline(con)
        src = data.source_counts(con)
        rates = data.program_pass_rates(con)
        valid = data.test_validity(con)
        diff = data.difficulty(con)
        fun, runs = data.funnel(con)
        for row in failed_runs(lake):  # failed runs leave no trace in the lake, only in its failed-runs log
            runs[row.get("stage", "?")]["failed"] += 1
        curves = data.train_curves(con)
        kept_out = data.curation(con)
        recipe_runs = data.recipes(con)
        summaries = data.latest_summaries(con)
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
        ("Training and best-of-N (latest runs, from ops.train_metrics)",
         plots.training(curves, out / "training.png", bon_rows=summaries.get("eval-bon", {}).get("rows")),
         "no training runs yet: run `factory train rm`, `factory eval bon` or `factory train rl`"),
    ]
    page = out / "index.html"
    page.write_text(_html(snap, head, src, sections, summary_html(head, summaries)))
    return page


HEADLINE = (("source", "source"), ("problems", "problems"), ("tests", "tests"),
            ("reference pass rate", "reference_pass_rate"), ("references passing all tests", "references_all_pass"),
            ("sample pass rate", "sample_pass_rate"), ("in RL training (train / test)", "rl_problems"),
            ("contamination removed", "contamination_removed"))


def _n(value) -> str:
    """A count as a reader reads it: 206,388, not 206388."""
    return f"{value:,}" if isinstance(value, int) else html.escape(str(value))


def _cell(row: dict, key: str) -> str:
    value = row[key]
    if key == "references_all_pass":
        return f"{_n(value)} / {_n(row['references'])}" if row["references"] else "not executed"
    if key.endswith("pass_rate"):
        return "-" if value is None else f"{value:.3f}"
    if key == "rl_problems" and value is not None and row.get("rl_train") is not None:
        return f"{_n(value)} ({_n(row['rl_train'])} / {_n(value - row['rl_train'])})"
    return "not curated" if value is None else _n(value)


def headline_html(head: dict) -> str:
    """The table the report opens with (data.headline): sources, problems, tests, pass rates, what reaches RL
    training, contamination removed; then the releases."""
    rows = head["sources"]
    out = ["<table id='headline'><tr>" + "".join(f"<th>{html.escape(t)}</th>" for t, _ in HEADLINE) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{_cell(r, k)}</td>" for _, k in HEADLINE) + "</tr>" for r in rows]
    if len(rows) > 1:
        executed = sum(1 for r in rows if r["references"])
        total = {"source": f"total ({len(rows)} sources; pass rates over the {executed} executed)",
                 "references": sum(r["references"] for r in rows),
                 "references_all_pass": sum(r["references_all_pass"] for r in rows)}
        for k in ("problems", "tests", "rl_problems", "contamination_removed", "rl_train"):
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


BON_FEW = 30   # best-of-N on fewer held-out problems: one problem moves a value by more than 0.03


def summary_html(head: dict, summaries: dict) -> str:
    """The headline sentences the page opens with: what the lake holds over every source, what reaches RL
    training (train / test), which sources' references ran, the reward model's held-out accuracy with its 95 %
    Wilson interval, and best-of-N on one named set of problems."""
    e = html.escape
    rows = head["sources"]
    items = [f"<b>{sum(r['problems'] for r in rows):,}</b> problems from <b>{len(rows)}</b> sources, "
             f"{sum(r['tests'] for r in rows):,} tests."]
    if rows and all(r["rl_problems"] is not None for r in rows):
        rl = sum(r["rl_problems"] for r in rows)
        train = sum(r.get("rl_train") or 0 for r in rows)
        warn = "" if train else " <span class='warn'>No train split: no train-split problem is validated.</span>"
        items.append(f"In RL training: <b>{rl:,}</b> problems, <b>{train:,}</b> train / {rl - train:,} test.{warn}")
    executed = [r["source"] for r in rows if r["references"]]
    if rows:
        missing = [r["source"] for r in rows if not r["references"]]
        items.append(f"References executed for <b>{len(executed)} of {len(rows)}</b> sources"
                     + (f" (not executed: {e(', '.join(missing))})" if missing else "") + ".")
    rm = summaries.get("train-rm") or {}
    n = rm.get("n_eval") or 0
    if n and rm.get("heldout_accuracy") is not None:
        def acc(value):
            lo, hi = data.wilson(round(value * n), n)
            return f"{value:.2f} (95% CI {lo:.2f}-{hi:.2f})"
        verdict = ""
        if rm.get("untrained_accuracy") is not None:
            a = data.wilson(round(rm["heldout_accuracy"] * n), n)
            b = data.wilson(round(rm["untrained_accuracy"] * n), n)
            if a[0] <= b[1] and b[0] <= a[1]:
                verdict = f" <span class='warn'>{n} held-out pairs are too few to tell them apart.</span>"
        items.append(f"Reward model, held-out pair accuracy on {n} pairs: trained {acc(rm['heldout_accuracy'])}"
                     + (f", untrained {acc(rm['untrained_accuracy'])}" if rm.get("untrained_accuracy") is not None
                        else "") + f".{verdict}")
    if bon := (summaries.get("eval-bon") or {}).get("rows") or []:
        main = max((r["n_problems"] for r in bon if r["method"] == "bon"), default=None)
        same = [r for r in bon if r["n_problems"] == main]
        other = [r for r in bon if r["n_problems"] != main]
        few = (f" <span class='warn'>{main} problems are too few to rank the methods: one problem moves a "
               f"value by {1 / main:.2f}.</span>" if main and main < BON_FEW else "")
        items.append(f"Best-of-N on <b>{main}</b> held-out problems: " + ", ".join(
            f"{e(r['method'])}@{r['k']} {r['value']:.2f}" for r in same) + "." + (
            " On other problem sets (not comparable): " + ", ".join(
                f"{e(r['method'])}@{r['k']} {r['value']:.2f} on {r['n_problems']} problems" for r in other) + "."
            if other else "") + few)
    return "<ul id='summary'>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
     color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}
h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
#summary{background:#f5f8fc;border:1px solid #d5e1f0;border-radius:6px;padding:.8em 1em .8em 2em;font-size:1.05em}
#summary li{margin:.25em 0}.warn{color:#b35900;font-weight:600}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}
td,th{border:1px solid #d0d0d0;padding:3px 9px;text-align:right}td:first-child,th:first-child{text-align:left}
th{background:#f0f0f0}tr:nth-child(even) td{background:#fafafa}tr.total td{background:#eef3ea}
img{max-width:100%;border:1px solid #eee}.note{color:#a60}
"""


def _html(snap: int, head: dict, src: list[tuple], sections: list[tuple], summary: str = "") -> str:
    e = html.escape
    rows = "".join(f"<tr><td>{e(s)}</td><td>{p:,}</td><td>{t:,}</td>"
                   f"<td>{e(', '.join(f'{k}: {v:,}' for k, v in sorted(kinds.items())))}</td></tr>"
                   for s, p, t, kinds in src)
    body = [f"<h1>Dataset factory report</h1><p>Lake snapshot {snap}, generated {utcnow():%Y-%m-%d %H:%M:%S} UTC.</p>",
            summary, headline_html(head),
            "<h2>Tests by kind</h2>"
            "<table><tr><th>source</th><th>problems</th><th>tests</th><th>tests by kind</th></tr>" + rows + "</table>"]
    for title, png, note in sections:
        body.append(f"<h2>{e(title)}</h2>" + (f'<img src="{e(png.name)}" alt="{e(title)}">' if png is not None
                                             else f'<p class="note">Skipped: {e(note)}.</p>'))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Dataset factory report</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
