"""Before/after screenshots of `factory report` (#43), rendered the way a reader sees them: headless Chromium,
full page, 1280 px wide (factory.report.browser).

"After" is this checkout's report; "before" is the report code of an earlier commit (taken out with
`git archive`, so the checkout and its worktrees are left alone) run on the same lake, read-only.
docs/images/report-{before,after}.png (before: 802f29d, the commit before #43's report changes) come from:

    python bench/report_screenshots.py --lake demo/lake --out docs/images --before 802f29d

(the lake of `factory demo --data-dir ../shared/data`; any lake both versions can read works). Each PNG is
stored with a palette of its 256 main flat colors (about 320 KB for a 6,500 px page; 128 or 64 colors when
that is over --max-kb, default 400), and the run fails when even 64 colors are too many.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT  # noqa: I001  (first: the repository on sys.path)

from factory.report.browser import screenshot  # noqa: E402

RENDER = "import sys; from factory.report import build_report; print(build_report(lake=sys.argv[1], out=sys.argv[2]))"


def render_at(rev: str, lake: Path, out: Path) -> Path:
    """Write the report of commit REV's code for LAKE into OUT (a subprocess importing that commit's factory)."""
    with tempfile.TemporaryDirectory(prefix="report-before-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], capture_output=True)
        if tar.returncode != 0:
            raise SystemExit(f"git archive {rev} failed: {tar.stderr.decode()[-500:]}")
        subprocess.run(["tar", "-x", "-C", str(src)], input=tar.stdout, check=True)
        env = {**os.environ, "PYTHONPATH": str(src)}
        env.pop("FACTORY_LAKE", None)
        done = subprocess.run([sys.executable, "-c", RENDER, str(lake), str(out)], cwd=src, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"the report of {rev} failed on {lake}:\n{done.stderr[-3000:]}")
        check = subprocess.run([sys.executable, "-c", "import factory; print(factory.__file__)"], cwd=src,
                               env=env, capture_output=True, text=True)
        if not check.stdout.strip().startswith(str(src)):   # the installed package would have shadowed REV's code
            raise SystemExit(f"{rev}'s factory was not the one imported ({check.stdout.strip()})")
        return out / "index.html"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lake", required=True, type=Path, help="the lake both reports read (e.g. demo/lake)")
    ap.add_argument("--out", default=ROOT / "docs" / "images", type=Path, help="folder for report-*.png")
    ap.add_argument("--before", metavar="REV", help="also shoot this commit's report as report-before.png")
    ap.add_argument("--width", type=int, default=1280, help="browser window width in CSS px (default 1280)")
    ap.add_argument("--max-kb", type=int, default=400, help="fail when a PNG is larger (default 400)")
    args = ap.parse_args()
    from factory.report import build_report

    lake = args.lake.resolve()
    with tempfile.TemporaryDirectory(prefix="report-shots-") as tmp:
        pages = {"after": build_report(lake=lake, out=Path(tmp) / "after")}
        if args.before:
            pages["before"] = render_at(args.before, lake, Path(tmp) / "before")
        too_big = []
        from PIL import Image

        for name, page in pages.items():
            for colors in (256, 128, 64):           # fewer colors only when the file is over --max-kb
                t0 = time.perf_counter()
                png = screenshot(page, args.out / f"report-{name}.png", width=args.width, colors=colors)
                w, h = Image.open(png).size
                kb = png.stat().st_size / 1024
                print(f"{png}: {w} x {h} px, {colors} colors, {kb:.0f} KB, rendered in "
                      f"{time.perf_counter() - t0:.1f} s")
                if kb <= args.max_kb:
                    break
            else:
                too_big.append(f"{png} is {kb:.0f} KB with 64 colors (> {args.max_kb} KB: lower --width)")
    if too_big:
        print("\n".join(too_big), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
