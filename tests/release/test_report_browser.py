"""The report as a reader sees it (#43): rendered by headless Chromium (Debian's `chromium` package; skipped where
it is not installed), not only its HTML. The screenshot must show the styled summary first, and the figures as
loaded images (their plot colors on the page), with every source's row in the headline table."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from factory.report import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
SUMMARY_BG = (0xf5, 0xf8, 0xfc)    # #summary's background in factory.report.STYLE
PLOT_BLUE = (31, 119, 180)         # matplotlib's tab:blue: the problems-per-source bars


def _screenshot(page, png, height=2400):
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          f"--screenshot={png}", f"--window-size=1280,{height}", page.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0 and png.is_file(), out.stderr[-2000:]
    from PIL import Image
    return Image.open(png).convert("RGB")


def _near(pixel, color, tol=6):
    return all(abs(a - b) <= tol for a, b in zip(pixel, color))


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_report_renders_summary_first_and_its_figures(releases, tmp_path):
    page = build_report(lake=releases.lake, out=tmp_path / "report")
    text = page.read_text()
    # every source has its row in the headline table, and the summary names them all
    sources = re.findall(r"<tr><td>([a-z0-9.-]+)</td><td>\d+</td>", text.split("<h2>", 1)[0])
    assert len(sources) >= 2
    assert re.search(rf"from <b>{len(sources)}</b> sources", text)
    img = _screenshot(page, tmp_path / "report.png")
    width, height = img.size
    px = img.load()
    rows_with = lambda color: [y for y in range(0, height, 2)                       # noqa: E731
                               if any(_near(px[x, y], color) for x in range(0, width, 7))]
    summary_rows = rows_with(SUMMARY_BG)
    plot_rows = rows_with(PLOT_BLUE)
    assert summary_rows, "the summary box (styled) is not on the page"
    assert plot_rows, "no figure was drawn: the problems-per-source bars are not on the page"
    # the summary comes first: its box is above the first figure and near the top of the page
    assert min(summary_rows) < min(plot_rows) and min(summary_rows) < 400, (min(summary_rows), min(plot_rows))
    shutil.copy(tmp_path / "report.png", tmp_path.parent / "report-screenshot.png")   # kept beside the test dir
