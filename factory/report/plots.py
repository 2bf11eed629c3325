"""Matplotlib (Agg) figures of the report; each returns the PNG it wrote, or None with a note for the page."""
from __future__ import annotations

from itertools import cycle, product
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
import matplotlib.transforms  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _spans_decades(values) -> bool:
    """Counts that span two decades or more read better on a log axis (one big source flattens the rest)."""
    vals = [v for v in values if v and v > 0]
    return bool(vals) and max(vals) / min(vals) >= 100


def _short(name: str, width: int = 32) -> str:
    """A model or origin name that fits a legend: a file path's last part, long names cut in the middle."""
    name = name.rstrip("/").rsplit("/", 1)[-1] if "/" in name and name.endswith(".gguf") else name
    return name if len(name) <= width else name[:width // 2 - 1] + "..." + name[-(width // 2 - 2):]


def _legend_below(ax, ncol: int = 4) -> None:
    """The legend under the axes' tick labels (a fixed distance in points, whatever the axes' height), never
    over a bar however long the bars are."""
    below = matplotlib.transforms.offset_copy(ax.transAxes, fig=ax.figure, y=-24, units="points")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below, ncol=ncol,
              frameon=False)


def _label_bars(ax, bars, values) -> None:
    for bar, v in zip(bars, values):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {v:,}", va="center", fontsize=8)


def sources(rows: list[tuple], path: Path) -> Path | None:
    """Problems and tests per source, each bar labelled with its count; log axes where the counts span decades
    (tests by kind are in the page's table)."""
    if not rows:
        return None
    names = [r[0] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, max(3, 0.4 * len(rows) + 1.5)))
    for ax, values, title, color in ((a, [r[1] for r in rows], "problems per source", "tab:blue"),
                                     (b, [r[2] for r in rows], "tests per source", "tab:orange")):
        bars = ax.barh(names, values, color=color)
        _label_bars(ax, bars, values)
        if _spans_decades(values):
            ax.set_xscale("log")
            ax.set_xlim(max(0.8, min(v for v in values if v > 0) / 2), max(values) * 8)
            title += " (log scale)"
        else:
            ax.set_xlim(0, max(max(values), 1) * 1.2)
        ax.set_title(title)
        ax.invert_yaxis()
    b.tick_params(axis="y", labelleft=False)
    return _save(fig, path)


def pass_rates(rows: list[tuple], path: Path) -> Path | None:
    if not rows:
        return None
    by_source: dict[str, dict[str, list[float]]] = {}
    for source, grp, rate in rows:
        by_source.setdefault(source, {}).setdefault(grp, []).append(rate)
    n = len(by_source)
    cols = min(3, n)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.5 * cols, 3.2 * nrows), squeeze=False)
    bins = [i / 10 for i in range(11)]
    for ax, (source, groups) in zip(axes.flat, by_source.items()):
        for grp, rates in sorted(groups.items()):
            # each group as a share of its own programs: 9 samples stay visible beside 631 mutants
            ax.hist(rates, bins=bins, weights=[1 / len(rates)] * len(rates), histtype="step", linewidth=1.5,
                    label=f"{_short(grp)} (n={len(rates):,})")
        ax.set_title(source)
        ax.set_xlabel("pass rate (passed / executed tests)")
        ax.set_ylabel("share of the group's programs")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7, loc="upper center")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return _save(fig, path)


def validity(rows: list[tuple], path: Path) -> Path | None:
    if not rows:
        return None
    names = [r[0] for r in rows]
    frac = [r[2] / r[1] if r[1] else 0.0 for r in rows]
    fig, ax = plt.subplots(figsize=(8, max(3, 0.4 * len(rows) + 1.5)))
    bars = ax.barh(names, frac, color="tab:green")
    for bar, r in zip(bars, rows):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {r[2]:,} / {r[1]:,}", va="center", fontsize=8)
    ax.set_xlim(0, 1.3)
    ax.set_xlabel("fraction of tests passed by every reference solution")
    ax.invert_yaxis()
    return _save(fig, path)


