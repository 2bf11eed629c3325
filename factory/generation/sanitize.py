"""evalplus-like sanitizer: keep imports, the entry point and the top-level definitions it depends on."""
from __future__ import annotations

import ast
import re

from .pyast import parse as _parse


def _defined_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__name__" in _used_names(node.test)


def entry_point_parts(entry_point: str | None) -> tuple[str | None, str | None]:
    """(class, function) of an entry point in any form trainers and datasets write: ``f``,
    ``Solution().f`` (LeetCodeDataset, the factory's export), ``Solution.f``, ``Solution().f(...)``;
    ``(None, None)`` for nothing usable."""
    text = (entry_point or "").strip()
    m = re.fullmatch(r"(?:([A-Za-z_]\w*)\s*(?:\(\s*\))?\s*\.\s*)?([A-Za-z_]\w*)\s*(?:\(.*\))?", text, re.S)
    return (m.group(1), m.group(2)) if m else (None, None)


def _has_method(node: ast.stmt, name: str) -> bool:
    return isinstance(node, ast.ClassDef) and any(
        isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == name for b in node.body)


def sanitize(code: str, entry_point: str | None = None) -> tuple[str, bool]:
    """(sanitized code, entry point found). Without an entry point every def/class/assignment is kept.

    Dropped: top-level expressions (prints, calls), asserts, ``if __name__ == ...`` blocks, loops and other
    statements, and definitions the entry point does not (transitively) use. Imports are always kept.
    A class with a method named ``entry_point`` (LeetCode ``Solution``) counts as the entry point, and so does
    ``Solution().f`` / ``Solution.f`` (:func:`entry_point_parts`).
    """
    tree = _parse(code)
    defs: dict[str, list[int]] = {}
    for i, node in enumerate(tree.body):
        for name in _defined_names(node):
            defs.setdefault(name, []).append(i)
    keep: set[int] = set()
    found = entry_point is None
    if entry_point is None:
        keep = {i for i, n in enumerate(tree.body) if _defined_names(n)}
    else:
        owner, func = entry_point_parts(entry_point)
        if owner:   # `Solution().f`: the class that defines f (any class with f when that one is absent)
            roots = [i for i in defs.get(owner, []) if _has_method(tree.body[i], func)] or \
                [i for i, n in enumerate(tree.body) if _has_method(n, func)]
        else:
            roots = defs.get(func or entry_point) or [i for i, n in enumerate(tree.body) if _has_method(n, func)]
        found = bool(roots)
        todo = list(roots)
        while todo:
            i = todo.pop()
            if i in keep:
                continue
            keep.add(i)
            for name in _used_names(tree.body[i]):
                todo += [j for j in defs.get(name, []) if j not in keep]
    body = [n for i, n in enumerate(tree.body)
            if isinstance(n, (ast.Import, ast.ImportFrom)) or (i in keep and not _is_main_guard(n))]
    lines = code.splitlines()
    out, prev_def = "", False
    for n in body:
        start = min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])]) - 1
        chunk = "\n".join(lines[start: n.end_lineno])
        is_def = isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        out += chunk if not out else ("\n\n\n" if is_def or prev_def else "\n") + chunk
        prev_def = is_def
    return out + ("\n" if out else ""), found
