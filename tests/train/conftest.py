"""Markers for the training tests: `slow` (real SmolLM2 GGUF path, long loops)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test (real model weights or many steps)")


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models run fastest single-threaded; avoids OpenMP oversubscription on shared 2-core boxes."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
