"""Parent-side rewriting of assert-based tests so the verdict is decided outside the sandbox.

Every ``assert`` whose expected side is a literal (``assert f(x) == LIT``, ``assert LIT == f(x)``,
``assert f(x) is None/True/False``) or a bare truth test (``assert f(x)``, ``assert not f(x)``) is
replaced by ``__sbx_expect__(k, <computed side>)``: the child only reports the serialized computed
value; the literal never enters the sandbox, and the parent compares (see :mod:`.compare`).
Other asserts stay in the child (their failure is reported as ``AssertionError``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

EXPECT_FN = "__sbx_expect__"


@dataclass
class Expect:
    mode: str          # 'eq' | 'is' | 'truthy' | 'falsy'
    value: object      # the literal (eq/is)
    required: bool     # straight-line assert: must be reported when the test completes


def _literal(node):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


class _Rewriter(ast.NodeTransformer):
    def __init__(self):
        self.expects: list[Expect] = []
        self._nest = 0

    def _expect(self, node, computed, mode, value):
        k = len(self.expects)
        self.expects.append(Expect(mode, value, self._nest == 0))
        call = ast.Call(ast.Name(EXPECT_FN, ast.Load()), [ast.Constant(k), computed], [])
        return ast.copy_location(ast.Expr(call), node)

    def visit_Assert(self, node):
        t = node.test
        if isinstance(t, ast.Compare) and len(t.ops) == 1:
            op, left, right = t.ops[0], t.left, t.comparators[0]
            if isinstance(op, ast.Eq):
                ok, lit = _literal(right)
                if ok:
                    return self._expect(node, left, "eq", lit)
                ok, lit = _literal(left)
                if ok:
                    return self._expect(node, right, "eq", lit)
            if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value in (None, True, False):
                return self._expect(node, left, "is", right.value)
        if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not):
            return self._expect(node, t.operand, "falsy", None)
        return self._expect(node, t, "truthy", None)

    def _nested(self, node):
        self._nest += 1
        try:
            return self.generic_visit(node)
        finally:
            self._nest -= 1

    visit_If = visit_For = visit_While = visit_Try = visit_With = visit_AsyncFor = _nested
    visit_AsyncWith = visit_Match = visit_Lambda = _nested
    if hasattr(ast, "TryStar"):
        visit_TryStar = _nested

    def visit_FunctionDef(self, node):  # helper functions other than check() may never be called
        if node.name == "check":
            return self.generic_visit(node)
        return self._nested(node)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef


def rewrite_asserts(source: str) -> tuple[str, list[Expect]]:
    """Return (child source, expects).  Unparsable source is returned unchanged (it will fail)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return source, []
    rw = _Rewriter()
    try:
        tree = ast.fix_missing_locations(rw.visit(tree))
        return ast.unparse(tree), rw.expects
    except (RecursionError, ValueError):
        return source, []
