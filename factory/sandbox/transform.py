"""Parent-side rewriting of assert-based tests so the verdict is decided outside the sandbox.

Every ``assert`` whose expected side is a literal (``assert f(x) == LIT``, ``assert LIT == f(x)``,
``assert f(x) is None/True/False``) or a bare truth test (``assert f(x)``, ``assert not f(x)``) is
replaced by ``__sbx_expect__(k, <computed side>)``: the child only reports the serialized computed
value; the literal never enters the sandbox, and the parent compares (see :mod:`.compare`).

The rewrite splices source text at the asserts' positions (statements only are walked, expressions
never); results are cached per test source.
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from functools import lru_cache

EXPECT_FN = "__sbx_expect__"


@dataclass(frozen=True)
class Expect:
    mode: str          # 'eq' | 'is' | 'truthy' | 'falsy'
    value: object      # the literal (eq/is)
    required: bool     # straight-line assert: must be reported when the test completes


def _literal(node):
    if isinstance(node, ast.Name):
        return False, None  # fast path: a variable is never a literal
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _classify(t):
    """(mode, literal, computed node) for an assert's test expression."""
    if isinstance(t, ast.Compare) and len(t.ops) == 1:
        op, left, right = t.ops[0], t.left, t.comparators[0]
        if isinstance(op, ast.Eq):
            for side, computed in ((right, left), (left, right)):
                ok, lit = _literal(side)
                if ok:
                    return "eq", lit, computed
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value in (None, True, False):
            return "is", right.value, left
    if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not):
        return "falsy", None, t.operand
    return "truthy", None, t


_NESTING = (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.AsyncFor, ast.AsyncWith, ast.Match) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ())
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _asserts(stmts, nest: int, out: list) -> None:
    """Collect (assert node, nesting depth) in source order; helpers other than check() are nested."""
    for s in stmts:
        if isinstance(s, ast.Assert):
            out.append((s, nest))
            continue
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = nest if s.name == "check" else nest + 1
        elif isinstance(s, _NESTING):
            inner = nest + 1
        else:
            continue
        for field in _BODIES:
            for child in getattr(s, field, None) or ():
                _asserts(child.body if isinstance(child, (ast.ExceptHandler, ast.match_case)) else [child], inner, out)


def rewrite_asserts(source: str) -> tuple[str, list[Expect]]:
    """Return (child source, expects).  Unparsable source is returned unchanged (it will fail)."""
    code, expects = _rewrite_cached(source)
    return code, list(expects)


@lru_cache(maxsize=4096)
def _rewrite_cached(source: str) -> tuple[str, tuple[Expect, ...]]:
    try:
        tree = ast.parse(source)
        found: list = []
        _asserts(tree.body, 0, found)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return source, ()
    if not found:
        return source, ()
    found.sort(key=lambda item: (item[0].lineno, item[0].col_offset))  # try: handlers follow else: in the AST
    raw = source.encode("utf-8")
    starts = [0, *itertools.accumulate(map(len, raw.splitlines(keepends=True)))]

    def off(lineno, col):
        return starts[lineno - 1] + col

    pieces, cursor, expects = [], 0, []
    for k, (node, nest) in enumerate(found):
        mode, value, computed = _classify(node.test)
        expects.append(Expect(mode, value, nest == 0))
        a, b = off(node.lineno, node.col_offset), off(node.end_lineno, node.end_col_offset)
        expr = raw[off(computed.lineno, computed.col_offset):off(computed.end_lineno, computed.end_col_offset)]
        if isinstance(computed, ast.GeneratorExp) and not expr.startswith(b"("):
            expr = b"(" + expr + b")"
        pieces += [raw[cursor:a], f"{EXPECT_FN}({k}, (".encode(), expr, b"))"]
        cursor = b
    pieces.append(raw[cursor:])
    return b"".join(pieces).decode("utf-8"), tuple(expects)
