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
    assert f"<tr><td>apps</td><td>{releases.apps_problems}</td>" in text
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
    assert "Difficulty" in text  # plotted, or skipped with a note when gold.difficulty is empty
