"""Connections to the DuckLake lakehouse: extension loading, attach, init.

Layout of a lake directory::

    LAKE/catalog.sqlite   DuckLake catalog (SQLite: concurrent readers are fine)
    LAKE/data/            Parquet data files, one folder per schema/table
    LAKE/.writer.lock     flock held by the one writing stage (see factory.lake.commit)

or, for several machines writing one lake (``factory init --catalog postgres:... --data-path DIR|s3://...``)::

    LAKE/lake.json        {"catalog": "postgres:<libpq conninfo>", "data_path": "<dir or s3://bucket/prefix/>"}

A PostgreSQL catalog lets concurrent writers commit (DuckLake resolves and retries non-conflicting commits,
so no file lock is taken); object storage goes through httpfs with the usual AWS credentials/env
(``AWS_ENDPOINT_URL`` for S3-compatible endpoints).

Every connection attaches the lake as catalog ``lake`` and makes it the default, so SQL refers to tables as
``silver.problems``. The DuckLake and SQLite extensions come from the pip packages
``duckdb-extension-ducklake`` / ``duckdb-extension-sqlite`` (offline); when those are absent we fall back to
DuckDB's ``INSTALL`` (needs network).
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from factory.errors import FactoryError

if TYPE_CHECKING:   # DuckDB loads on first connect: importing the lake core (and `factory --help`) stays cheap
    import duckdb

CATALOG_FILE = "catalog.sqlite"
CONFIG_FILE = "lake.json"
DATA_DIR = "data"
LAKE_ALIAS = "lake"
FAILED_RUNS = "failed_runs.jsonl"   # failed runs' ops.runs-shaped rows, beside the catalog (factory.lake.commit)


def user_config_path() -> Path:
    """$FACTORY_CONFIG, else $XDG_CONFIG_HOME/factory/config.yaml (~/.config/factory/config.yaml)."""
    if os.environ.get("FACTORY_CONFIG"):
        return Path(os.environ["FACTORY_CONFIG"]).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "factory" / "config.yaml"


def user_config(key: str) -> str | None:
    """One `key: value` line of the user config (``lake:``, ``releases:``); a relative value is relative to the
    config file's folder, never to the current directory."""
    path = user_config_path()
    try:
        text = path.read_text()
    except OSError:
        return None
    found = re.search(rf"^{re.escape(key)}:[ \t]*(['\"]?)(.+?)\1[ \t]*(?:#.*)?$", text, re.M)
    if not found:
        return None
    value = Path(found.group(2)).expanduser()
    return str(value if value.is_absolute() else path.parent / value)


def resolve_lake_dir(lake: str | os.PathLike | None = None) -> Path:
    """--lake argument, else $FACTORY_LAKE, else ``lake:`` in the user config (:func:`user_config_path`). Never
    the current directory by default: the same command names the same lake from any folder."""
    chosen = lake or os.environ.get("FACTORY_LAKE") or user_config("lake")
    if not chosen:
        raise FactoryError(f"which lake? pass --lake DIR, set FACTORY_LAKE=DIR, or write `lake: DIR` in "
                           f"{user_config_path()}")
    return Path(chosen).expanduser().resolve()


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal (hot-path queries inline values: a parameterised one imports pandas)."""
    return "'" + str(text).replace("'", "''") + "'"


def read_failed_runs(lake_dir: Path) -> list[dict]:
    """Rows of failed runs (newest last) from LAKE/failed_runs.jsonl; torn or foreign lines are skipped."""
    path = lake_dir / FAILED_RUNS
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return [r for r in out if isinstance(r, dict)]


def _packaged_extension(module: str, filename: str) -> Path | None:
    import duckdb

    try:
        mod = __import__(module)
    except ImportError:
        return None
    path = Path(mod.__file__).parent / "extensions" / f"v{duckdb.__version__}" / filename
    return path if path.is_file() else None


def extension_paths() -> dict[str, Path] | None:
    """Paths of loadable DuckLake + SQLite extension files from pip packages, or None if not installed.

    DuckDB derives the extension name from the file name, and the SQLite extension's internal name is
    ``sqlite_scanner``, so its file is linked into a cache folder under that name.
    """
    ducklake = _packaged_extension("duckdb_extension_ducklake", "ducklake.duckdb_extension")
    sqlite = _packaged_extension("duckdb_extension_sqlite", "sqlite.duckdb_extension")
    if not (ducklake and sqlite):
        return None
    return {"ducklake": ducklake, "sqlite_scanner": _linked(sqlite, "sqlite_scanner")}


def _linked(path: Path, name: str) -> Path:
    """The extension file under the name DuckDB derives its internal name from (sqlite_scanner, ...). The link
    lives in a folder named after the file it points to, so each installation (venv) has its own link: another
    venv's run never re-points the one a printed `factory shell --print-init` names."""
    import hashlib

    import duckdb

    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "factory" / "duckdb-extensions"
    target = cache / f"v{duckdb.__version__}" / key / f"{name}.duckdb_extension"
    if not target.exists() or target.resolve() != path.resolve():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        try:
            tmp.symlink_to(path)
        except OSError:
            shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    return target


