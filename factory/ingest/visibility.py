"""Test visibility: is a test's input and expected output readable off the problem statement?

A test is ``public`` when every (input, expected output) pair it checks appears in the statement the policy sees (the
question plus the starter code), e.g. LeetCode's "Input: nums = [2,7,11,15], target = 9 / Output: [0,1]", a HumanEval
doctest ``>>> f(1, 2)`` / ``3``, a CodeContests example block or MBPP+'s first assert in its prompt; every other test is
``hidden``. Detection matches *normalised* inputs and outputs against the normalised statement (never the source's
name): lower case, one quote style, brackets for parentheses, ``None`` as ``null`` (so Python's ``True``/``None`` meet
JSON's ``true``/``null``), whitespace collapsed and dropped around punctuation. Each argument must occur (on token
boundaries) in order, each within a short window of the previous one, and the expected output within a window after the
last argument - an example block, not numbers scattered over the text. A test with a check the extractor cannot read
(loops, helper variables, a unittest class) is ``hidden``.

:func:`checked_pairs` is also the test fingerprint of test-level decontamination (:func:`fingerprints`).
"""
from __future__ import annotations

import ast
import json
import re
from functools import lru_cache

PUBLIC, HIDDEN = "public", "hidden"
PART_WINDOW = 40      # normalised characters allowed between two arguments of one call
OUTPUT_WINDOW = 80    # ... and between the last argument and the expected output
SHORT_INPUT, SHORT_WINDOW = 4, 16   # arguments shorter than this (together) need their output this close
_WRAPPERS = {"list_node", "tree_node", "ListNode", "TreeNode"}          # LeetCode's helpers: the literal is shown
_CONTAINERS = {"set", "sorted", "list", "tuple", "frozenset"}              # order-insensitive comparisons
_SAME = {"is_same_list", "is_same_tree"}                                  # LeetCode's comparisons of helpers
_PUNCT = r"\[\]{},:=;<>"


def normalise(text: str) -> str:
    """Statement and test literals in one comparable form (see the module docstring)."""
    s = text.lower().replace("'", '"').replace("(", "[").replace(")", "]")
    if "none" in s:
        s = re.sub(r"\bnone\b", "null", s)
    if "." in s:
        s = re.sub(r"(\d\.\d*?)0+(?!\d)", r"\1", s)        # 2.50000 -> 2.5, 1.0 -> 1.
        s = re.sub(r"(\d)\.(?!\d)", r"\1", s)               # 1. -> 1 (also a sentence's full stop after a number)
    s = re.sub(r"\s+", " ", s)
    return re.sub(rf"\s*([{_PUNCT}])\s*", r"\1", s).strip()


Pair = tuple[tuple[str, ...], tuple[str, ...]]   # (argument parts, accepted renderings of the expected output)


def _render(node: ast.AST) -> str:
    return normalise(ast.unparse(_unwrap(node)))


def _unwrap(node: ast.AST) -> ast.AST:
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1
           and not node.keywords and (node.func.id in _WRAPPERS or (
               node.func.id in _CONTAINERS and isinstance(node.args[0], (ast.Call, ast.List, ast.Tuple, ast.Set))))):
        node = node.args[0]   # list_node([1, 2]) -> [1, 2]; set(f(x)) == set([1, 2]) -> f(x) == [1, 2]
    return node


def _outputs(node: ast.AST) -> tuple[str, ...]:
    node = _unwrap(node)
    out = [_render(node)]
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = -node.operand.value if isinstance(node.operand.value, (int, float)) else None
    if isinstance(value, float):
        out += [normalise(f"{value:.5f}")]
    return tuple(dict.fromkeys(out))


def _call_parts(call: ast.Call, keep_names: bool) -> tuple[str, ...]:
    parts = [_render(a) for a in call.args]
    parts += [normalise(f"{k.arg}=" if keep_names and k.arg else "") + _render(k.value) for k in call.keywords]
    return tuple(parts)


def _pair_of(expr: ast.AST, keep_names: bool) -> Pair | None:
    """(call arguments, expected output) of one asserted expression, or None when it is not that shape."""
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], (ast.Eq, ast.Is)):
        left, right = _unwrap(expr.left), _unwrap(expr.comparators[0])
        if not isinstance(left, ast.Call) and isinstance(right, ast.Call):
            left, right = right, left
        return (_call_parts(left, keep_names), _outputs(right)) if isinstance(left, ast.Call) else None
    if isinstance(expr, ast.Call) and isinstance(expr.func, (ast.Name, ast.Attribute)):
        name = expr.func.id if isinstance(expr.func, ast.Name) else expr.func.attr
        if name in _SAME | {"isclose"} and len(expr.args) >= 2 and isinstance(_unwrap(expr.args[0]), ast.Call):
            return _call_parts(_unwrap(expr.args[0]), keep_names), _outputs(expr.args[1])
        return _call_parts(expr, keep_names), ("true",)          # `assert f(x)`
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not) and isinstance(expr.operand, ast.Call):
        return _call_parts(expr.operand, keep_names), ("false",)
    return None


