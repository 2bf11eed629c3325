"""A real PostgreSQL server for multi-writer lakes: Debian's `postgresql` binaries, initdb/pg_ctl on a temp dir,
loopback port, run as an unprivileged user (root creates one). Skips when the binaries are absent."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.netutil import free_port, wait_for_port

PG_USER = "factorypg"


def _bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _as_user(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", PG_USER, "--"] + cmd
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


@contextmanager
def postgres_server(base: Path):
    """Start a PostgreSQL server in ``base`` on a free loopback port; yields its connection facts."""
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if not (initdb and pg_ctl):
        raise FileNotFoundError("PostgreSQL binaries not installed (Debian package `postgresql`)")
    base.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(PG_USER)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", PG_USER], check=True)
        os.chmod(base, 0o777)
        for parent in list(base.parents)[:-1]:
            os.chmod(parent, os.stat(parent).st_mode | 0o011)   # let the server user traverse to its dir
    data, port = base / "data", free_port()
    _as_user([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"])
    _as_user([pg_ctl, "-D", str(data), "-l", str(base / "log"), "-w", "-o",
              f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c max_connections=100", "start"])
    try:
        wait_for_port(port)
        yield {"host": "127.0.0.1", "port": port, "user": "postgres", "base": base,
               "createdb": lambda name: _as_user([_bin("createdb"), "-h", "127.0.0.1", "-p", str(port),
                                                  "-U", "postgres", name])}
    finally:
        try:
            _as_user([pg_ctl, "-D", str(data), "-m", "fast", "stop"])
        except subprocess.CalledProcessError:   # a slow shutdown (fast mode waits on open sessions): force it
            subprocess.run(["runuser", "-u", PG_USER, "--", pg_ctl, "-D", str(data), "-m", "immediate", "stop"]
                           if os.geteuid() == 0 else [pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True, text=True)


@pytest.fixture(scope="session")
def postgres(tmp_path_factory):
    if not (_bin("initdb") and _bin("pg_ctl")):
        pytest.skip("PostgreSQL binaries not installed (Debian package `postgresql`; .ci/run installs it)")
    with postgres_server(tmp_path_factory.mktemp("pg")) as pg:
        yield pg


def conninfo(pg: dict, db: str) -> str:
    return f"postgres:dbname={db} host={pg['host']} port={pg['port']} user={pg['user']}"


