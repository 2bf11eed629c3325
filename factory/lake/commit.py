"""The one commit path into the lake: a stage run is one DuckLake transaction.

    with stage_run("ingest", config, lake=...) as run:
        run.delete("silver.problems", "source = ?", [source])
        run.write("silver.problems", arrow_table)

On success the run's outputs, its ``ops.runs`` row and the commit message (run id, stage, config hash, git sha)
land in one snapshot. On any exception everything is rolled back, a ``failed`` row is recorded in
``ops.runs`` and the exception propagates. A file lock keeps one writer per lake (SQLite catalogs do not
survive concurrent writers); readers are never blocked.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import time
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import factory
from factory.lake.catalog import PROJECT_ROOT, Catalog, TableSpec, default_catalog
from factory.errors import FactoryError, interrupt_in, note_interrupt, raise_pending_interrupt, reraise_if_interrupt
from factory.lake import LAKE_ALIAS, connect, existing_columns, resolve_lake_dir, shared_catalog
from factory.lake.connection import FAILED_RUNS, read_failed_runs, sql_string

if TYPE_CHECKING:   # DuckDB and Arrow load when a run starts: importing the commit path stays cheap
    import duckdb
    import pyarrow as pa


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def config_hash(config: dict) -> str:
    canonical = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def git_sha() -> str | None:
    import subprocess

    from factory.assets import checkout

    if checkout() is None:   # an installed factory: no checkout, and never the git repository around the venv
        return None
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout(), capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@contextmanager
def writer_lock(lake_dir: Path, timeout_s: float = 600.0) -> Iterator[None]:
    """Exclusive flock on LAKE/.writer.lock; waits up to timeout_s for another writer to finish."""
    lake_dir.mkdir(parents=True, exist_ok=True)
    if shared_catalog(lake_dir):   # PostgreSQL catalog: DuckLake's own conflict detection + commit retry
        yield
        return
    with open(lake_dir / ".writer.lock", "a+") as fh:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise FactoryError(f"another stage is writing to {lake_dir}; gave up after {timeout_s:.0f}s")
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# config keys that name what a run did, in the order they appear in commit messages
_LABEL_KEYS = ("source", "sources", "selection", "model", "name", "views", "benchmarks", "names", "overrides",
               "programs", "n", "purpose")


class StageRun:
    """Handle given to a stage inside its transaction; all writes go through it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, stage: str, config: dict, catalog: Catalog):
        self.con, self.stage, self.config, self.catalog = con, stage, config, catalog
        self.config_hash = config_hash(config)
        self.run_id = f"{stage}-{utcnow():%Y%m%dT%H%M%S}-{os.urandom(4).hex()}"
        self.started_at = utcnow()
        self.row_counts: dict[str, dict[str, int]] = {}
        self.summary: str | None = None
        self.noop = False  # set by a stage that found nothing to do: rolled back, no snapshot, no run row
        self.commit_retries = 0  # run_stage: attempts lost to DuckLake transaction conflicts before this one
        self.schema_changes: list[str] = []  # columns added to the lake on open (see sync_schema)
        self.known_tables: set[str] | None = None   # tables the lake has (read on first write unless known)

    # -- bookkeeping -------------------------------------------------------------------------------------
    def _count(self, table: str, key: str, n: int) -> None:
        entry = self.row_counts.setdefault(table, {})
        entry[key] = entry.get(key, 0) + n

    def _spec(self, table: str) -> TableSpec:
        spec = self.catalog[table]
        if spec.kind != "table":
            raise FactoryError(f"{table} is a {spec.kind}; only tables can be written")
        if self.known_tables is None or table not in self.known_tables:   # e.g. a table materialized from SQL
            self.known_tables = set(existing_columns(self.con)) | (self.known_tables or set())
        if table not in self.known_tables:
            raise FactoryError(f"{table} is declared but missing from the lake: run `factory init`")
        return spec

    # -- writes ------------------------------------------------------------------------------------------
    def delete(self, table: str, where: str, params: list | tuple = ()) -> int:
        """DELETE FROM table WHERE ...; returns the number of rows removed."""
        self._spec(table)
        n = self.con.execute(f"DELETE FROM {LAKE_ALIAS}.{table} WHERE {where}", list(params)).fetchone()[0]
        self._count(table, "deleted", n)
        return n

    def write(self, table: str, data: Any) -> int:
        """Append rows (Arrow table, Polars frame or list of dicts) after checking them against the catalog."""
        import pyarrow as pa

        spec = self._spec(table)
        if isinstance(data, list) and not data:
            return 0
        arrow = _to_arrow(data)
        if "run_id" in spec.column_names and "run_id" not in arrow.column_names:
            arrow = arrow.append_column("run_id", pa.array([self.run_id] * arrow.num_rows, pa.string()))
        check_columns(spec, arrow)
        if arrow.num_rows == 0:
            return 0
        self._check_primary_key(spec, arrow)
        name = f"_incoming_{os.urandom(4).hex()}"
        self.con.register(name, arrow)
        try:
            self.con.execute(f"INSERT INTO {LAKE_ALIAS}.{table} BY NAME SELECT * FROM {name}")
        finally:
            self.con.unregister(name)
        self._count(table, "inserted", arrow.num_rows)
        return arrow.num_rows

    def _check_primary_key(self, spec: TableSpec, arrow: pa.Table) -> None:
        if not spec.primary_key:
            return
        keys = ", ".join(f'"{k}"' for k in spec.primary_key)
        name = f"_pk_{os.urandom(4).hex()}"
        self.con.register(name, arrow.select(list(spec.primary_key)))
        try:
            dup = self.con.execute(
                f"SELECT {keys}, count(*) FROM {name} GROUP BY ALL HAVING count(*) > 1 LIMIT 1").fetchone()
            if dup:
                raise FactoryError(f"{spec.name}: duplicate primary key {dup[:-1]} in the rows being written")
            clash = self.con.execute(
                f"SELECT {keys} FROM {name} SEMI JOIN {LAKE_ALIAS}.{spec.name} USING ({keys}) LIMIT 1").fetchone()
            if clash:
                raise FactoryError(f"{spec.name}: primary key {clash} already exists in the lake")
        finally:
            self.con.unregister(name)

    def materialize(self, names: list[str] | None = None, params: dict | None = None) -> list[str]:
        """(Re)create SQL-backed tables and views from sql/, in dependency order.

        SQL files may hold ``{{ name }}`` placeholders, filled from ``params`` (see factory.lake.templating).
        """
        from factory.lake.templating import render_sql, transform_params

        values = transform_params(params, run_id=self.run_id)
        self.con.execute((PROJECT_ROOT / "sql" / "macros.sql").read_text())  # shipped with the package
        done = []
        views = {r[0] for r in self.con.execute(
            "SELECT schema_name || '.' || view_name FROM duckdb_views() WHERE database_name = ?", [LAKE_ALIAS]).fetchall()}
        for spec in (s for s in self.catalog.transforms() if names is None or s.name in names):
            body = render_sql(spec.sql_text(), values, spec.sql).strip().rstrip(";")
            verb = "VIEW" if spec.kind == "view" else "TABLE"
            if (spec.name in views) != (verb == "VIEW"):   # the catalog changed its kind (e.g. a view now materialized)
                self.con.execute(f"DROP {'VIEW' if spec.name in views else 'TABLE'} IF EXISTS {LAKE_ALIAS}.{spec.name}")
            self.con.execute(f"CREATE OR REPLACE {verb} {LAKE_ALIAS}.{spec.name} AS {body}")
            n = self.con.execute(f"SELECT count(*) FROM {LAKE_ALIAS}.{spec.name}").fetchone()[0]
            self._count(spec.name, "rows", n)
            actual = [r[0] for r in self.con.execute(f"DESCRIBE {LAKE_ALIAS}.{spec.name}").fetchall()]
            if actual != spec.column_names:
                raise FactoryError(f"{spec.sql} produces columns {actual}, data_catalog.yaml declares "
                                   f"{spec.column_names} for {spec.name}")
            done.append(spec.name)
        describe(self.con, [self.catalog[n] for n in done])   # CREATE OR REPLACE dropped their comments
        return done

    # -- commit ------------------------------------------------------------------------------------------
    def run_row(self, status: str, message: str | None) -> dict:
        changes = "; ".join(self.schema_changes)
        if status == "success" and changes and message != changes:
            message = f"{message}; schema: {changes}" if message else f"schema: {changes}"
        return {
            "run_id": self.run_id, "stage": self.stage, "status": status, "config_hash": self.config_hash,
            "config": json.dumps(self.config, sort_keys=True, default=str), "git_sha": git_sha(),
            "factory_version": factory.__version__, "started_at": self.started_at, "finished_at": utcnow(),
            "row_counts": json.dumps(self.row_counts, sort_keys=True), "message": message,
        }

    def commit_message(self) -> str:
        """`<stage> <key args> <run id>`, e.g. "ingest source=mbpp ingest-2026...": readable in lake.snapshots()."""
        args = []
        for key in _LABEL_KEYS:
            value = self.config.get(key)
            if value in (None, "", [], {}):
                continue
            if isinstance(value, (list, tuple)):
                value = ",".join(map(str, value[:6])) + (",..." if len(value) > 6 else "")
            elif isinstance(value, dict):
                value = ",".join(f"{k}={v}" for k, v in list(value.items())[:6])
            args.append(f"{key}={value}")
        return " ".join([self.stage, *args, self.run_id])


