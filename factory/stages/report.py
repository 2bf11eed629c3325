"""`factory report`: HTML report with plots of the lake (factory.report)."""
from __future__ import annotations


def register(sub, add_lake) -> None:
    """Add `report` to the `factory` parser."""
    p = sub.add_parser("report", help="HTML report with plots of the lake")
    add_lake(p)
    p.add_argument("--out", default="report", help="output folder (default: ./report)")
    p.add_argument("--snapshot", type=int, help="report on this snapshot (time travel)")
    p.set_defaults(fn=cmd_report)


def cmd_report(args) -> None:
    from factory.report import build_report

    path = build_report(lake=args.lake, out=args.out, snapshot=args.snapshot)
    print(f"report written to {path}")
