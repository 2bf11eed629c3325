"""`factory status`: what a lake holds, read from its DuckLake catalog alone (no DuckDB, no data file opened).

A table's rows are its live data files' record counts, less their live delete files' counts and the deletes
DuckLake inlined into the catalog, plus its live inlined rows (DuckLake keeps small inserts in the catalog).
Views are listed, not evaluated (a gold view can take seconds and a GB to count: `factory sql "SELECT count(*)
FROM gold.x"` does that on purpose). The last runs are the last snapshots' commit info (every stage run is one
commit carrying its run id and stage); failed runs come from the lake's log. On a PostgreSQL catalog the same
is read through DuckDB (tables counted, views not).
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from factory.errors import FactoryError
from factory.lake.connection import (
    CATALOG_FILE, CONFIG_FILE, FAILED_RUNS, LAKE_ALIAS, connect, lake_config, read_failed_runs, resolve_lake_dir,
)


def _objects_sqlite(db: sqlite3.Connection) -> list[tuple[str, str, int | None]]:
    """(schema.name, 'table' | 'view', rows or None) of every live table and view, from the SQLite catalog."""
    live = "end_snapshot IS NULL"
    schemas = dict(db.execute(f"SELECT schema_id, schema_name FROM ducklake_schema WHERE {live}").fetchall())
    tables = {tid: f"{schemas[sid]}.{name}" for tid, sid, name in db.execute(
        f"SELECT table_id, schema_id, table_name FROM ducklake_table WHERE {live}").fetchall() if sid in schemas}
    rows = dict.fromkeys(tables, 0)
    files = (("ducklake_data_file", "record_count", 1), ("ducklake_delete_file", "delete_count", -1))
    for table, count, sign in files:   # live data files' rows, less their live delete files' rows
        for tid, n in db.execute(f"SELECT table_id, sum({count}) FROM {table} WHERE {live} GROUP BY table_id"
                                 ).fetchall():
            if tid in rows:
                rows[tid] += sign * int(n or 0)
    known = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
    if "ducklake_inlined_data_tables" in known:
        for tid, inlined in db.execute("SELECT table_id, table_name FROM ducklake_inlined_data_tables").fetchall():
            if tid in rows and inlined in known:
                rows[tid] += db.execute(f'SELECT count(*) FROM "{inlined}" WHERE {live}').fetchone()[0]
    # deletes of file rows DuckLake kept in the catalog (ducklake_inlined_delete_<table id>), of live files only
    for tid in rows:
        if f"ducklake_inlined_delete_{tid}" in known:
            rows[tid] -= db.execute(
                f"SELECT count(*) FROM (SELECT DISTINCT file_id, row_id FROM ducklake_inlined_delete_{tid}) d "
                f"WHERE d.file_id IN (SELECT data_file_id FROM ducklake_data_file WHERE table_id = ? AND {live})",
                [tid]).fetchone()[0]
    views = [f"{schemas[sid]}.{name}" for sid, name in db.execute(
        f"SELECT schema_id, view_name FROM ducklake_view WHERE {live}").fetchall() if sid in schemas]
    return sorted([(name, "table", rows[tid]) for tid, name in tables.items()] +
                  [(name, "view", None) for name in views])


def _snapshot(sid: int, ts, msg: str | None, extra: str | None) -> tuple[int, str, str, dict]:
    """(snapshot id, time, commit message, commit extra info: {} unless a JSON object) of a snapshot row."""
    try:
        info = json.loads(extra) if extra else {}
    except ValueError:
        info = {}
    return sid, str(ts)[:19], msg or "", info if isinstance(info, dict) else {}


def _snapshots_sqlite(db: sqlite3.Connection, limit: int) -> list[tuple[int, str, str, dict]]:
    """:func:`_snapshot` of the last ``limit`` snapshots, newest first."""
    return [_snapshot(*r) for r in db.execute(
        "SELECT s.snapshot_id, s.snapshot_time, c.commit_message, c.commit_extra_info FROM ducklake_snapshot s "
        "LEFT JOIN ducklake_snapshot_changes c USING (snapshot_id) ORDER BY s.snapshot_id DESC LIMIT ?",
        [limit]).fetchall()]


def _read_duckdb(lake_dir: Path, limit: int):
    """The same, through DuckDB, for catalogs that are not a local SQLite file (PostgreSQL)."""
    with connect(lake_dir, read_only=True) as con:
        meta = f"__ducklake_metadata_{LAKE_ALIAS}"
        objects = [(name, "view", None) if kind == "VIEW" else
                   (name, "table", con.execute(f"SELECT count(*) FROM {name}").fetchone()[0])
                   for name, kind in con.execute("SELECT table_schema || '.' || table_name, table_type FROM "
                                                 "information_schema.tables WHERE table_catalog = ? ORDER BY 1",
                                                 [LAKE_ALIAS]).fetchall()]
        snaps = [_snapshot(*r) for r in con.execute(
            f"SELECT s.snapshot_id, s.snapshot_time::VARCHAR, c.commit_message, c.commit_extra_info "
            f"FROM {meta}.ducklake_snapshot s LEFT JOIN {meta}.ducklake_snapshot_changes c USING (snapshot_id) "
            f"ORDER BY s.snapshot_id DESC LIMIT {int(limit)}").fetchall()]
        return objects, snaps


def lake_status(lake=None, limit: int = 8) -> dict:
    """{"lake", "objects": [(name, kind, rows)], "snapshots": [(id, time, message, info)], "failed": [...]}."""
    lake_dir = resolve_lake_dir(lake)
    if not ((lake_dir / CATALOG_FILE).is_file() or (lake_dir / CONFIG_FILE).is_file()):
        raise FactoryError(f"no lake at {lake_dir} (run `factory init --lake {lake_dir}` first)")
    catalog = lake_config(lake_dir)["catalog"]
    if catalog.startswith("sqlite:"):
        db = sqlite3.connect(f"file:{catalog[len('sqlite:'):]}?mode=ro", uri=True)
        try:
            objects, snaps = _objects_sqlite(db), _snapshots_sqlite(db, limit)
        except sqlite3.Error as exc:
            raise FactoryError(f"cannot read the lake's catalog {catalog[len('sqlite:'):]}: {exc}") from None
        finally:
            db.close()
    else:
        objects, snaps = _read_duckdb(lake_dir, limit)
    return {"lake": lake_dir, "objects": objects, "snapshots": snaps, "failed": read_failed_runs(lake_dir)[-5:]}


def print_status(lake=None) -> None:
    """Tables with row counts, views, the last runs, failed runs (from the lake's log) and the last snapshots."""
    st = lake_status(lake)
    print(f"lake: {st['lake']}")
    print(f"\n{'table':<34} {'kind':<6} rows")
    for name, kind, n in st["objects"]:
        print(f"{name:<34} {kind:<6} {'-' if n is None else n}")
    if n_views := sum(1 for o in st["objects"] if o[1] == "view"):
        print(f"({n_views} views are not counted here: factory sql \"SELECT count(*) FROM gold.<view>\")")
    runs = [(info, ts) for _sid, ts, _msg, info in st["snapshots"] if info.get("run_id")]
    print("\nlast runs:")
    for info, ts in runs:
        print(f"  {info['run_id']:<44} {'success':<8} {ts}  {info.get('stage', '')}")
    if st["failed"]:
        print(f"\nlast failed runs (no data changed; {st['lake'] / FAILED_RUNS}):")
        for row in reversed(st["failed"]):
            print(f"  {row.get('run_id', '?'):<44} {str(row.get('finished_at', ''))[:19]}  "
                  f"{(row.get('message') or '')[:80]}")
    print("\nlast snapshots:")
    for sid, ts, msg, _info in st["snapshots"]:
        print(f"  {sid:>5}  {ts}  {msg[:90]}")
