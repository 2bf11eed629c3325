"""Tree and linked-list problems (LeetCodeDataset's ``tree_node`` / ``list_node`` harness), and the example calls
of a ``check(candidate)`` function in general.

LeetCodeDataset writes a tree or list argument as ``tree_node([3,9,20,None,None,15,7])`` / ``list_node([1,2])``
(level order / node order, the helpers live in the problem's test preamble) and compares a node result with
``is_same_tree(candidate(...), tree_node([...]))`` / ``is_same_list(...)``. Generated inputs are those lists:
mutated like any list, then made canonical (:func:`canonical_tree`: the tree the list builds, written back in
level order, so a mutation cannot leave children under a missing node). The reference runs through
:func:`call_wrapper`, which builds the nodes, calls the entry point and writes a node result back as its list; the
kept test is written as a ``check`` function in the dataset's own style (:func:`render_check`).
"""
from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

_WRAPPERS = {"tree_node": "tree", "list_node": "list"}
_SAME = {"is_same_tree": "tree", "is_same_list": "list"}


@dataclass
class ExampleCall:
    """One ``assert`` of a check function: the call's arguments, which of them are trees/lists (by position or
    keyword), the expected literal, and how the result is compared (``value``, ``tree``, ``list``)."""
    args: list
    kwargs: dict
    arg_kinds: dict = field(default_factory=dict)    # position (int) or keyword (str) -> "tree" | "list"
    expected: Any = None
    out_kind: str = "value"


def _literal(node: ast.AST, kinds: dict, key) -> Any:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WRAPPERS \
            and len(node.args) == 1 and not node.keywords:
        kinds[key] = _WRAPPERS[node.func.id]
        return ast.literal_eval(node.args[0])
    return ast.literal_eval(node)


def example_calls(check_code: str | None) -> list[ExampleCall]:
    """Every assert of ``check(candidate)`` as an :class:`ExampleCall`, where all have one of the shapes
    ``candidate(<literals>) == <literal>``, ``is_same_tree(candidate(...), tree_node(<literal>))`` or
    ``is_same_list(...)`` (an argument may be ``tree_node(<literal>)`` / ``list_node(<literal>)``); [] when any
    assert has another shape, so a problem is seeded from all its examples or none."""
    try:
        tree = ast.parse(check_code or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check" and n.args.args):
        name = fn.args.args[0].arg
        for stmt in fn.body:
            test = stmt.test if isinstance(stmt, ast.Assert) else None
            out_kind, call, want = "value", None, None
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
                call, want = test.left, test.comparators[0]
            elif isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in _SAME \
                    and len(test.args) == 2:
                out_kind, call, want = _SAME[test.func.id], test.args[0], test.args[1]
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == name):
                return []
            kinds: dict = {}
            try:
                args = [_literal(a, kinds, i) for i, a in enumerate(call.args)]
                kwargs = {k.arg: _literal(k.value, kinds, k.arg) for k in call.keywords if k.arg}
                if out_kind == "value":
                    expected = ast.literal_eval(want)
                else:
                    wk: dict = {}
                    expected = _literal(want, wk, "out")
                    if wk.get("out") != out_kind and not (isinstance(want, ast.Constant) and want.value is None):
                        return []
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                return []
            out.append(ExampleCall(args, kwargs, kinds, expected, out_kind))
    return out


def canonical_tree(values: list) -> list:
    """The level-order list of the tree ``tree_node(values)`` builds (LeetCode's serialization: ``None`` for a
    missing child of a present node, trailing ``None`` dropped); [] for an empty tree."""
    if not values or values[0] is None:
        return []
    out = [values[0]]
    queue = deque([True])
    i = 1
    while queue:
        queue.popleft()
        for _ in range(2):
            if i < len(values) and values[i] is not None:
                out.append(values[i])
                queue.append(True)
            else:
                out.append(None)
            i += 1
    while out and out[-1] is None:
        out.pop()
    return out


