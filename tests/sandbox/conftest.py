"""Fixtures for the sandbox tests: shared warm pools (real subprocess sandbox, no mocks)."""
from __future__ import annotations

import pytest

from factory.sandbox import Limits, SandboxPool
from sbx_helpers import FAST


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: heavier sandbox tests (real datasets, benchmarks)")


@pytest.fixture(scope="session")
def fast_pool():
    with SandboxPool(FAST, workers=2) as pool:
        yield pool


@pytest.fixture(scope="session")
def default_pool():
    with SandboxPool(Limits(), workers=2) as pool:
        yield pool

