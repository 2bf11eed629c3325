"""Every source `factory ingest` knows: importing the adapter modules registers them all in ``ADAPTERS``."""
from __future__ import annotations

from factory.ingest import adapters, multipl_e  # noqa: F401  (registered on import)
from factory.ingest.hub import adapters as hub_adapters  # noqa: F401
from factory.ingest.registry import ADAPTER_VERSION, ADAPTERS  # noqa: F401
