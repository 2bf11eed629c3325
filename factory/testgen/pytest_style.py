"""Pytest-style problems (KodCode): seeds from a test module's literal calls, new test functions rendered back.

A KodCode test module imports the solution (``from solution import f``) and asserts on calls with literal
arguments (``assert f("ABCD", "XY") == "AXBYCD"``). Those calls seed input mutation like any call test; a kept
input becomes a new module with one ``test_*`` function whose expected value is the reference's, written as a
Python literal (``pytest.approx`` for a float or a flat list of floats, so a correct program that rounds
differently in the last place is not failed).
"""
from __future__ import annotations

import ast
import math
from collections import Counter
from typing import Any


def literal_calls(test_code: str | None, function: str) -> list[tuple[list, dict, Any]]:
    """(args, kwargs, expected) of every ``assert function(<literals>) == <literal>`` in the module's test
    functions (asserts of other shapes are skipped, not failed: KodCode modules mix shapes)."""
    try:
        tree = ast.parse(test_code or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")):
        for stmt in fn.body:
            test = stmt.test if isinstance(stmt, ast.Assert) else None
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
                continue
            call = test.left
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == function):
                continue
            try:
                args = [ast.literal_eval(a) for a in call.args]
                kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
                expected = ast.literal_eval(test.comparators[0])
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                continue
            out.append((args, kwargs, expected))
    return out


def called_function(test_modules: list[str | None], solution: str) -> str | None:
    """The top-level function of ``solution`` that the test modules' asserts call most (None: none), for a
    module that uses the solution's names without ``from solution import``."""
    try:
        defined = {n.name for n in ast.parse(solution).body if isinstance(n, ast.FunctionDef)}
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    calls: Counter[str] = Counter()
    for text in test_modules:
        try:
            tree = ast.parse(text or "")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        calls.update(c.func.id for node in ast.walk(tree) if isinstance(node, ast.Assert) for c in ast.walk(node)
                     if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in defined)
    return max(sorted(calls), key=calls.get) if calls else None


def _floats(v: Any) -> bool:
    if isinstance(v, float):
        return True
    if isinstance(v, (list, tuple, set, frozenset)):
        return any(_floats(x) for x in v)
    return isinstance(v, dict) and (any(_floats(x) for x in v.values()) or any(_floats(k) for k in v))


def literal(v: Any) -> str | None:
    """``v`` as Python source that evaluates back to an equal value, or None (nan/inf, objects...)."""
    try:
        text = repr(v)
        back = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    return text if back == v and type(back) is type(v) else None


def expected_source(v: Any) -> str | None:
    """The right-hand side of the assert for expected value ``v`` (None: it cannot be written faithfully)."""
    if isinstance(v, float):
        return f"pytest.approx({v!r})" if math.isfinite(v) else None
    if isinstance(v, list) and v and all(isinstance(x, float) for x in v):
        return f"pytest.approx({v!r})" if all(math.isfinite(x) for x in v) else None
    return None if _floats(v) else literal(v)


def render(function: str, test_name: str, args: list, expected: Any, any_order: bool = False) -> str | None:
    """A pytest module with one test: ``assert function(*args) == expected`` (None: not writable)."""
    parts = [literal(a) for a in args]
    rhs = expected_source(expected)
    if rhs is None or any(p is None for p in parts):
        return None
    call = f"{function}({', '.join(parts)})"
    line = f"assert sorted({call}, key=repr) == sorted({rhs}, key=repr)" if any_order else f"assert {call} == {rhs}"
    head = "import pytest\n" if "pytest.approx" in rhs else ""
    return f"{head}from solution import {function}\n\n\ndef {test_name}():\n    {line}\n"