def canonical(kind: str | None, value: Any) -> Any:
    """A generated argument made valid for its kind (a tree list canonical, a node list without ``None``)."""
    if kind not in ("tree", "list") or not isinstance(value, list):
        return value
    return canonical_tree(value) if kind == "tree" else [v for v in value if v is not None]


def is_bst(values: list) -> bool:
    """Whether the level-order list is a binary search tree with strictly increasing in-order values."""
    vals = canonical_tree(values)
    if not vals:
        return True
    nodes = [[v, None, None] for v in vals]
    present = [n for n, v in zip(nodes, vals) if v is not None]
    root, queue, i = nodes[0], deque([nodes[0]]), 1
    while queue and i < len(vals):
        node = queue.popleft()
        for side in (1, 2):
            if i < len(vals) and vals[i] is not None:
                node[side] = nodes[i]
                queue.append(nodes[i])
            i += 1
    order: list = []
    stack, cur = [], root
    while stack or cur is not None:
        while cur is not None:
            stack.append(cur)
            cur = cur[1]
        cur = stack.pop()
        order.append(cur[0])
        cur = cur[2]
    try:
        return len(order) == len(present) and all(a < b for a, b in zip(order, order[1:]))
    except TypeError:
        return False


_ENTRY = re.compile(r"[A-Za-z_]\w*(?:\(\))?(?:\.[A-Za-z_]\w*)*")


def call_wrapper(entry_point: str, kinds: list[str | None]) -> str:
    """Source appended to the reference: ``_hidden_call(*args)`` builds the tree/list arguments with the preamble's
    helpers, calls the entry point, and returns a node result (or a list of them) as its list."""
    if not _ENTRY.fullmatch(entry_point):
        raise ValueError(f"entry point {entry_point!r} is not a dotted name")
    return f'''

def _hidden_plain(v, depth=0):
    if v is None or depth > 3:
        return v
    if hasattr(v, "val") and hasattr(v, "left") and hasattr(v, "right"):
        out, queue = [], [v]
        while queue:
            node = queue.pop(0)
            if node is None:
                out.append(None)
                continue
            out.append(node.val)
            queue.append(node.left)
            queue.append(node.right)
            if len(out) > 100000:
                raise ValueError("tree too large")
        while out and out[-1] is None:
            out.pop()
        return out
    if hasattr(v, "val") and hasattr(v, "next"):
        out, seen = [], set()
        while v is not None:
            if id(v) in seen or len(out) > 100000:
                raise ValueError("cyclic list")
            seen.add(id(v))
            out.append(v.val)
            v = v.next
        return out
    if isinstance(v, list):
        return [_hidden_plain(x, depth + 1) for x in v]
    return v


_HIDDEN_KINDS = {list(kinds)!r}


def _hidden_call(*args):
    built = [tree_node(a) if k == "tree" else list_node(a) if k == "list" else a
             for a, k in zip(args, _HIDDEN_KINDS)]
    return _hidden_plain({entry_point}(*built))
'''


def render_check(names: list[str], kinds: list[str | None], args: list, expected: Any, out_kind: str,
                 any_order: bool = False) -> str:
    """A ``check(candidate)`` with one assert in LeetCodeDataset's style."""
    wrap = lambda kind, lit: f"{kind}_node({lit})" if kind in ("tree", "list") else lit  # noqa: E731
    call = f"candidate({', '.join(f'{n} = {wrap(k, repr(v))}' for n, k, v in zip(names, kinds, args))})"
    if out_kind in ("tree", "list"):
        line = f"assert is_same_{out_kind}({call}, {wrap(out_kind, repr(expected))})"
    elif any_order:
        line = f"assert sorted({call}, key=repr) == sorted({expected!r}, key=repr)"
    else:
        line = f"assert {call} == {expected!r}"
    return f"def check(candidate):\n    {line}\n"