def check_columns(spec: TableSpec, arrow: pa.Table) -> None:
    """Refuse columns the catalog does not declare and nulls in NOT NULL columns."""
    declared = set(spec.column_names)
    if unknown := [c for c in arrow.column_names if c not in declared]:
        raise FactoryError(f"{spec.name}: columns {unknown} are not declared in data_catalog.yaml")
    for col in (c for c in spec.columns if c.not_null):
        if col.name not in arrow.column_names:
            raise FactoryError(f"{spec.name}: required column {col.name!r} is missing")
        if arrow.column(col.name).null_count:
            raise FactoryError(f"{spec.name}: column {col.name!r} is NOT NULL but "
                               f"{arrow.column(col.name).null_count} rows are null")


def _to_arrow(data: Any) -> pa.Table:
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return data
    if isinstance(data, list):
        return pa.Table.from_pylist(data)
    if hasattr(data, "to_arrow"):
        return data.to_arrow()
    raise FactoryError(f"cannot write {type(data).__name__}; pass a pyarrow Table, polars DataFrame or list of dicts")


def _record_failure(lake_dir: Path, run: StageRun, error: BaseException) -> None:
    """A failed run changes no data and makes no snapshot: its ops.runs-shaped row goes to an append-only log
    beside the catalog (LAKE/failed_runs.jsonl), which `factory status` and the report read."""
    row = run.run_row("failed", f"{type(error).__name__}: {error}"[:4000])
    row["row_counts"] = "{}"
    with suppress(OSError):   # the lake folder is gone or read-only: the error itself still reaches the user
        with open(lake_dir / FAILED_RUNS, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, default=str, sort_keys=True) + "\n")


