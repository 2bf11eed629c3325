"""`factory export`: a trainer-format dataset (verl, TRL, OpenRLHF, HF datasets) from a release."""
from __future__ import annotations


def register(sub, add_lake) -> None:
    """Add `export` to the `factory` parser."""
    from factory.release.export import FORMATS

    p = sub.add_parser("export", help="trainer-format dataset from a release")
    p.add_argument("--releases-dir", help="folder of releases (default: $FACTORY_RELEASES or ./releases)")
    p.add_argument("name", help="release name")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--out", required=True, help="empty output folder")
    p.set_defaults(fn=cmd_export)


def cmd_export(args) -> None:
    from factory.release.export import export_release

    meta = export_release(args.name, args.format, args.out, releases_dir=args.releases_dir)
    files = ", ".join(f"{k} ({v} rows)" for k, v in meta["files"].items())
    print(f"{args.format} export of {args.name} in {args.out}: {files}; validated with "
          f"{meta['validation']['loader']}")
