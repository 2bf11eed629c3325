"""`factory report`: an HTML page whose figures are real PNGs of the lake's data."""
from __future__ import annotations

import re

import pytest

from factory.report import build_report

from .conftest import factory_cli

PNG = b"\x89PNG\r\n\x1a\n"


def test_report_on_ingested_lake(releases, tmp_path):
    # at r2's snapshot the lake holds ingested problems and pairs but no executions (time travel)
    out = factory_cli("report", "--out", str(tmp_path / "report"), "--snapshot", str(releases.r2["snapshot_id"]),
                      lake=releases.lake)
    assert out.returncode == 0, out.stderr
    page = tmp_path / "report" / "index.html"
    text = page.read_text()
    images = re.findall(r'<img src="([^"]+)"', text)
    assert len(images) >= 3 and {"sources.png", "funnel.png", "curation.png"} <= set(images)
    for name in images:
        data = (page.parent / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 5000
    assert f"<tr><td>apps</td><td>{releases.apps_problems:,}</td>" in text
    # the page opens with the headline table: before any figure, one row per source, no pass rate yet
    head = text.split("<h2>", 1)[0]
    assert "<table id='headline'>" in head and "contamination removed" in head and "Releases:" in head
    apps = re.search(r"<tr><td>apps</td><td>([\d,]+)</td><td>([\d,]+)</td><td>([^<]*)</td><td>([^<]*)</td>", head)
    assert apps and int(apps.group(1).replace(",", "")) == releases.apps_problems, apps
    assert apps.group(4) == "not executed", apps
    assert f"Lake snapshot {releases.r2['snapshot_id']}" in text
    assert "no executions yet" in text  # the pass-rate figure is skipped with a note, not faked
    assert "no training runs yet" in text


def test_report_with_executions(releases, tmp_path):
    execute = pytest.importorskip("factory.stages.execute").execute
    from factory.sandbox import Limits

    execute(releases.lake, sources=["humaneval"], max_programs=12, workers=2, limits=Limits(cpu_s=4.0))
    page = build_report(lake=releases.lake, out=tmp_path / "report")
    text = page.read_text()
    images = re.findall(r'<img src="([^"]+)"', text)
    assert {"sources.png", "pass_rates.png", "test_validity.png", "funnel.png"} <= set(images)
    assert all((page.parent / n).read_bytes().startswith(PNG) for n in images)
    from tests.lakeutil import query as q

    has_difficulty = q(releases.lake, "SELECT count(*) FROM gold.difficulty")[0][0] > 0
    if has_difficulty:   # plotted from its rows, or skipped with the note that says why
        assert "difficulty.png" in images
    else:
        assert "difficulty.png" not in images and "gold.difficulty is empty: run `factory curate`" in text
    # headline: humaneval's executed references, their mean pass rate and how many pass every test
    done = q(releases.lake, """
        SELECT count(DISTINCT e.program_id), count(DISTINCT e.program_id) FILTER (WHERE ok) FROM (
            SELECT program_id, bool_and(status = 'pass') OVER (PARTITION BY program_id) AS ok
            FROM silver.executions) e JOIN silver.programs p USING (program_id)
        JOIN silver.problems pb USING (problem_id) WHERE pb.source = 'humaneval' AND p.origin = 'reference'""")[0]
    head = text.split("<h2>", 1)[0]
    row = re.search(r"<tr><td>humaneval</td><td>[\d,]+</td><td>[\d,]+</td><td>([0-9.]+)</td><td>(\d+) / (\d+)</td>",
                    head)
    assert row, head
    assert (int(row.group(3)), int(row.group(2))) == done and done[0] >= 12
    assert 0.9 <= float(row.group(1)) <= 1.0
