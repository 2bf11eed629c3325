"""`factory init`: create the lake, or add the tables and columns newly declared in data_catalog.yaml."""
from __future__ import annotations


def register(sub, add_lake) -> None:
    """Add `init` to the `factory` parser."""
    p = sub.add_parser("init", help="create the lake (or add tables/columns newly declared in the catalog)")
    add_lake(p)
    p.add_argument("--catalog", help="postgres:<libpq conninfo> for a multi-writer lake (default: LAKE/catalog.sqlite)")
    p.add_argument("--data-path", help="where Parquet files go: a directory or s3://bucket/prefix (default: LAKE/data)")
    p.set_defaults(fn=cmd_init)


def cmd_init(args) -> None:
    from factory.lake import resolve_lake_dir
    from factory.lake.commit import stage_run

    lake_dir = resolve_lake_dir(args.lake)
    if args.catalog or args.data_path:
        from factory.lake import write_lake_config
        _preflight_extensions(args.catalog, args.data_path)   # before anything is written: no half-made lake
        write_lake_config(lake_dir, args.catalog, args.data_path)
    with stage_run("init", {"catalog": "data_catalog.yaml"}, lake=lake_dir, create=True) as run:
        views = run.materialize()
    print(f"lake ready at {lake_dir} (run {run.run_id}; {run.summary or 'schema up to date'}; "
          f"transforms: {', '.join(views) or 'none'})")


def _preflight_extensions(catalog: str | None, data_path: str | None) -> None:
    """A PostgreSQL catalog / object-store data path needs the `scale` extra's DuckDB extensions: a missing one
    is an error naming the extra before LAKE/lake.json or any folder is written."""
    import duckdb

    from factory.lake import optional_extension

    needed = (["postgres"] if (catalog or "").startswith("postgres:") else []) + \
        (["httpfs"] if "://" in (data_path or "") else [])
    with duckdb.connect() as con:
        for name in needed:
            optional_extension(con, name)
