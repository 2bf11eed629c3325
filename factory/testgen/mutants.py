"""Deterministic AST mutants of reference programs (for checking that tests can tell wrong code apart).

Operators: ``arith`` (binary/augmented operator swaps), ``const`` (integer constant +/-1), ``compare``
(comparison flips), ``boolop`` (and/or swap, dropped ``not``), ``drop_stmt`` (statement removed, ``pass``
if the block would be empty), ``return`` (return value -> None, True <-> False).
"""
from __future__ import annotations

import ast
import random
from dataclasses import dataclass

from factory.generation.pyast import parse

_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.Div: ast.Mult,
          ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
          ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.LShift: ast.RShift, ast.RShift: ast.LShift}
_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
        ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_SYM = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.LShift: "<<", ast.RShift: ">>", ast.Lt: "<",
        ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
        ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.And: "and", ast.Or: "or"}
_SKIP_FIELDS = {"annotation", "returns", "type_comment", "decorator_list"}
_NO_DROP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Global,
            ast.Nonlocal, ast.Pass)
OPERATORS = ("arith", "const", "compare", "boolop", "drop_stmt", "return")


@dataclass(frozen=True)
class Mutant:
    code: str
    operator: str
    location: tuple[int, int]  # (line, col) in the original program
    description: str


def _walk(node: ast.AST, path=()):
    """Yield (node, path) in a fixed pre-order; path = ((field, index|None), ...). Skips annotations."""
    yield node, path
    for name, value in ast.iter_fields(node):
        if name in _SKIP_FIELDS:
            continue
        if isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, ast.AST):
                    yield from _walk(v, path + ((name, i),))
        elif isinstance(value, ast.AST):
            yield from _walk(value, path + ((name, None),))


def _resolve(root: ast.AST, path):
    node = root
    for name, idx in path:
        node = getattr(node, name) if idx is None else getattr(node, name)[idx]
    return node


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _sites(tree: ast.AST):
    """Yield (operator, path, edit, description). Edits: ("attr", name, value), ("item", name, i, value),
    ("replace", node) or ("drop",) (the path then names a statement in its block)."""
    for node, path in _walk(tree):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH:
            new = _ARITH[type(node.op)]
            yield "arith", path, ("attr", "op", new()), f"{_SYM[type(node.op)]} -> {_SYM[new]}"
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            for d in (1, -1):
                yield "const", path, ("replace", ast.Constant(node.value + d)), f"{node.value} -> {node.value + d}"
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _CMP:
                    new = _CMP[type(op)]
                    yield "compare", path, ("item", "ops", i, new()), f"{_SYM[type(op)]} -> {_SYM[new]}"
        elif isinstance(node, ast.BoolOp):
            new = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield "boolop", path, ("attr", "op", new()), f"{_SYM[type(node.op)]} -> {_SYM[new]}"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield "boolop", path, ("replace", node.operand), "drop not"
        elif isinstance(node, ast.Return) and node.value is not None:
            v = node.value
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                yield "return", path, ("attr", "value", ast.Constant(not v.value)), \
                    f"return {v.value} -> return {not v.value}"
            elif not (isinstance(v, ast.Constant) and v.value is None):
                yield "return", path, ("attr", "value", ast.Constant(None)), "return value -> None"
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if not isinstance(stmts, list):
                continue
            for i, s in enumerate(stmts):
                if isinstance(s, ast.stmt) and not isinstance(s, _NO_DROP) and not _is_docstring(s):
                    yield "drop_stmt", path + ((name, i),), ("drop",), f"drop {type(s).__name__.lower()} statement"


def _apply(tree: ast.AST, path, edit):
    """Apply ``edit`` in place; returns a function that undoes it."""
    kind = edit[0]
    if kind == "attr":
        node = _resolve(tree, path)
        old = getattr(node, edit[1])
        setattr(node, edit[1], edit[2])
        return lambda: setattr(node, edit[1], old)
    if kind == "item":
        seq = getattr(_resolve(tree, path), edit[1])
        old = seq[edit[2]]
        seq[edit[2]] = edit[3]
        return lambda: seq.__setitem__(edit[2], old)
    parent = _resolve(tree, path[:-1])
    name, i = path[-1]
    if kind == "replace":  # the parent's attribute or list item
        return _apply(tree, path[:-1], ("attr", name, edit[1]) if i is None else ("item", name, i, edit[1]))
    stmts = getattr(parent, name)  # drop
    removed = stmts.pop(i)
    padded = not stmts and name == "body"
    if padded:
        stmts.append(ast.Pass())

    def undo():
        if padded:
            stmts.pop()
        stmts.insert(i, removed)
    return undo


def mutants(code: str, max_mutants: int | None = 50, seed: int = 0,
            operators: tuple[str, ...] = OPERATORS) -> list[Mutant]:
    """Distinct mutants of ``code`` (syntax errors in ``code`` raise). Mutants whose ``ast.unparse`` equals the
    original's or an earlier mutant's are skipped. When more than ``max_mutants`` exist, a ``seed``-determined
    subset is returned in site order. Same inputs -> same output."""
    tree = parse(code)   # without SyntaxWarning noise (invalid escapes in old MBPP)
    original = ast.unparse(tree)
    seen = {original}
    out: list[Mutant] = []
    for op, path, edit, desc in _sites(tree):
        if op not in operators:
            continue
        node = _resolve(tree, path)
        loc = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        undo = _apply(tree, path, edit)
        try:
            mutated = ast.unparse(tree)
        except (ValueError, TypeError, AttributeError, RecursionError):
            continue
        finally:
            undo()
        if mutated in seen:
            continue
        seen.add(mutated)
        out.append(Mutant(mutated, op, loc, f"line {loc[0]}: {desc}"))
    if max_mutants is not None and len(out) > max_mutants:
        keep = sorted(random.Random(seed).sample(range(len(out)), max_mutants))
        out = [out[i] for i in keep]
    return out
