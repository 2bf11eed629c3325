"""`factory transform`: (re)materialize the SQL transforms of data_catalog.yaml (files under sql/)."""
from __future__ import annotations


def register(sub, add_lake) -> None:
    """Add `transform` to the `factory` parser."""
    p = sub.add_parser("transform", help="(re)materialize SQL transforms from sql/")
    add_lake(p)
    p.add_argument("names", nargs="*", help="catalog names (default: all)")
    p.set_defaults(fn=cmd_transform)


def cmd_transform(args) -> None:
    from factory.lake.commit import stage_run

    with stage_run("transform", {"names": args.names or "all"}, lake=args.lake) as run:
        done = run.materialize(args.names or None)
    print(f"materialized {', '.join(done) or 'nothing'} (run {run.run_id})")
