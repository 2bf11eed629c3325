"""`factory release create|list|show|verify|diff|reproduce`: immutable dataset releases (factory.release)."""
from __future__ import annotations

import time

from factory.errors import FactoryError


def cmd_create(args) -> None:
    from factory.streaming.allocator import keep_freed_memory

    keep_freed_memory()   # MB-sized strings freed and allocated row after row
    from factory.release import create_release
    from factory.release.files import DEFAULT_SHARD_ROWS

    t0 = time.monotonic()
    m = create_release(args.name, args.view, lake=args.lake, releases_dir=args.releases_dir,
                       shard_rows=DEFAULT_SHARD_ROWS if args.shard_rows is None else args.shard_rows)
    files = sum(len(v["files"]) for v in m["views"].values())
    rows = ", ".join(f"{v}={i['rows']}" for v, i in m["views"].items())
    print(f"release {m['name']}: snapshot {m['snapshot_id']}, {files} data files ({rows}) "
          f"in {time.monotonic() - t0:.1f}s")
    for view, info in m["views"].items():
        if not info["rows"]:
            import sys
            print(f"warning: {view} froze 0 rows{EMPTY_VIEW_HINTS.get(view, '')}", file=sys.stderr)


# why a view a user releases can be empty, and the way out
EMPTY_VIEW_HINTS = {
    "gold.r1ci_tasks": ": it holds tasks with interpreter rollouts (`factory interpreter-rollouts sample`); without "
                       "rollouts, release gold.answer_tasks (the same tasks with their answer reward)",
    "gold.rl_problems": ": run `factory curate` (it packs gold.rl_problems) after execute has validated references",
}


def cmd_list(args) -> None:
    from factory.release import list_releases

    rows = list_releases(lake=args.lake, releases_dir=args.releases_dir)
    if not rows:
        print("no releases")
    for r in rows:
        counts = ", ".join(f"{k}={v}" for k, v in r["row_counts"].items())
        print(f"{r['name']:<24} snapshot={r['snapshot_id']!s:<6} {r['created_at'] or '-':<28} [{r['where']}] {counts}")


def cmd_show(args) -> None:
    from factory.release import show_release

    print(show_release(args.name, releases_dir=args.releases_dir))


def cmd_diff(args) -> None:
    from factory.release import diff_releases

    result = diff_releases(args.a, args.b, releases_dir=args.releases_dir)
    print(f"releases {args.a} and {args.b} verified (sha256 of every file)")
    for view, d in result.items():
        if "status" in d:
            print(f"{view}: {d['status']} ({d['rows']} rows)")
            continue
        schema = "; ".join(f"{k}: {', '.join(v)}" for k, v in d["schema"].items() if v) or "unchanged"
        prov = (f"; {d['provenance_only']} differ only in provenance ({', '.join(d['provenance_columns'])})"
                if d["provenance_only"] else "")
        print(f"{view}: {d['rows_a']} -> {d['rows_b']} rows; +{d['added']} added, -{d['removed']} removed, "
              f"~{d['changed']} changed (content columns){prov}; schema {schema}")


def cmd_verify(args) -> None:
    from factory.release import verify_release

    t0 = time.monotonic()
    r = verify_release(args.name, releases_dir=args.releases_dir)
    print(f"release {r['name']} OK: {r['files']} files, {r['rows']} rows verified in {time.monotonic() - t0:.2f}s")


def cmd_reproduce(args) -> None:
    from factory.release import reproduce_release

    r = reproduce_release(args.name, args.out, lake=args.lake, releases_dir=args.releases_dir)
    if not r["identical"]:
        raise FactoryError(f"release {args.name} does not reproduce from snapshot {r['snapshot_id']}: "
                           f"{', '.join(r['mismatches'])} differ (package versions changed: "
                           f"{r['version_differences'] or 'none'})")
    print(f"release {args.name} reproduced from snapshot {r['snapshot_id']}: {r['files']} files byte-identical")


def register(sub, add_lake) -> None:
    """Add `release` and its subcommands to the `factory` parser."""
    rel = sub.add_parser("release", help="immutable dataset releases frozen from a lake snapshot")
    rsub = rel.add_subparsers(dest="release_command", required=True)
    parsers = {}
    for name, fn, positional, hlp in (
            ("create", cmd_create, ("name",), "freeze views of the current snapshot into RELEASES/NAME"),
            ("list", cmd_list, (), "releases recorded in the lake and found on disk"),
            ("show", cmd_show, ("name",), "manifest summary"),
            ("verify", cmd_verify, ("name",), "recheck every file's sha256 and row count"),
            ("diff", cmd_diff, ("a", "b"), "rows added/removed/changed per view between releases A and B"),
            ("reproduce", cmd_reproduce, ("name",), "rebuild a release from its snapshot id and compare hashes")):
        p = parsers[name] = rsub.add_parser(name, help=hlp)
        add_lake(p)
        p.add_argument("--releases-dir", help="folder of releases (default: $FACTORY_RELEASES, else `releases:` in "
                                              "the user config, else LAKE/releases)")
        for arg in positional:
            p.add_argument(arg)
        p.set_defaults(fn=fn)
    parsers["create"].add_argument("--view", action="append", required=True, help="catalog view/table (repeatable)")
    parsers["create"].add_argument("--shard-rows", type=int, help="rows per Parquet shard")
    parsers["reproduce"].add_argument("--out", required=True, help="empty folder for the rebuilt files")