def failed_runs(lake=None) -> list[dict]:
    """Rows of failed runs (newest last) from LAKE/failed_runs.jsonl; torn or foreign lines are skipped."""
    return read_failed_runs(resolve_lake_dir(lake))


def sync_schema(con: duckdb.DuckDBPyConnection, catalog: Catalog, *, create: bool = True) -> list[str]:
    """Bring the lake's schema up to the catalog; returns what changed. create=True (`factory init`): create
    missing schemas and tables. Always: create declared tables missing from an existing schema and add declared
    columns an existing table lacks (DuckLake ``ALTER TABLE ... ADD COLUMN``: older rows read the column's DEFAULT,
    else NULL), so a lake made before a column was declared keeps working."""
    changes = []
    live = existing_columns(con)
    live_schemas = {name.split(".", 1)[0] for name in live}
    if create:
        for schema in catalog.schemas:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {LAKE_ALIAS}.{schema}")
    for spec in catalog.stored_tables():
        if spec.name not in live:
            if create or spec.schema in live_schemas:   # a table declared after the lake was made: add it
                con.execute(f"CREATE TABLE IF NOT EXISTS {LAKE_ALIAS}.{spec.name} "
                            f"({', '.join(c.ddl() for c in spec.columns)})")
                changes.append(f"created {spec.name}")
            continue
        for col in spec.columns:
            if col.name not in live[spec.name]:
                con.execute(f"ALTER TABLE {LAKE_ALIAS}.{spec.name} ADD COLUMN {col.ddl()}")
                changes.append(f"added {spec.name}.{col.name}")
    if describe(con, list(catalog.tables.values())):   # views, SQL tables too: words changed since made
        changes.append("column comments")
    return changes


