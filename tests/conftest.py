"""Shared fixtures: real datasets from ../shared/data (skip cleanly when absent)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# One OpenMP thread for torch in the test process and the `factory` subprocesses it starts (they inherit it): the
# suite's models are tiny, and on a 2-core box the sandbox workers run beside them; two spinning OpenMP threads
# per process made a tiny-model `factory sample` 2.5x slower at load 13 (test_kill_9_mid_sampling_then_rerun
# 886 -> 355 s, #43). Set OMP_NUM_THREADS yourself to override.
os.environ.setdefault("OMP_NUM_THREADS", "1")


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