# name -> (pip package module, DuckDB's internal name) of the extensions a lake loads only when it needs them
OPTIONAL_EXTENSIONS = {"postgres": ("duckdb_extension_postgres", "postgres_scanner"),
                       "httpfs": ("duckdb_extension_httpfs", "httpfs")}


def optional_extension_file(name: str) -> Path | None:
    """The loadable file of optional extension ``name`` from its pip package (linked under DuckDB's internal
    name), or None when the package is not installed."""
    module, internal = OPTIONAL_EXTENSIONS[name]
    path = _packaged_extension(module, f"{name}.duckdb_extension")
    return _linked(path, internal) if path else None


def optional_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Load postgres / httpfs: from their pip packages (offline) if installed, else INSTALL (online)."""
    import duckdb

    module = OPTIONAL_EXTENSIONS[name][0]
    path = optional_extension_file(name)
    try:
        if path:
            _load_file(con, path)
        else:
            con.execute(f"INSTALL {name}")
            con.execute(f"LOAD {name}")
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FactoryError(f"the DuckDB {name} extension is not installed: pip install 'code-rl-factory[scale]' "
                           f"(the scale extra: {module.replace('_', '-')}=={duckdb.__version__}, loaded offline) "
                           f"[{first}]") from None


def lake_config(lake_dir: Path) -> dict:
    """The lake's catalog and data path: LAKE/lake.json if present, else the local SQLite layout."""
    cfg_file = lake_dir / CONFIG_FILE
    if cfg_file.is_file():
        cfg = json.loads(cfg_file.read_text())
        data = cfg.get("data_path") or str(lake_dir / DATA_DIR)
        return {"catalog": cfg["catalog"], "data_path": data if data.endswith("/") else data + "/"}
    return {"catalog": f"sqlite:{lake_dir / CATALOG_FILE}", "data_path": f"{lake_dir / DATA_DIR}/"}


def write_lake_config(lake_dir: Path, catalog: str | None, data_path: str | None) -> None:
    """Record a non-default catalog (``postgres:<conninfo>``) and/or data path for `factory init`; a missing
    catalog is the lake's own SQLite file."""
    catalog = catalog or f"sqlite:{lake_dir.resolve() / CATALOG_FILE}"
    if not catalog.startswith(("postgres:", "sqlite:")):
        raise FactoryError(f"--catalog {catalog!r}: expected postgres:<libpq conninfo> or sqlite:<file>")
    if data_path and not data_path.startswith(("s3://", "gs://", "r2://", "az://")):
        data_path = str(Path(data_path).resolve())
    lake_dir.mkdir(parents=True, exist_ok=True)
    cfg = {"catalog": catalog, "data_path": data_path or str(lake_dir / DATA_DIR)}
    existing = lake_dir / CONFIG_FILE
    if existing.is_file() and json.loads(existing.read_text()) != cfg:
        raise FactoryError(f"{existing} already names another catalog/data path: {existing.read_text().strip()}")
    existing.write_text(json.dumps(cfg, indent=1) + "\n")


def shared_catalog(lake_dir: Path) -> bool:
    """True when several processes may write at once (a PostgreSQL catalog): no file lock."""
    return lake_config(lake_dir)["catalog"].startswith("postgres:")


# Extension files DuckDB signature-checked -> their (device, inode, size, mtime): one it verified, in this process or
# an earlier one (VERIFIED_RECORD), and unchanged since loads with the check off (`allow_unsigned_extensions`, only
# for those connections). The record is trusted only when this user owns it and nobody else can write it.
_VERIFIED: dict[str, tuple] = {}
VERIFIED_RECORD = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "factory" / "verified-extensions.json"


