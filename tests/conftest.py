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


@pytest.fixture
def hf_offline(monkeypatch):
    """The Hugging Face Hub offline, as on a machine without network: HF_HUB_OFFLINE=1 in the environment (for
    subprocesses and a first import) and in huggingface_hub's own flag, which it reads once, at import. An env var
    set after an earlier test had imported transformers was ignored: each model load then retried the network
    5 times (1+2+4+8+8 s of backoff, twice: 46 s per test in the suite, #43)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    try:
        import huggingface_hub.constants
    except ImportError:   # not installed: nothing reads the Hub
        return
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared datasets not found at {path}")
    return path


@pytest.fixture(scope="session")
def ingested_all(tmp_path_factory, shared_data) -> Path:
    """A lake with every shared dataset ingested (`ingest_all`), built once per session and never written: take
    a copy (tests.lakeutil.copy_lake). Two modules each ingested everything themselves (~20 s each, #43)."""
    from factory.stages.ingest import ingest_all
    from tests.lakeutil import init_lake

    lake = init_lake(tmp_path_factory.mktemp("ingested-all") / "lake")
    ingest_all(shared_data, lake=lake)
    return lake