def difficulty(rows: list[tuple], path: Path) -> Path | None:
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7, 5))
    xs = [i / 100 for i in range(101)]
    ax.plot(xs, [4 * x * (1 - x) for x in xs], color="grey", linewidth=1, label="4p(1-p)")
    by_source: dict[str, list[tuple]] = {}
    for source, p, pot in rows:
        by_source.setdefault(source, []).append((p, pot))
    for source, pts in sorted(by_source.items()):
        ax.scatter([p for p, _ in pts], [q for _, q in pts], s=12, alpha=0.6, label=f"{source} (n={len(pts)})")
    ax.set_xlabel("pass rate p (difficulty model)")
    ax.set_ylabel("potential")
    ax.legend(fontsize=8)
    return _save(fig, path)


def funnel(rows: list[tuple], runs: dict, path: Path) -> Path | None:
    if not rows:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, max(3.5, 0.35 * len(rows) + 1.5)),
                               gridspec_kw={"width_ratios": [3, 1]})
    labels = [f"{t} ({s})" for t, s, _ in rows]
    colors = ["tab:brown" if t.startswith("bronze") else "silver" if t.startswith("silver") else "gold"
              for t, _, _ in rows]
    bars = a.barh(labels, [n for _, _, n in rows], color=colors, edgecolor="black", linewidth=0.5)
    _label_bars(a, bars, [n for _, _, n in rows])
    a.set_xscale("log")
    a.set_xlim(0.8, max(n for _, _, n in rows) * 5)
    a.invert_yaxis()
    a.set_title("rows per table after the recorded stage runs (log scale)")
    # stage names on the y axis, one per row: horizontal text never overlaps, however many stages ran
    stages = sorted(runs)
    ok = [runs[s].get("success", 0) for s in stages]
    bad = [sum(v for k, v in runs[s].items() if k != "success") for s in stages]
    b.barh(stages, ok, color="tab:green", label="success")
    b.barh(stages, bad, left=ok, color="tab:red", label="failed")
    for i, (o, f) in enumerate(zip(ok, bad)):
        b.text(o + f, i, f" {o}" + (f" + {f} failed" if f else ""), va="center", fontsize=8)
    b.set_xlim(0, max(max(o + f for o, f in zip(ok, bad)), 1) * 1.3)
    b.set_title("stage runs")
    b.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    b.tick_params(axis="y", labelsize=8)
    b.invert_yaxis()
    _legend_below(b, ncol=2)
    return _save(fig, path)


CURVE_LABELS = {"loss": "training loss", "accuracy": "training-batch accuracy",
                "eval/accuracy": "held-out pair accuracy", "reward_mean": "mean reward", "solve_rate": "solve rate",
                "entropy": "entropy", "pg_clipfrac": "clipped fraction"}


def training(curves: dict[str, list[tuple]], path: Path, bon_rows: list[dict] | None = None) -> Path | None:
    """RM loss/accuracy per step, RL mean reward per step, best-of-N value vs k (latest run of each); a best-of-N
    method measured on another number of problems than bon's is labelled with its count (not comparable)."""
    counts = {r["method"]: r["n_problems"] for r in reversed(bon_rows or [])}   # a method's first row wins
    main = counts.get("bon")
    panels = [k for k in ("train-rm", "train-rl", "eval-bon") if curves.get(k)]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, stage in zip(axes[0], panels):
        by: dict[str, list[tuple]] = {}
        for step, metric, value in curves[stage]:
            by.setdefault(metric, []).append((step, value))
        if stage == "eval-bon":
            for method, style in (("oracle", "k--"), ("bon", "o-"), ("average", "s:"), ("greedy", "^")):
                pts = sorted((int(m.split("@")[1]), v) for m, vals in by.items() if m.startswith(method + "@")
                             for _, v in vals)
                if pts:
                    n = counts.get(method)
                    label = method if n is None or n == main else f"{method} (other set: {n} problems)"
                    ax.plot([k for k, _ in pts], [v for _, v in pts], style, label=label)
            ax.set_xscale("log", base=2)
            ks = sorted({int(m.split("@")[1]) for m in by if "@" in m})
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xlabel("k (candidates)")
            ax.set_ylabel("pass rate of the chosen program")
            ax.set_title("best-of-N on held-out problems" + (f" ({main} problems)" if main else ""))
        else:
            keys = ("loss", "accuracy", "eval/accuracy") if stage == "train-rm" else (
                "reward_mean", "solve_rate", "entropy", "pg_clipfrac")
            for key in keys:
                if pts := sorted(by.get(key, [])):
                    ax.plot([s for s, _ in pts], [v for _, v in pts], "o-" if key.startswith("eval") else "-",
                            label=CURVE_LABELS.get(key, key))
            ax.set_xlabel("step")
            ax.set_title("reward model (Bradley-Terry)" if stage == "train-rm" else "GRPO")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    return _save(fig, path)


