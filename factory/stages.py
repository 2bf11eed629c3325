"""Subcommands of the later pipeline stages (execute, dedup, ...), registered on the CLI parser."""
from __future__ import annotations


def register(sub, add_lake) -> None:
    """Add stage subcommands to the `factory` parser."""
