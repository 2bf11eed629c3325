"""Fixtures for lake tests: a lake with every shared dataset ingested, built once per session."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.lakeutil import copy_lake, init_lake

EXPECTED_PROBLEMS = {
    "humaneval": 164, "humanevalplus": 164, "mbpp": 974, "mbpp-sanitized": 427, "mbppplus": 378,
    "leetcode-v0.2.0-train": 1890, "leetcode-v0.2.0-test": 200, "leetcode-v0.3.1-test": 228,
    "codecontests": 300, "apps": 128, "kodcode": 109, "bigcodebench": 1140, "cruxeval": 800,
}
# raw records per source: the APPS file repeats 22 records verbatim (kept in bronze, collapsed in silver)
EXPECTED_RAW = {**EXPECTED_PROBLEMS, "apps": 150}


@pytest.fixture(scope="session")
def full_lake(tmp_path_factory, ingested_all) -> Path:
    return copy_lake(ingested_all, tmp_path_factory.mktemp("full") / "lake")


@pytest.fixture
def empty_lake(tmp_path) -> Path:
    return init_lake(tmp_path / "lake")
