"""Helpers shared by lake-backed tests: create a lake, query it, run the real CLI."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from factory.lake import connect, current_snapshot
from factory.lake.commit import stage_run


def init_lake(path: Path) -> Path:
    """A new lake at path, schema and transforms created exactly as `factory init` does."""
    with stage_run("init", {}, lake=path, create=True) as run:
        run.materialize()
    return path


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
