"""``ast.parse`` without SyntaxWarning/DeprecationWarning noise (model outputs often hold invalid escapes)."""
from __future__ import annotations

import ast
import warnings


def parse(src: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return ast.parse(src)


def parses(src: str) -> bool:
    try:
        parse(src)
        return True
    except (SyntaxError, ValueError):  # ValueError: null bytes
        return False
