"""Helpers shared by lake-backed tests: create a lake, query it, run the real CLI."""
from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from factory.lake import connect, current_snapshot
from factory.lake.connection import CATALOG_FILE, lake_config, resolve_lake_dir
from factory.lake.commit import stage_run


_TEMPLATES: dict[str, Path] = {}


def _fresh_init(path: Path) -> Path:
    with stage_run("init", {}, lake=path, create=True) as run:
        run.materialize()
    return path


def init_lake(path: Path) -> Path:
    """A new lake at path, schema and transforms created exactly as `factory init` does.

    The init stage runs once per process and catalog, into a template lake; each call copies the template
    (:func:`copy_lake`). An init is ~380 catalog statements, 0.8 CPU-s; the default suite creates ~100 lakes (#43).
    A path that already holds files gets the real init stage."""
    from factory.lake.catalog import default_catalog

    path = Path(path)
    if path.exists() and any(path.iterdir()):
        return _fresh_init(path)
    key = default_catalog().fingerprint
    template = _TEMPLATES.get(key)
    if template is None:
        template = _fresh_init(Path(tempfile.mkdtemp(prefix="factory-test-lake-")) / "lake")
        atexit.register(shutil.rmtree, template.parent, True)
        _TEMPLATES[key] = template
    return copy_lake(template, path)


def copy_lake(src: Path, dst: Path) -> Path:
    """A copy of the (SQLite-catalog) lake at src, at dst, with the copy's catalog pointed at its own data folder:
    DuckLake stores the data path in the catalog, so a plain copy would write its files into src. No stage may be
    writing src."""
    shutil.copytree(src, dst, dirs_exist_ok=True)
    lake_dir = resolve_lake_dir(dst)
    con = sqlite3.connect(lake_dir / CATALOG_FILE)
    try:
        absolute = con.execute("SELECT (SELECT count(*) FROM ducklake_data_file WHERE NOT path_is_relative) + "
                               "(SELECT count(*) FROM ducklake_delete_file WHERE NOT path_is_relative)").fetchone()[0]
        with con:
            moved = con.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path' AND scope IS NULL",
                                [lake_config(lake_dir)["data_path"]]).rowcount
    finally:
        con.close()
    assert moved == 1 and not absolute, f"{lake_dir / CATALOG_FILE}: cannot point the copy at its own data folder " \
                                        f"(data_path rows {moved}, files with absolute paths {absolute})"
    return Path(dst)


def query(lake, sql: str, params=None, snapshot: int | None = None) -> list[tuple]:
    """Rows of a read-only query against the lake (optionally as of a snapshot)."""
    con = connect(lake, read_only=True, snapshot=snapshot)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def snapshot_id(lake) -> int:
    con = connect(lake, read_only=True)
    try:
        return current_snapshot(con)
    finally:
        con.close()


def factory_cli(*args: str, lake: Path, releases: Path | None = None, **kw) -> subprocess.CompletedProcess:
    """Run the real `factory` CLI in a subprocess."""
    env = dict(os.environ, FACTORY_LAKE=str(lake))
    if releases is not None:
        env["FACTORY_RELEASES"] = str(releases)
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, env=env, **kw)


# a child that runs `factory ARGS` and reports its own high-water mark (ru_maxrss of a forked child starts at the
# parent's RSS: pytest's)
_PEAK_CHILD = ("import atexit, runpy, sys\n"
               "def hwm():\n"
               "    line = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
               "    sys.stderr.write('VMHWM_KB %s\\n' % line.split()[1])\n"
               "atexit.register(hwm)\n"
               "sys.argv = ['factory'] + sys.argv[1:]\n"
               "runpy.run_module('factory.cli', run_name='__main__')\n")


def cli_peak_mb(*args: str, env: dict | None = None) -> float:
    """Peak RSS (MB) of `factory ARGS` in its own process, DuckDB held to 1 GB unless ``env`` says otherwise."""
    r = subprocess.run([sys.executable, "-c", _PEAK_CHILD, *args], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "FACTORY_DUCKDB_MEMORY_LIMIT": "1GB", **(env or {})})
    assert r.returncode == 0, r.stderr[-2000:]
    return int(r.stderr.rsplit("VMHWM_KB ", 1)[1].split()[0]) / 1024