def _file_id(path) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _recorded() -> dict[str, tuple]:
    """The record's entries, or {} when it is missing, unreadable, or writable by another user."""
    try:
        with open(VERIFIED_RECORD, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return {}
            return {k: tuple(v) for k, v in json.loads(f.read()).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _all_verified(paths) -> bool:
    if not (paths and all(_VERIFIED.get(str(p)) == _file_id(p) is not None for p in paths)):
        _VERIFIED.update({k: v for k, v in _recorded().items() if k not in _VERIFIED})
    return bool(paths) and all(_VERIFIED.get(str(p)) == _file_id(p) is not None for p in paths)


def _load_file(con: duckdb.DuckDBPyConnection, path) -> None:
    """LOAD an extension file; one DuckDB signature-checked (the connection does not allow unsigned extensions)
    is noted as verified."""
    con.execute(f"LOAD '{path}'")
    if con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()[0] in (False, "false"):
        fid = _file_id(path)
        if fid is not None and _VERIFIED.get(str(path)) != fid:
            _VERIFIED[str(path)] = fid
            with contextlib.suppress(OSError):   # best effort: without the record every process checks once
                VERIFIED_RECORD.parent.mkdir(parents=True, exist_ok=True)
                tmp = VERIFIED_RECORD.with_name(f"{VERIFIED_RECORD.name}.{os.getpid()}")
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as f:
                    json.dump({**_recorded(), str(path): fid}, f)
                os.replace(tmp, VERIFIED_RECORD)


def load_extensions(con: duckdb.DuckDBPyConnection) -> str:
    """Load ducklake + sqlite into a connection; returns how ('packaged' or 'installed')."""
    import duckdb

    paths = extension_paths()
    if paths:
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        for path in paths.values():
            _load_file(con, path)
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


def attach_sql(lake_dir: Path, *, read_only: bool = False, snapshot: int | None = None, cfg: dict | None = None) -> str:
    """The ATTACH statement for a lake (also printed for users of the plain duckdb CLI)."""
    cfg = cfg or lake_config(lake_dir)
    opts = [f"DATA_PATH '{cfg['data_path']}'"]
    if read_only:
        opts.append("READ_ONLY")
    if snapshot is not None:
        opts.append(f"SNAPSHOT_VERSION {int(snapshot)}")
    return f"ATTACH {sql_string('ducklake:' + cfg['catalog'])} AS {LAKE_ALIAS} ({', '.join(opts)})"


_PANDAS_WARMING: list = []


def _warm_pandas() -> None:
    """Import pandas on a background thread, once per process, while the lake is attached (DuckDB imports it on the
    first query binding a Python value: every commit). Without pandas installed: nothing."""
    if _PANDAS_WARMING or "pandas" in sys.modules or importlib.util.find_spec("pandas") is None:
        return
    _PANDAS_WARMING.append(threading.Thread(target=importlib.import_module, args=("pandas",), daemon=True,
                                            name="warm-pandas"))
    _PANDAS_WARMING[0].start()


def connect(lake: str | os.PathLike | None = None, *, read_only: bool = False, create: bool = False,
            snapshot: int | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the lake attached as ``lake`` and set as default catalog."""
    import duckdb

    lake_dir = resolve_lake_dir(lake)
    if not create and not ((lake_dir / CATALOG_FILE).is_file() or (lake_dir / CONFIG_FILE).is_file()):
        raise FactoryError(f"no lake at {lake_dir} (run `factory init --lake {lake_dir}` first)")
    cfg = lake_config(lake_dir)
    if create and "://" not in cfg["data_path"]:
        Path(cfg["data_path"]).mkdir(parents=True, exist_ok=True)
    _warm_pandas()
    # every extension file it loads already signature-checked by DuckDB and unchanged: not checked again (_VERIFIED)
    con = duckdb.connect(config={"allow_unsigned_extensions": True} if _all_verified(_extension_files(cfg)) else {})
    memory_settings(con)
    load_extensions(con)
    if cfg["catalog"].startswith("postgres:"):
        optional_extension(con, "postgres")
    if "://" in cfg["data_path"]:
        optional_extension(con, "httpfs")
        _s3_secret(con)
    try:
        con.execute(attach_sql(lake_dir, read_only=read_only or snapshot is not None, snapshot=snapshot, cfg=cfg))
    except duckdb.Error as exc:
        con.close()
        raise FactoryError(f"cannot attach lake {lake_dir}: {exc}") from exc
    con.execute(f"USE {LAKE_ALIAS}")
    if create:
        lake_options(con)
    return con


# DuckLake options `factory init` sets (persisted in the catalog: every client of the lake writes this way)
LAKE_OPTIONS = {"parquet_compression": "zstd"}


def lake_options(con: duckdb.DuckDBPyConnection) -> None:
    """Set LAKE_OPTIONS on the attached lake where its catalog holds another value (a lake made before: `factory
    init` again); files written earlier keep their codec."""
    have = dict(con.execute(f"SELECT option_name, value FROM {LAKE_ALIAS}.options()").fetchall())
    for name, value in LAKE_OPTIONS.items():
        if have.get(name) != value:
            con.execute(f"CALL {LAKE_ALIAS}.set_option('{name}', '{value}')")


MEMORY_ENV, TEMP_ENV = "FACTORY_DUCKDB_MEMORY_LIMIT", "FACTORY_DUCKDB_TEMP"


def memory_settings(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB's memory limit and spill folder for a lake connection: $FACTORY_DUCKDB_MEMORY_LIMIT (e.g. '3GB'),
    else half the machine's (or the cgroup's) memory; operators past it spill to $FACTORY_DUCKDB_TEMP, else a
    per-process folder under the system temp dir (an in-memory DuckDB has none by default, so it could only die)."""
    limit = os.environ.get(MEMORY_ENV)
    if not limit:
        total = _memory_bytes()
        limit = f"{max(total // 2, 512 << 20) >> 20}MB" if total else None
    if limit:
        con.execute(f"SET memory_limit = '{limit}'")
    temp = os.environ.get(TEMP_ENV) or os.path.join(tempfile.gettempdir(), f"factory-duckdb-{os.getpid()}")
    con.execute(f"SET temp_directory = '{temp}'")


def _memory_bytes() -> int | None:
    """Physical memory, or the cgroup's limit when lower (containers, CI)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def _extension_files(cfg: dict) -> list:
    """Every extension file a connection to a lake with this config loads ([] when any is not pip-packaged)."""
    paths = extension_paths()
    if not paths:
        return []
    files = list(paths.values())
    for name, needed in (("postgres", cfg["catalog"].startswith("postgres:")), ("httpfs", "://" in cfg["data_path"])):
        if needed:
            path = optional_extension_file(name)
            if path is None:
                return []
            files.append(path)
    return files


def _s3_secret(con: duckdb.DuckDBPyConnection) -> None:
    """S3 credentials from the usual AWS environment (and AWS_ENDPOINT_URL for S3-compatible servers)."""
    env = os.environ
    parts = ["TYPE s3"]
    if env.get("AWS_ACCESS_KEY_ID"):
        parts += [f"KEY_ID '{env['AWS_ACCESS_KEY_ID']}'", f"SECRET '{env.get('AWS_SECRET_ACCESS_KEY', '')}'"]
    else:
        parts.append("PROVIDER credential_chain")
    if env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"):
        parts.append(f"REGION '{env.get('AWS_REGION') or env.get('AWS_DEFAULT_REGION')}'")
    if endpoint := env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL"):
        scheme, _, host = endpoint.partition("://")
        parts += [f"ENDPOINT '{host.rstrip('/')}'", "URL_STYLE 'path'", f"USE_SSL {str(scheme == 'https').lower()}"]
    con.execute(f"CREATE OR REPLACE SECRET factory_s3 ({', '.join(parts)})")


def current_snapshot(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute(f"SELECT id FROM {LAKE_ALIAS}.current_snapshot()").fetchone()[0]


def existing_columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    """{schema.table: {column: type}} as the lake has them now."""
    # duckdb_columns(): information_schema.columns has the same rows, slower; the alias inlined (see sql_string)
    rows = con.execute("SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
                       f"WHERE database_name = '{LAKE_ALIAS}' ORDER BY column_index").fetchall()
    out: dict[str, dict[str, str]] = {}
    for schema, table, column, dtype in rows:
        out.setdefault(f"{schema}.{table}", {})[column] = dtype
    return out
