"""Connections to the DuckLake lakehouse: extension loading, attach, init.

Layout of a lake directory::

    LAKE/catalog.sqlite   DuckLake catalog (SQLite: concurrent readers are fine)
    LAKE/data/            Parquet data files, one folder per schema/table
    LAKE/.writer.lock     flock held by the one writing stage (see factory.stage)

Every connection attaches the lake as catalog ``lake`` and makes it the default, so SQL refers to tables as
``silver.problems``. The DuckLake and SQLite extensions come from the pip packages
``duckdb-extension-ducklake`` / ``duckdb-extension-sqlite`` (offline); when those are absent we fall back to
DuckDB's ``INSTALL`` (needs network).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb

from factory.errors import FactoryError

CATALOG_FILE = "catalog.sqlite"
DATA_DIR = "data"
LAKE_ALIAS = "lake"


def resolve_lake_dir(lake: str | os.PathLike | None = None) -> Path:
    """--lake argument, else $FACTORY_LAKE, else ./lake."""
    return Path(lake or os.environ.get("FACTORY_LAKE") or "lake").resolve()


def _packaged_extension(module: str, filename: str) -> Path | None:
    try:
        mod = __import__(module)
    except ImportError:
        return None
    path = Path(mod.__file__).parent / "extensions" / f"v{duckdb.__version__}" / filename
    return path if path.is_file() else None


def _extension_cache() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "factory" / "duckdb-extensions" / f"v{duckdb.__version__}"


def extension_paths() -> dict[str, Path] | None:
    """Paths of loadable DuckLake + SQLite extension files from pip packages, or None if not installed.

    DuckDB derives the extension name from the file name, and the SQLite extension's internal name is
    ``sqlite_scanner``, so its file is linked into a cache folder under that name.
    """
    ducklake = _packaged_extension("duckdb_extension_ducklake", "ducklake.duckdb_extension")
    sqlite = _packaged_extension("duckdb_extension_sqlite", "sqlite.duckdb_extension")
    if not (ducklake and sqlite):
        return None
    target = _extension_cache() / "sqlite_scanner.duckdb_extension"
    if not target.exists() or target.resolve() != sqlite.resolve():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        try:
            tmp.symlink_to(sqlite)
        except OSError:
            shutil.copyfile(sqlite, tmp)
        os.replace(tmp, target)
    return {"ducklake": ducklake, "sqlite_scanner": target}


def load_extensions(con: duckdb.DuckDBPyConnection) -> str:
    """Load ducklake + sqlite into a connection; returns how ('packaged' or 'installed')."""
    paths = extension_paths()
    if paths:
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        for path in paths.values():
            con.execute(f"LOAD '{path}'")
        return "packaged"
    try:
        for ext in ("ducklake", "sqlite"):
            con.execute(f"INSTALL {ext}")
            con.execute(f"LOAD {ext}")
    except duckdb.Error as exc:
        raise FactoryError(
            "cannot load the DuckLake extension: install the pip packages "
            f"duckdb-extension-ducklake=={duckdb.__version__} and duckdb-extension-sqlite=={duckdb.__version__} "
            f"(offline) or allow DuckDB to download extensions ({exc})"
        ) from exc
    return "installed"


def attach_sql(lake_dir: Path, *, read_only: bool = False, snapshot: int | None = None,
               alias: str = LAKE_ALIAS) -> str:
    """The ATTACH statement for a lake (also printed for users of the plain duckdb CLI)."""
    opts = [f"DATA_PATH '{lake_dir / DATA_DIR}/'"]
    if read_only:
        opts.append("READ_ONLY")
    if snapshot is not None:
        opts.append(f"SNAPSHOT_VERSION {int(snapshot)}")
    return f"ATTACH 'ducklake:sqlite:{lake_dir / CATALOG_FILE}' AS {alias} ({', '.join(opts)})"


def connect(lake: str | os.PathLike | None = None, *, read_only: bool = False, create: bool = False,
            snapshot: int | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the lake attached as ``lake`` and set as default catalog."""
    lake_dir = resolve_lake_dir(lake)
    if not create and not (lake_dir / CATALOG_FILE).is_file():
        raise FactoryError(f"no lake at {lake_dir} (run `factory init --lake {lake_dir}` first)")
    if create:
        (lake_dir / DATA_DIR).mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    load_extensions(con)
    try:
        con.execute(attach_sql(lake_dir, read_only=read_only or snapshot is not None, snapshot=snapshot))
    except duckdb.Error as exc:
        con.close()
        raise FactoryError(f"cannot attach lake {lake_dir}: {exc}") from exc
    con.execute(f"USE {LAKE_ALIAS}")
    return con


def current_snapshot(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute(f"SELECT id FROM {LAKE_ALIAS}.current_snapshot()").fetchone()[0]


def existing_columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    """{schema.table: {column: type}} as the lake has them now."""
    rows = con.execute(
        "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_catalog = ? ORDER BY ordinal_position", [LAKE_ALIAS]
    ).fetchall()
    out: dict[str, dict[str, str]] = {}
    for schema, table, column, dtype in rows:
        out.setdefault(f"{schema}.{table}", {})[column] = dtype
    return out
