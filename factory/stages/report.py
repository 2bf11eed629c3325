"""`factory report`: HTML report with plots of the lake (factory.report)."""
from __future__ import annotations


def register(sub, add_lake) -> None:
    """Add `report` to the `factory` parser."""
    p = sub.add_parser("report", help="HTML report with plots of the lake")
    add_lake(p)
    p.add_argument("--out", default="report", help="output folder (default: ./report)")
    p.add_argument("--snapshot", type=int, help="report on this snapshot (time travel)")
    p.add_argument("--screenshot", metavar="PNG",
                   help="also render the page with headless Chromium into this full-page PNG (as a reader sees it)")
    p.set_defaults(fn=cmd_report)


def cmd_report(args) -> None:
    from factory.report import build_report

    path = build_report(lake=args.lake, out=args.out, snapshot=args.snapshot)
    print(f"report written to {path}")
    if args.screenshot:
        from factory.errors import FactoryError
        from factory.report.browser import screenshot

        try:
            png = screenshot(path, args.screenshot, colors=256)
        except RuntimeError as exc:
            raise FactoryError(str(exc)) from None
        print(f"screenshot written to {png} ({png.stat().st_size // 1024} KB)")