def describe(con: duckdb.DuckDBPyConnection, specs: list[TableSpec]) -> int:
    """The catalog's words as lake comments (plain DuckDB shows them: ``duckdb_tables()``, ``duckdb_columns()``):
    a table's description and each column's trailing ``# ...``; a view gets :attr:`TableSpec.comment`, its columns'
    lines included (DuckLake refuses COMMENT ON COLUMN on a view, duckdb/ducklake#1239). Sets only what differs;
    returns how many comments it set."""
    names = [s.name for s in specs]
    live_cols = {(f"{r[0]}.{r[1]}", r[2]): r[3] for r in con.execute(
        "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() WHERE database_name = ?",
        [LAKE_ALIAS]).fetchall() if f"{r[0]}.{r[1]}" in names}
    live_objs = {f"{r[0]}.{r[1]}": r[2] for r in con.execute(
        "SELECT schema_name, table_name, comment FROM duckdb_tables() WHERE database_name = ? UNION ALL "
        "SELECT schema_name, view_name, comment FROM duckdb_views() WHERE database_name = ?",
        [LAKE_ALIAS, LAKE_ALIAS]).fetchall()}
    done = 0
    for spec in (s for s in specs if s.name in live_objs):
        kind = "VIEW" if spec.kind == "view" else "TABLE"
        if spec.comment and live_objs[spec.name] != spec.comment:
            con.execute(f"COMMENT ON {kind} {LAKE_ALIAS}.{spec.name} IS {sql_string(spec.comment)}")
            done += 1
        if kind == "VIEW":
            continue
        for col in spec.columns:
            if col.comment and live_cols.get((spec.name, col.name)) != col.comment:
                con.execute(f'COMMENT ON COLUMN {LAKE_ALIAS}.{spec.name}."{col.name}" IS {sql_string(col.comment)}')
                done += 1
    return done


SCHEMA_MARK = "schema_synced.json"   # in the lake folder: {catalog fingerprint, DuckLake schema_version}


def _schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    try:
        return con.execute(f"SELECT max(schema_version) FROM __ducklake_metadata_{LAKE_ALIAS}.ducklake_snapshot"
                           ).fetchone()[0]
    except Exception as exc:  # noqa: BLE001 - another catalog layout: always sync
        reraise_if_interrupt(exc)
        return None


def schema_in_sync(con: duckdb.DuckDBPyConnection, lake_dir: Path, catalog: Catalog) -> bool:
    """Whether the lake's schema is the one a run of this catalog already synced (same catalog fingerprint, and
    DuckLake's schema_version unchanged since: any DDL by anyone bumps it); then :func:`sync_schema` is skipped."""
    if not catalog.fingerprint:
        return False
    try:
        mark = json.loads((lake_dir / SCHEMA_MARK).read_text())
    except (OSError, ValueError):
        return False
    version = _schema_version(con)
    return version is not None and mark == {"catalog": catalog.fingerprint, "schema_version": version}