def curation(rows: list[dict] | None, path: Path) -> Path | None:
    """Per source: what reaches the training views (train / test split) and what curation kept out, and the
    problems each exclusion rule matched (rules overlap, so the right panel does not add up per source)."""
    if not rows:
        return None
    from factory.release.funnel import REASONS

    names = [r["source"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, max(3, 0.4 * len(rows) + 1.5)))
    left = [0] * len(rows)
    for key, color in (("train", "tab:green"), ("test", "tab:blue"), ("excluded", "tab:red"),
                       ("no_usable_tests", "tab:gray")):
        vals = [r[key] for r in rows]
        a.barh(names, vals, left=left, color=color, label=key.replace("_", " "))
        left = [x + y for x, y in zip(left, vals)]
    for i, r in enumerate(rows):
        a.text(left[i], i, f" {r['train'] + r['test']:,} of {left[i]:,}", va="center", fontsize=8)
    a.set_xlim(0, max(max(left), 1) * 1.25)
    a.set_title("problems per source: in the training views (train, test) vs kept out")
    a.invert_yaxis()
    _legend_below(a)
    left = [0] * len(rows)
    # one color per rule (none of the left panel's), as many as REASONS has: a rule without a color was dropped
    palette = ("tab:purple", "tab:orange", "tab:olive", "tab:brown", "tab:pink", "tab:cyan", "gold", "navy",
               "darkred", "lime")
    for reason, color in zip(REASONS, cycle(palette)):
        vals = [r[reason] for r in rows]
        b.barh(names, vals, left=left, color=color, label=reason)
        left = [x + y for x, y in zip(left, vals)]
    b.set_xlim(0, max(max(left), 1) * 1.05)
    b.set_title("problems matched per exclusion rule (rules overlap)")
    b.invert_yaxis()
    _legend_below(b)
    return _save(fig, path)


def recipes(data: dict | None, path: Path) -> Path | None:
    """Recipe comparison: problems kept, pass-rate and potential histograms of the kept problems, overlap matrix
    (Jaccard of the kept sets)."""
    if not data:
        return None
    names = sorted(data)
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    a, b, c, d = axes.flat
    kept = [len(data[n]["kept"]) for n in names]
    a.barh(names, [data[n]["candidates"] for n in names], color="lightgrey", label="candidates")
    _label_bars(a, a.barh(names, kept, color="tab:green", label="kept"), kept)
    a.invert_yaxis()
    a.set_title("problems kept per recipe")
    a.legend(fontsize=8)
    bins = [i / 10 for i in range(11)]
    for ax, key, label in ((b, "pass_rate", "pass rate p (recipe's difficulty model)"),
                           (c, "potential", "potential 4p(1-p)")):
        for n in names:
            if data[n][key]:
                ax.hist(data[n][key], bins=bins, histtype="step", linewidth=1.5, label=f"{n} (n={len(data[n][key])})")
        ax.set_xlabel(label)
        ax.set_ylabel("kept problems")
        ax.legend(fontsize=7)
    b.set_title("difficulty of the kept problems")
    c.set_title("potential of the kept problems")
    matrix = [[(len(data[x]["kept"] & data[y]["kept"]) / len(data[x]["kept"] | data[y]["kept"]))
               if data[x]["kept"] | data[y]["kept"] else 0.0 for y in names] for x in names]
    im = d.imshow(matrix, vmin=0, vmax=1, cmap="viridis")
    d.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    d.set_yticks(range(len(names)), names, fontsize=8)
    for i, j in product(range(len(names)), repeat=2):
        d.text(j, i, f"{matrix[i][j]:.2f}", ha="center", va="center", fontsize=7,
               color="white" if matrix[i][j] < 0.6 else "black")
    d.set_title("overlap of kept problems (Jaccard)")
    fig.colorbar(im, ax=d, fraction=0.046)
    return _save(fig, path)
