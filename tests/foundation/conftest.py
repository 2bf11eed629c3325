"""Fixtures for lake tests: a lake with every shared dataset ingested, built once per session."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from factory.ingest import ingest_all
from factory.stage import stage_run

EXPECTED_PROBLEMS = {
    "humaneval": 164, "humanevalplus": 164, "mbpp": 974, "mbpp-sanitized": 427, "mbppplus": 378,
    "leetcode-v0.2.0-train": 1890, "leetcode-v0.2.0-test": 200, "leetcode-v0.3.1-test": 228,
    "codecontests": 300, "apps": 128, "kodcode": 109, "bigcodebench": 1140, "cruxeval": 800,
}
# raw records per source: the APPS file repeats 22 records verbatim (kept in bronze, collapsed in silver)
EXPECTED_RAW = {**EXPECTED_PROBLEMS, "apps": 150}


def init_lake(path: Path) -> Path:
    with stage_run("init", {}, lake=path, create=True) as run:
        run.materialize()
    return path


def factory_cli(*args: str, lake: Path, check: bool = False, **kw) -> subprocess.CompletedProcess:
    """Run the real `factory` CLI in a subprocess."""
    env = dict(os.environ, FACTORY_LAKE=str(lake))
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True,
                          env=env, check=check, **kw)


@pytest.fixture(scope="session")
def full_lake(tmp_path_factory, shared_data) -> Path:
    lake = init_lake(tmp_path_factory.mktemp("full") / "lake")
    ingest_all(shared_data, lake=lake)
    return lake


@pytest.fixture
def empty_lake(tmp_path) -> Path:
    return init_lake(tmp_path / "lake")