def mark_schema_synced(con: duckdb.DuckDBPyConnection, lake_dir: Path, catalog: Catalog) -> None:
    """Record that the lake (at its current schema_version) matches ``catalog`` (best effort: a read-only lake
    folder only means the next run syncs again)."""
    version = _schema_version(con)
    if version is None or not catalog.fingerprint:
        return
    if {s.name for s in catalog.stored_tables()} - set(existing_columns(con)):   # a schema the lake lacks (`factory init` creates it): not in sync
        return
    with suppress(OSError):
        tmp = lake_dir / f".{SCHEMA_MARK}.{os.getpid()}"
        tmp.write_text(json.dumps({"catalog": catalog.fingerprint, "schema_version": version}))
        os.replace(tmp, lake_dir / SCHEMA_MARK)


@contextmanager
def stage_run(stage: str, config: dict, *, lake: str | Path | None = None,
              catalog: Catalog | None = None, create: bool = False) -> Iterator[StageRun]:
    """Open the lake for writing, run the body inside one transaction and commit it with run metadata.
    create=True (`factory init`) creates the lake and syncs its schema with the catalog first, in the same
    transaction; every other run adds catalog columns missing from existing tables (noted in its ops.runs message)."""
    import duckdb
    import pyarrow as pa

    lake_dir = resolve_lake_dir(lake)
    catalog = catalog or default_catalog()
    raise_pending_interrupt()   # a Ctrl-C that a library swallowed since the last commit: stop before this one
    with writer_lock(lake_dir):
        with connect(lake_dir, create=create) as con:
            con.execute("BEGIN")
            synced = not create and schema_in_sync(con, lake_dir, catalog)
            changes = [] if synced else sync_schema(con, catalog, create=create)
            run = StageRun(con, stage, config, catalog)
            if synced:   # the lake has every table the catalog declares (checked when it was marked)
                run.known_tables = {s.name for s in catalog.stored_tables()}
            run.schema_changes = changes
            run.summary = "; ".join(changes) or None
            try:
                yield run
                if run.noop:
                    con.execute("ROLLBACK")
                    if not synced and not changes:
                        mark_schema_synced(con, lake_dir, catalog)
                    return
                raise_pending_interrupt()   # ... or one swallowed while the body ran: roll it back, not commit
                con.register("_run_row", pa.Table.from_pylist([run.run_row("success", run.summary)]))
                con.execute(f"INSERT INTO {LAKE_ALIAS}.ops.runs BY NAME SELECT * FROM _run_row")
                info = {"run_id": run.run_id, "stage": run.stage, "config_hash": run.config_hash, "git_sha": git_sha()}
                con.execute(f"CALL {LAKE_ALIAS}.set_commit_message('factory', ?, extra_info => ?)",
                            [run.commit_message(), json.dumps(info, sort_keys=True)])
                con.execute("COMMIT")
                if not synced:
                    mark_schema_synced(con, lake_dir, catalog)
            except BaseException as exc:
                with suppress(duckdb.Error):   # a failed COMMIT (e.g. a transaction conflict) already ended it
                    con.execute("ROLLBACK")
                if interrupt_in(exc) is not None:
                    note_interrupt(None)   # acted on: this rollback is the stop it asked for
                elif not isinstance(exc, GeneratorExit):
                    _record_failure(lake_dir, run, exc)
                raise


def run_stage(stage: str, config: dict, body, *, lake=None, attempts: int = 5, catalog: Catalog | None = None,
              backoff_s: float = 0.2):
    """Optimistic concurrency for a re-runnable stage body: ``body(run)`` inside :func:`stage_run`; when the commit
    loses a DuckLake transaction conflict (two writers deleting/replacing the same table on a PostgreSQL catalog),
    the body runs again on the new lake state, up to ``attempts`` times with jittered backoff. The retries are
    recorded in the run's ops.runs message and on the handle (``run.commit_retries``); returns ``body``'s result."""
    import duckdb

    for attempt in range(attempts):
        try:
            with stage_run(stage, config, lake=lake, catalog=catalog) as run:
                run.commit_retries = attempt
                result = body(run)
                if attempt:
                    run.summary = f"{run.summary + '; ' if run.summary else ''}commit retries after conflicts: {attempt}"
            return result
        except duckdb.TransactionException as exc:
            # a concurrent transaction changed what this one touched (a shared catalog: SQLite has one writer)
            if "Transaction conflict" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(backoff_s * (2 ** attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")
