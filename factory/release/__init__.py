"""Releases (immutable, manifest-checked snapshots of lake views) and trainer exports cut from them.

The names below load their module on first use, so importing one submodule (the funnel, the locator) does not
import the release writer and every export format with it."""
from __future__ import annotations

import importlib

_WHERE = {"create_release": "create", "reproduce_release": "create", "FORMATS": "export",
          "export_release": "export", "validate_export": "export", "list_releases": "locate",
          "load_manifest": "locate", "resolve_releases_dir": "locate", "diff_releases": "manage",
          "show_release": "manage", "verify_release": "manage"}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
