"""Shared fixtures: real datasets from ../shared/data (skip cleanly when absent)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """Location of the shared datasets: $FACTORY_SHARED_DATA, else ../shared/data beside the repo."""
    env = os.environ.get("FACTORY_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared datasets not found at {path}")
    return path
