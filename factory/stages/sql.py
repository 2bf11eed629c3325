"""`factory sql`, `factory shell`, `factory status`: read-only access to the lake (see factory.lake.query)."""
from __future__ import annotations


def register(sub, add_lake) -> None:
    """Add `sql`, `shell`, `status` to the `factory` parser."""
    p = sub.add_parser("sql", help="run a read-only SQL query against the lake")
    add_lake(p)
    p.add_argument("query")
    p.add_argument("--format", default="table", choices=["table", "csv", "json", "parquet"])
    p.add_argument("--output", help="write to this file instead of stdout (required for parquet)")
    p.add_argument("--snapshot", type=int, help="query the lake as of this snapshot id (time travel)")
    p.set_defaults(fn=cmd_sql)

    p = sub.add_parser("shell", help="interactive SQL shell with the lake attached")
    add_lake(p)
    p.add_argument("--print-init", action="store_true", help="print the SQL that attaches the lake in plain duckdb")
    p.set_defaults(fn=cmd_shell)

    p = sub.add_parser("status", help="tables, row counts, last runs, snapshots")
    add_lake(p)
    p.set_defaults(fn=cmd_status)


def cmd_sql(args) -> None:
    from factory.lake import connect
    from factory.lake.query import write_result

    with connect(args.lake, read_only=True, snapshot=args.snapshot) as con:
        write_result(con, args.query, args.format, args.output)


def cmd_shell(args) -> None:
    from factory.lake.query import init_sql, shell

    if args.print_init:
        print(init_sql(args.lake))
        return
    shell(args.lake)


def cmd_status(args) -> None:
    from factory.lake.status import print_status   # reads the catalog only: no DuckDB import

    print_status(args.lake)
