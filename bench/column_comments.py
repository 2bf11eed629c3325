"""Column comments a plain DuckDB session sees (#48): a newcomer's lake, read through `factory shell --print-init`.

    python bench/column_comments.py --label before --out bench/results/column_comments_before.json   # #48's before
    python bench/column_comments.py --label after --out bench/results/column_comments_after.json

Runs the real CLI (`factory init`, `ingest humaneval`, `dedup`, `curate`, `release create`) into a temporary lake
and, after each, attaches the lake in a bare ``duckdb.connect()`` with the statements `factory shell --print-init`
prints. Per layer (bronze / silver / gold / ops) it counts the catalog's columns and those whose description plain
DuckDB shows: ``column`` = ``duckdb_columns().comment`` (DuckLake stores ``COMMENT ON COLUMN`` for tables only);
``shown`` = that, or for a view column a ``name: ...`` line of the view's own comment (``duckdb_views().comment``,
``COMMENT ON VIEW``). The README's training view (gold.rl_problems) is counted on its own, and the release: its
manifest's per-view column descriptions, read with ``read_text`` + ``json_each`` in plain DuckDB.
"""
from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from harness import ROOT, factory, machine, parser, run, table, write

import duckdb

TRAINING_VIEW = "gold.rl_problems"
RELEASE = "comments-v1"


def counts(lake: Path, env: dict, declared: dict) -> dict:
    """{layer: {columns, column, shown}} and the training view's, over the catalog's columns in the lake, read in
    plain DuckDB through `factory shell --print-init`."""
    with duckdb.connect() as con:
        con.execute(factory("shell", "--print-init", lake=lake, env=env))
        cols = {(f"{s}.{t}", c): cm for s, t, c, cm in con.execute(
            "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() WHERE database_name = 'lake'"
        ).fetchall()}
        views = dict(con.execute("SELECT schema_name || '.' || view_name, comment FROM duckdb_views() "
                                 "WHERE database_name = 'lake'").fetchall())
    out: dict = {}
    for (name, column), layer in declared.items():
        if (name, column) not in cols:
            continue
        lines = {ln.split(": ", 1)[0] for ln in (views.get(name) or "").splitlines()[1:] if ": " in ln}
        native = bool(cols[(name, column)])
        for key in (layer, TRAINING_VIEW) if name == TRAINING_VIEW else (layer,):
            out.setdefault(key, Counter()).update(columns=1, column=native, shown=native or column in lines)
    return out


def release_counts(releases: Path) -> dict:
    """{view: [described columns, columns]} from the release's manifest, in plain DuckDB."""
    manifest = releases / RELEASE / "manifest.json"
    with duckdb.connect() as con:
        views = [r[0] for r in con.execute("SELECT key FROM read_text(?), json_each(content, '$.views')",
                                           [str(manifest)]).fetchall()]
        out = {}
        for v in views:
            total = con.execute(f"SELECT json_array_length(content, '$.views.\"{v}\".columns') FROM read_text(?)",
                                [str(manifest)]).fetchone()[0]
            described = con.execute(
                f"SELECT count(*) FILTER (value ->> '$' <> '') FROM read_text(?), "
                f"json_each(content, '$.views.\"{v}\".column_comments')", [str(manifest)]).fetchone()[0]
            out[v] = [described, total]
        return out


def main() -> None:
    ap = parser(__doc__, "column_comments.json")
    ap.add_argument("--label", default="after", help="before | after (stored in the JSON)")
    args = ap.parse_args()
    from factory.lake.catalog import load_catalog
    catalog = load_catalog(ROOT / "data_catalog.yaml")
    declared = {(s.name, c.name): s.layer for s in catalog.tables.values() for c in s.columns}
    described = sum(1 for s in catalog.tables.values() for c in s.columns if c.comment)
    with tempfile.TemporaryDirectory(prefix="column-comments-") as tmp:
        lake, releases = Path(tmp) / "lake", Path(tmp) / "releases"
        env = dict(os.environ, FACTORY_LAKE=str(lake), FACTORY_RELEASES=str(releases))
        steps = [("init", ["init"]), ("ingest humaneval", ["ingest", "humaneval"]), ("dedup", ["dedup"]),
                 ("curate", ["curate"]),
                 ("release", ["release", "create", RELEASE, "--view", TRAINING_VIEW, "--view", "gold.bon_candidates"])]
        stages, rows = {}, []
        for label, argv in steps:
            seconds = run([sys.executable, "-m", "factory.cli", *argv], env=env)[0]
            got = counts(lake, env, declared)
            stages[label] = {"seconds": round(seconds, 2), "layers": got}
            for key, c in sorted(got.items()):
                rows.append({"after": label, "layer": key, "columns": c["columns"],
                             "duckdb_columns comment": c["column"], "shown (column or view comment)": c["shown"]})
        release = release_counts(releases)
    print(table(rows))
    print(f"\ncatalog: {described} of {len(declared)} columns have a description")
    for v, (d, n) in release.items():
        print(f"release {RELEASE}: {v}: {d} of {n} columns described (manifest column_comments)")
    write(args.out, {"label": args.label, "machine": machine(), "catalog_described": described,
                     "catalog_columns": len(declared), "stages": stages, "release": release})


if __name__ == "__main__":
    main()
