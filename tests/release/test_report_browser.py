"""The report as a reader sees it (#43): rendered by headless Chromium (Debian's `chromium` package; skipped where
it is not installed), not only its HTML. The screenshot must show the styled summary first, and the figures as
loaded images (their plot colors on the page), with every source's row in the headline table; the full-page
shot (factory.report.browser, `factory report --screenshot`) reaches the last figures and cuts the empty
background below them."""
from __future__ import annotations

import re
import shutil

import pytest

from factory.report import build_report
from factory.report.browser import MARGIN, find_chromium, screenshot

from .conftest import factory_cli

CHROMIUM = find_chromium()
SUMMARY_BG = (0xf5, 0xf8, 0xfc)    # #summary's background in factory.report.STYLE
PLOT_BLUE = (31, 119, 180)         # matplotlib's tab:blue: the problems-per-source bars
BRONZE = (140, 86, 75)             # tab:brown: the funnel's bronze.raw_records bar, a figure near the page's end
VIEWPORT = 2400
needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="headless Chromium not installed (apt-get install chromium)")


def _near(pixel, color, tol=6):
    return all(abs(a - b) <= tol for a, b in zip(pixel, color))


def _rows_with(img, color):
    width, height = img.size
    px = img.load()
    return [y for y in range(0, height, 2) if any(_near(px[x, y], color) for x in range(0, width, 7))]


@needs_chromium
def test_report_renders_summary_first_and_its_figures(releases, tmp_path):
    from PIL import Image

    page = build_report(lake=releases.lake, out=tmp_path / "report")
    text = page.read_text()
    # every source has its row in the headline table, and the summary names them all
    sources = re.findall(r"<tr><td>([a-z0-9.-]+)</td><td>[\d,]+</td>", text.split("<h2>", 1)[0])
    assert len(sources) >= 2
    assert re.search(rf"from <b>{len(sources)}</b> sources", text)
    img = Image.open(screenshot(page, tmp_path / "report.png", height=VIEWPORT)).convert("RGB")
    assert img.size == (1280, VIEWPORT)
    summary_rows = _rows_with(img, SUMMARY_BG)
    plot_rows = _rows_with(img, PLOT_BLUE)
    assert summary_rows, "the summary box (styled) is not on the page"
    assert plot_rows, "no figure was drawn: the problems-per-source bars are not on the page"
    # the summary comes first: its box is above the first figure and near the top of the page
    assert min(summary_rows) < min(plot_rows) and min(summary_rows) < 400, (min(summary_rows), min(plot_rows))
    shutil.copy(tmp_path / "report.png", tmp_path.parent / "report-screenshot.png")   # kept beside the test dir


@needs_chromium
def test_full_page_screenshot_from_the_cli(releases, tmp_path):
    """`factory report --screenshot PNG`: the whole page, longer than one viewport, down to the funnel figure
    (the seventh section), with only a thin background margin kept under the last drawn row."""
    from PIL import Image

    png = tmp_path / "shots" / "report.png"
    out = factory_cli("report", "--out", str(tmp_path / "report"), "--screenshot", str(png), lake=releases.lake)
    assert out.returncode == 0, out.stderr
    assert f"screenshot written to {png}" in out.stdout
    stored = Image.open(png)
    assert stored.mode == "P"                       # a palette PNG: small enough to commit
    img = stored.convert("RGB")
    width, height = img.size
    assert width == 1280 and height > VIEWPORT, img.size
    summary, bronze = _rows_with(img, SUMMARY_BG), _rows_with(img, BRONZE)
    assert summary and min(summary) < 400
    assert bronze and min(bronze) > VIEWPORT / 2, "the funnel figure, low on the page, is not in the shot"
    px = img.load()
    drawn = [y for y in range(height) if any(px[x, y] != (255, 255, 255) for x in range(0, width, 2))]
    assert height - 1 - max(drawn) <= MARGIN + 1, (height, max(drawn))


def test_screenshot_without_a_browser_names_the_page(tmp_path):
    page = tmp_path / "index.html"
    page.write_text("<p>x</p>")
    with pytest.raises(RuntimeError, match=r"could not render .*index\.html"):
        screenshot(page, tmp_path / "x.png", browser=str(tmp_path / "no-such-chromium"))
    with pytest.raises(FileNotFoundError, match="no HTML page"):
        screenshot(tmp_path / "missing.html", tmp_path / "x.png")


def test_palette_keeps_a_small_flat_color_and_white():
    """A legend swatch (20 x 7 px of one color) keeps its color in the 256-color PNG although 400 scattered
    edge colors each cover more pixels (250, never two side by side); the white page stays 255, not a nearby
    palette entry."""
    import random

    from PIL import Image

    from factory.report.browser import _palette

    img = Image.new("RGB", (800, 600), (255, 255, 255))
    px = img.load()
    odd = [(x, y) for y in range(30, 600) for x in range(800) if (x + y) % 2]   # no two are horizontal neighbours
    spots = random.Random(43).sample(odd, 400 * 250)
    for n, (x, y) in enumerate(spots):
        i = n % 400
        px[x, y] = (100 + i % 100, 60 + i // 100 * 30, 90)
    for x in range(20):
        for y in range(7):
            px[10 + x, 10 + y] = (23, 190, 207)   # matplotlib's tab:cyan
    out = _palette(img, 256).convert("RGB")
    assert out.getpixel((15, 12)) == (23, 190, 207)
    assert out.getpixel((0, 0)) == (255, 255, 255)
    assert len(out.getcolors(1 << 16)) <= 256
