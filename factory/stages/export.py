"""`factory export`: a trainer-format dataset (verl, TRL, OpenRLHF, HF datasets) from a release."""
from __future__ import annotations

from collections.abc import Sequence


class _Formats(Sequence):
    """factory.release.export.FORMATS, read only when `factory export` parses its arguments or prints its help:
    that module loads Arrow and DuckDB, which `factory --help` does not need."""

    def __getitem__(self, i):
        from factory.release.export import FORMATS

        return FORMATS[i]

    def __len__(self) -> int:
        from factory.release.export import FORMATS

        return len(FORMATS)


def register(sub, add_lake) -> None:
    """Add `export` to the `factory` parser."""
    p = sub.add_parser("export", help="trainer-format dataset from a release")
    add_lake(p)
    p.add_argument("--releases-dir", help="folder of releases (default: $FACTORY_RELEASES, else LAKE/releases, "
                                          "else where the lake recorded the release: `factory release list`)")
    p.add_argument("name", help="release name")
    # choices set after add_argument, which would read them at once (it formats the metavar to check it)
    p.add_argument("--format", required=True).choices = _Formats()
    p.add_argument("--out", required=True, help="empty output folder")
    p.set_defaults(fn=cmd_export)


def cmd_export(args) -> None:
    from factory.streaming.allocator import keep_freed_memory

    keep_freed_memory()   # MB-sized strings freed and allocated row after row
    from factory.release.export import export_release

    meta = export_release(args.name, args.format, args.out, releases_dir=args.releases_dir)
    files = ", ".join(f"{k} ({v} rows)" for k, v in meta["files"].items())
    checked = meta["validation"].get("datasets_checked_rows")
    sampled = ("; datasets loaded the first " + ", ".join(f"{n} rows of {k}" for k, n in checked.items())
               + " (pyarrow checked every row)") if checked else ""
    print(f"{args.format} export of {args.name} in {args.out}: {files}; validated with "
          f"{meta['validation']['loader']}{sampled}")