@lru_cache(maxsize=4096)
def _code_pairs(code: str, keep_names: bool) -> tuple[Pair, ...] | None:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    asserts = [n for n in ast.walk(tree) if isinstance(n, ast.Assert)]
    if not asserts or any(isinstance(n, (ast.For, ast.While, ast.With, ast.ClassDef)) for n in ast.walk(tree)):
        return None
    pairs = tuple(_pair_of(a.test, keep_names) for a in asserts)
    return None if None in pairs else pairs


def checked_pairs(kind: str, code: str | None, input: str | None, expected: str | None,
               keep_names: bool = True) -> tuple[Pair, ...] | None:
    """The (argument parts, expected outputs) a test checks, or None when they cannot be read off the test.
    ``expected`` None (a call test's value not computed yet) gives an empty tuple of outputs: the input alone."""
    if kind == "stdio":
        if input is None:
            return None
        parts = (normalise(input),) if input.strip() else ()
        return ((parts, (normalise(expected),) if expected is not None else ()),)
    if kind == "call":
        from factory.sandbox.serialize import deserialize_value
        try:
            args = deserialize_value(input) if input is not None else None
            outs = () if expected is None else (normalise(repr(deserialize_value(expected))),)
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(args, (list, tuple)):
            return None
        return ((tuple(normalise(repr(a)) for a in args), outs),)
    return _code_pairs(code, keep_names) if kind in ("assert", "check", "pytest") and code else None


def _find_all(haystack: str, needle: str, start: int, stop: int) -> list[int]:
    """Start offsets of needle in haystack[start:stop+len(needle)] on token boundaries (none for an empty needle:
    a value that normalises to nothing, such as an all-whitespace output, is not shown by any statement)."""
    if not needle:
        return []
    word_start = needle[0].isalnum() or needle[0] in "_.-"
    word_end = needle[-1].isalnum() or needle[-1] in "_"
    out = []
    i = haystack.find(needle, start)
    while i != -1 and i <= stop:
        before = haystack[i - 1] if i > 0 else " "
        after, after2 = (haystack[i + len(needle):i + len(needle) + 2] + "  ")[:2]
        if not (word_start and (before.isalnum() or before in "_.")) and \
                not (word_end and (after.isalnum() or after == "_" or (after == "." and after2.isdigit()))):
            out.append(i)
        i = haystack.find(needle, i + 1)
    return out


def pair_visible(statement: str, pair: Pair) -> bool:
    """Every argument, then one rendering of the output, in order and within the windows, in the statement."""
    parts, outputs = pair
    ends: list[int] = [0]
    for k, part in enumerate(parts):
        new_ends = []
        for e in ends:
            lo, hi = (0, len(statement)) if k == 0 else (e, e + PART_WINDOW)
            new_ends += [i + len(part) for i in _find_all(statement, part, lo, hi)]
        ends = sorted(set(new_ends))
        if not ends:
            return False
    if not outputs:
        return bool(parts)
    if not parts:
        return any(_find_all(statement, o, 0, len(statement)) for o in outputs)
    # a short input ("2") is found almost anywhere: then the output must follow it closely (`>>> f(2)` / `3`)
    window = OUTPUT_WINDOW if sum(map(len, parts)) >= SHORT_INPUT else SHORT_WINDOW
    return any(_find_all(statement, o, e, e + window) for e in ends for o in outputs)


def statement_text(question: str | None, starter_code: str | None = None) -> str:
    """The normalised text a test is matched against: what the prompt shows (question + starter code)."""
    return normalise("\n".join(x for x in (question, starter_code) if x))


def visibility(statement: str, kind: str, code: str | None = None, input: str | None = None,
               expected: str | None = None) -> str:
    """'public' when every pair the test checks is visible in the (normalised) statement, else 'hidden'."""
    pairs = checked_pairs(kind, code, input, expected)
    return PUBLIC if pairs and all(pair_visible(statement, p) for p in pairs) else HIDDEN


def fingerprints(kind: str, code: str | None, input: str | None, expected: str | None) -> list[str]:
    """Name-free keys of the (arguments, expected) pairs a test checks, for test-level decontamination: the
    same MBPP assert as an assert, an EvalPlus call test or a LeetCode check gives the same key. A pair whose
    expected value is unknown gives an input-only key (prefixed ``in:``)."""
    pairs = checked_pairs(kind, code, input, expected, keep_names=False)
    out = []
    for parts, outputs in pairs or ():
        args = json.dumps(list(parts), ensure_ascii=False)
        out.append(f"io:{args}=>{outputs[0]}" if outputs else f"in:{args}")
        if outputs and parts:   # the first argument and the output: a task whose extra arguments were dropped
            out.append(f"io1:{json.dumps(list(parts[:1]), ensure_ascii=False)}=>{outputs[0]}")
    return out
