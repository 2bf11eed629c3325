"""The report as a reader sees it: a full-page PNG of an HTML page rendered by headless Chromium.

Chromium's `--screenshot` captures one viewport, so the page is shot in a viewport taller than it (and taller
again while the content reaches the bottom edge), then the empty background below the last drawn row is cut
off. `colors` stores the PNG with a palette of that many of the page's flat colors (plots and text are mostly
flat colors: a 6,500 px page is ~320 KB instead of ~800 KB).
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
BACKGROUND = (255, 255, 255)   # the page's background (factory.report.STYLE sets none: white)
MARGIN = 24                    # px kept below the last drawn row


def find_chromium() -> str | None:
    """Path of a headless-capable Chromium (Debian package `chromium`), or None."""
    return next(filter(None, map(shutil.which, BROWSERS)), None)


def _shoot(browser: str, page: Path, png: Path, width: int, height: int) -> None:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", f"--window-size={width},{height}", f"--screenshot={png}",
           page.resolve().as_uri()]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"{browser} could not render {page}: {exc}") from None
    if out.returncode != 0 or not png.is_file():
        raise RuntimeError(f"{browser} could not render {page} (exit {out.returncode}): {out.stderr[-1500:]}")


def _last_drawn_row(img) -> int:
    """Index of the lowest row holding a pixel that is not the page background (-1 for a blank image)."""
    width, height = img.size
    px = img.load()
    drawn = (y for y in range(height - 1, -1, -1) if any(px[x, y] != BACKGROUND for x in range(0, width, 2)))
    return next(drawn, -1)


def screenshot(page: str | Path, png: str | Path, width: int = 1280, height: int | None = None,
               colors: int | None = None, max_height: int = 32768, browser: str | None = None) -> Path:
    """Render PAGE (an HTML file) with headless Chromium into PNG and return its path.

    height=None: the whole page (shot in a viewport taller than the page, the background below it cut off); else one
    viewport of that height. colors: store with a palette of that many colors (smaller file). Raises RuntimeError
    naming the page when Chromium is missing or fails, or the page is taller than max_height px."""
    from PIL import Image

    page, png = Path(page), Path(png)
    if not page.is_file():
        raise FileNotFoundError(f"no HTML page at {page}")
    browser = browser or find_chromium()
    if browser is None:
        raise RuntimeError(f"cannot render {page}: no headless Chromium on PATH ({', '.join(BROWSERS)}; "
                           "Debian: apt-get install chromium)")
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="report-shot-") as tmp:
        raw = Path(tmp) / "shot.png"
        tall = 8192 if height is None else height
        while True:
            _shoot(browser, page, raw, width, tall)
            img = Image.open(raw).convert("RGB")
            if height is not None:   # one viewport, as asked
                break
            last = _last_drawn_row(img)
            if last < img.height - MARGIN:      # background below the content: the whole page is in
                img = img.crop((0, 0, img.width, max(last + 1 + MARGIN, 1)))
                break
            if tall >= max_height:
                raise RuntimeError(f"{page} is taller than {max_height} px: the screenshot would be cut")
            tall = min(tall * 2, max_height)
        if colors:
            img = _palette(img, colors)
        img.save(png, optimize=True)
    return png


def _palette(img, colors: int):
    """IMG with a palette of COLORS of its flat colors, every other color mapped to the nearest of them,
    undithered. A color ranks by its pixels that repeat their left neighbour (fills: page, boxes, bars, legend
    swatches), not by all its pixels, so anti-aliased text edges never push a rare legend color out; a fitted
    palette (or Pillow's cached lookup) would shift white and light backgrounds. Only anti-aliased edges move."""
    import numpy as np
    from PIL import Image

    rgb = np.asarray(img.convert("RGB")).astype(np.int32)
    keys = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
    repeats = np.zeros(keys.shape, dtype=bool)
    repeats[:, 1:] = keys[:, 1:] == keys[:, :-1]
    uniq, inverse, counts = np.unique(keys.ravel(), return_inverse=True, return_counts=True)
    fills = np.bincount(inverse, weights=repeats.ravel(), minlength=len(uniq))
    top = uniq[np.lexsort((-counts, -fills))[:colors]]
    pal = np.stack([(top >> 16) & 255, (top >> 8) & 255, top & 255], axis=1)
    ucol = np.stack([(uniq >> 16) & 255, (uniq >> 8) & 255, uniq & 255], axis=1)
    nearest = np.empty(len(uniq), dtype=np.uint8)
    for start in range(0, len(uniq), 4096):        # every distinct color against the palette, 4,096 at a time
        d = ((ucol[start:start + 4096, None, :] - pal[None, :, :]) ** 2).sum(axis=2)
        nearest[start:start + 4096] = d.argmin(axis=1)
    out = Image.fromarray(nearest[inverse].reshape(keys.shape), mode="P")
    out.putpalette([int(v) for c in pal for v in c] + [0] * (3 * (256 - len(pal))))
    return out
