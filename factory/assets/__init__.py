"""Where the files the factory reads at run time live: `data_catalog.yaml`, `sql/`, `recipes/`, `checkers/`.

The repository keeps them at its top level (they are the project's map and rules, read and reviewed there). A
wheel ships them inside this package (setup.py copies them in at build time), so an installed factory finds them
here and never looks at the current directory. An editable install or a checkout finds no copy here and reads
the repository's own files.
"""
from __future__ import annotations

from pathlib import Path

SHIPPED = ("data_catalog.yaml", "sql", "recipes", "checkers")   # setup.py copies exactly these into the wheel

_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parents[1]   # factory/assets/__init__.py -> the repository root
# the folder holding data_catalog.yaml, sql/, recipes/ and checkers/: this package in a wheel, else the checkout
ROOT = _HERE if (_HERE / "data_catalog.yaml").is_file() else _CHECKOUT


def path(*parts: str) -> Path:
    """A shipped file or folder, e.g. ``path("sql", "macros.sql")``, ``path("checkers", "codecontests")``."""
    return ROOT.joinpath(*parts)


def checkout() -> Path | None:
    """The source checkout this factory runs from (for the git commit a run records), or None when installed."""
    return _CHECKOUT if ROOT == _CHECKOUT and (_CHECKOUT / ".git").exists() else None
