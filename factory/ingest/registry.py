"""The adapter registry: `@adapter(name, ...)` registers a record -> `Normalized` converter under a source name.

The adapters live in :mod:`factory.ingest.adapters` (local dataset files), :mod:`factory.ingest.hub.adapters`
(layouts as published on the Hub) and :mod:`factory.ingest.multipl_e`; :mod:`factory.ingest.sources` imports them
all, so ``ADAPTERS`` read from there is complete.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from factory.sandbox.serialize import serialize_value as encode_value  # noqa: F401  (an expected value, as stored)

if TYPE_CHECKING:
    from factory.ingest.normalize import Normalized

Ctx = tuple[str, int]  # (file, line)
ADAPTER_VERSION = 5  # bump when an adapter's output changes: unchanged files are then re-ingested


@dataclass(frozen=True)
class Adapter:
    name: str
    convert: Callable[[dict, Ctx, dict], Normalized]
    license: str | None
    description: str
    needs_mapping: bool = False


ADAPTERS: dict[str, Adapter] = {}


def adapter(name: str, license: str | None, description: str, needs_mapping: bool = False):
    def register(fn):
        ADAPTERS[name] = Adapter(name, fn, license, description, needs_mapping)
        return fn
    return register

