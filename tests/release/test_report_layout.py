"""The report's figures as drawn (#43 goal 4: clear labels, no overlapping labels): each figure is built from a
real lake (HumanEval and APPS as published, curated) and checked on the drawn canvas just before it is saved: no
legend covers a bar, no count label runs out of its axes, no two tick labels of an axis overlap. In this lake
APPS is the first source and its `unvalidated` bar is the widest, so a legend in the axes' upper right corner
(the layout before #43) covers it."""
from __future__ import annotations

import pytest
from matplotlib.transforms import Bbox

from factory.lake import connect
from factory.release.funnel import REASONS
from factory.report import data, plots


def _problems(fig) -> list[str]:
    """What a reader would see wrong in FIG: legends over bars, labels outside their axes, tick labels on top of
    each other."""
    fig.tight_layout()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison:
            continue
        name = f"axes {i} ({ax.get_title()!r})"
        box = ax.get_window_extent(renderer)
        legend = ax.get_legend()
        if legend is not None:
            lb = legend.get_window_extent(renderer)
            for patch in ax.patches:
                if patch.get_width() > 0 and patch.get_height() > 0 and lb.overlaps(
                        patch.get_window_extent(renderer)):
                    found.append(f"{name}: the legend covers a bar")
                    break
        for text in ax.texts:
            tb = text.get_window_extent(renderer)
            if tb.x1 > box.x1 + 1 or tb.x0 < box.x0 - 1:
                found.append(f"{name}: label {text.get_text()!r} runs out of the axes")
        for axis in (ax.xaxis, ax.yaxis):
            labels = [(t.get_window_extent(renderer), t.get_text()) for t in axis.get_ticklabels()
                      if t.get_visible() and t.get_text()]
            for j, (a, sa) in enumerate(labels):
                for b, sb in labels[j + 1:]:
                    both = Bbox.intersection(a, b)
                    if both is not None and both.width > 1 and both.height > 1:
                        found.append(f"{name}: tick labels {sa!r} and {sb!r} overlap")
    return found


@pytest.fixture
def drawn(monkeypatch):
    """Every figure a plots function saves, checked by _problems first: {file name: problems}."""
    seen: dict[str, list[str]] = {}
    save = plots._save

    def checked(fig, path):
        seen[path.name] = _problems(fig)
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", checked)
    return seen


@pytest.fixture(scope="module")
def curated_lake(tmp_path_factory, shared_data):
    """APPS (no reference solutions: every train problem held out as `unvalidated`) and HumanEval, curated with
    the default exclusions: APPS is the first source and its exclusion bar the widest."""
    from factory.stages.curate import curate
    from factory.stages.ingest import ingest_source
    from tests.lakeutil import init_lake

    lake = init_lake(tmp_path_factory.mktemp("layout") / "lake")
    ingest_source("humaneval", None, lake=lake)
    ingest_source("apps", [shared_data / "apps_mapcoder150" / "selected150.jsonl"], lake=lake, source="apps")
    curate(lake, {})
    return lake


def test_figures_have_no_covered_bars_or_overlapping_labels(curated_lake, drawn, tmp_path):
    con = connect(curated_lake, read_only=True)
    try:
        src, kept_out, (fun, runs) = data.source_counts(con), data.curation(con), data.funnel(con)
    finally:
        con.close()
    assert [r["source"] for r in kept_out] == ["apps", "humaneval"]
    matched = [sum(r[k] for k in REASONS) for r in kept_out]
    assert matched[0] == max(matched) > 0, matched    # the bar an upper-right legend would cover
    assert plots.sources(src, tmp_path / "sources.png")
    assert plots.curation(kept_out, tmp_path / "curation.png")
    assert plots.funnel(fun, runs, tmp_path / "funnel.png")
    assert set(drawn) == {"sources.png", "curation.png", "funnel.png"}
    assert {name: p for name, p in drawn.items() if p} == {}
