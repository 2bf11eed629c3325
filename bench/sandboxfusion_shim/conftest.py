"""Coroutine tests of the SandboxFusion suite run on anyio's pytest plugin (asyncio)."""
import inspect
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if inspect.iscoroutinefunction(getattr(item, "function", None)):
            item.add_marker(pytest.mark.anyio)


@pytest.fixture
def anyio_backend():
    return "asyncio"
