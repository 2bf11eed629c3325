"""A problem's stated constraints as checks on generated inputs (pure functions, no lake, no sandbox).

LeetCode-style statements end with a ``Constraints:`` section of lines such as ::

    2 <= nums.length <= 104            (10^4: the dataset lost its superscripts)
    -109 <= nums[i], target <= 109
    1 <= k <= nums.length
    m == grid.length ; 1 <= m, n <= 200
    grid[i][j] is either 0 or 1.
    s consists of lowercase English letters.
    All the integers of nums are unique.
    The number of nodes in the tree is in the range [0, 100].
    -100 <= Node.val <= 100

:func:`parse_constraints` turns the lines it understands into :class:`Constraint` checks over the call's named
arguments (a tree or linked-list argument as its LeetCode level-order list); a line it cannot read is skipped,
never guessed. Numbers whose exponent the dataset flattened (``104``, ``109``, ``231``) are read as the power
(10^4, 10^9, 2^31): the looser reading, so a valid input is never rejected for it.

:meth:`Checker.fit` drops every check that one of the problem's own examples violates (a misread line), so the
parsed constraints can only narrow generation to what the statement says *and* the examples satisfy.
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable

_SECTION = re.compile(r"constraints\s*:?\s*\n(.*?)(?:\n\s*(?:follow[\s-]*up|note)\b|\Z)", re.IGNORECASE | re.DOTALL)
_CMP = re.compile(r"(<=|>=|==|!=|<|>|=)")
_SUBJECT = re.compile(r"^([A-Za-z_]\w*)((?:\[\s*\w+\s*\])*)(\.length|\.size\(\)|\.size|\.len)?$")
_LEN_CALL = re.compile(r"^len\(\s*([A-Za-z_]\w*)((?:\[\s*\w+\s*\])*)\s*\)$")
_NODE_VAL = re.compile(r"^(?:node|Node|treenode|TreeNode|ListNode)\.val$")
_SAFE_EXPR = re.compile(r"^[\w\s.*+\-()/,]+$")
_NODES_RANGE = re.compile(r"number of nodes in (?:the |each |both )?(?:\w+ )*?(?:tree|list|trees|lists)s?"
                          r"(?: \w+)? is in the range \[\s*([^,\]]+?)\s*,\s*([^\]]+?)\s*\]", re.IGNORECASE)
_NODES_NAMED = re.compile(r"number of nodes in (?:the |each )?(?:\w+ )*?(?:tree|list) is (\w+)\b", re.IGNORECASE)
_CONSISTS = re.compile(r"^(.+?)\s+(?:consists?|contains?|is made up)\s+(?:of\s+)?(?:only\s+)?(?:of\s+)?(.+)$",
                       re.IGNORECASE)
_EITHER = re.compile(r"^(.+?)\s+is\s+(?:either\s+)?(-?\d+)\s*,?\s+or\s+(-?\d+)\.?$", re.IGNORECASE)
_UNIQUE = re.compile(r"(?:all|the)?\s*(?:the\s+)?(?:values|integers|elements|numbers|strings|words)?\s*(?:of|in)?"
                     r"\s*(\w+(?:\[\w\])?)\s+(?:are|is)\s+(?:all\s+)?(?:unique|distinct|pairwise distinct)",
                     re.IGNORECASE)
_NODE_UNIQUE = re.compile(r"(?:node\.val|values? of (?:the )?(?:nodes?|tree)|node values?)\b[^.]*\b(?:unique|distinct)",
                          re.IGNORECASE)
_SORTED = re.compile(r"^(\w+)\s+is\s+sorted\s+in\s+(strictly\s+)?(?:non-?decreasing|ascending|increasing)\s+order",
                     re.IGNORECASE)


def section(question: str | None) -> str:
    """The statement's Constraints section ('' when it has none)."""
    text = (question or "").replace("\xa0", " ").replace("\u2264", "<=").replace("\u2265", ">=")
    m = _SECTION.search(text)
    return m.group(1) if m else ""


def decode_number(token: str) -> str:
    """``104`` -> ``10**4``, ``109`` -> ``10**9``, ``231`` -> ``2**31`` (flattened superscripts), else as is."""
    def one(m: re.Match) -> str:
        t = m.group(0)
        if re.fullmatch(r"10(?:[2-9]|1[0-8])", t):
            return f"(10**{t[2:]})"
        return f"(2**{t[1:]})" if t in ("231", "232", "263", "264") else t
    return re.sub(r"(?<![\w.])\d+(?![\w.])", one, token)


@dataclass(frozen=True)
class Constraint:
    """One stated check: ``text`` (the line) and ``holds(args_by_name, kinds) -> bool | None`` (None: cannot
    tell for this input, e.g. the line names something the call does not have)."""
    text: str
    holds: Callable[[dict, dict], bool | None]


def _nodes(value: Any) -> list:
    return [v for v in value if v is not None] if isinstance(value, list) else []


_ALIAS = re.compile(r"\b([A-Za-z_]\w*)((?:\[\s*[a-z]\s*\])?)\s*=\s*\[\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*){1,3})\s*\]")


def aliases(question: str | None) -> dict[str, str]:
    """Field names the statement gives a record argument: ``queens[i] = [xQueeni, yQueeni]`` -> xQueeni means
    ``queens[i][0]``; ``king = [xKing, yKing]`` -> xKing means ``king[0]``."""
    out = {}
    for m in _ALIAS.finditer((question or "").replace("\xa0", " ")):
        name, index = m.group(1), m.group(2).replace(" ", "")
        for k, field in enumerate(re.split(r"\s*,\s*", m.group(3))):
            out.setdefault(field, f"{name}{index}[{k}]")
    return out


def _subject_values(term: str, env: dict, kinds: dict) -> list | None:
    """All values a subject term denotes (``nums[i]`` -> every element), or None when it is not a subject."""
    term = term.strip().strip("`'\"")
    term = term if term in env else env.get("__aliases__", {}).get(term, term)
    if _NODE_VAL.match(term):
        vals = [x for name, k in kinds.items() if k in ("tree", "list") and name in env for x in _nodes(env[name])]
        return vals if any(k in ("tree", "list") for k in kinds.values()) else None
    if not (m := _LEN_CALL.match(term) or _SUBJECT.match(term)):
        return None
    name, path, length = m.group(1), m.group(2), m.re is _LEN_CALL or bool(m.group(3))
    if name not in env:
        return None
    values = [env[name]]
    if kinds.get(name) in ("tree", "list") and not path:
        values = [_nodes(env[name])]
    for idx in re.findall(r"\[\s*(\w+)\s*\]", path):
        nxt = []
        for v in values:
            if not isinstance(v, (list, tuple, str)):
                return None
            if idx.isdigit():
                if int(idx) < len(v):
                    nxt.append(v[int(idx)])
            else:
                nxt.extend(v)
        values = nxt
    if length:
        if not all(isinstance(v, (list, tuple, str, dict)) for v in values):
            return None
        values = [len(v) for v in values]
    return values


def _bound_value(term: str, env: dict, kinds: dict) -> float | None:
    """A bound expression (``10^9 + 7``, ``5 * 104``, ``nums.length``, ``n - 1``) as a number, or None."""
    term = term.strip().strip("`'\"").rstrip(".")
    vals = _subject_values(term, env, kinds)
    if vals is not None:
        return vals[0] if len(vals) == 1 and isinstance(vals[0], (int, float)) and not isinstance(vals[0], bool) \
            else None
    if not _SAFE_EXPR.match(term):
        return None
    expr = re.sub(r"\b([A-Za-z_]\w*)\s*\.\s*(?:length|size\(\)|size)", r"len(\1)", term.replace("^", "**"))
    expr = decode_number(expr)
    scope = {k: v for k, v in env.items() if isinstance(v, (int, float, list, str)) and not isinstance(v, bool)}
    scope["len"] = len
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = eval(expr, {"__builtins__": {}}, scope)   # noqa: S307 - letters, digits and + - * / ( ) only
    except Exception:  # noqa: BLE001 - an expression we cannot evaluate is a line we do not enforce
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


_OPS = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
        "==": lambda a, b: a == b, "=": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _comparison(line: str) -> Constraint | None:
    parts = _CMP.split(line)
    if len(parts) < 3:
        return None
    terms, ops = parts[0::2], parts[1::2]
    if not all(t.strip() for t in terms):
        return None

    def holds(env: dict, kinds: dict) -> bool | None:
        verdict = True
        for (left, op, right) in zip(terms, ops, terms[1:]):
            lvals, rvals = _side(left, env, kinds), _side(right, env, kinds)
            if lvals is None or rvals is None:
                continue
            if _indexed(left, env) and _indexed(right, env):
                # ai != bi, starti < endi, startTime[i] <= endTime[i]: the same record's fields, pairwise
                if len(lvals) != len(rvals):
                    continue
                pairs = list(zip(lvals, rvals))
            else:
                pairs = [(a, b) for a in lvals for b in rvals]
            if not all(_comparable(a, b) and _OPS[op](a, b) for a, b in pairs):
                verdict = False
        return verdict
    return Constraint(line, holds)


def _indexed(term: str, env: dict) -> bool:
    """Whether a side is one subject over the elements of an array (``nums[i]``, an alias such as ``ai``)."""
    term = term.strip().strip("`'\"")
    if "," in term:
        return False
    term = env.get("__aliases__", {}).get(term, term) if term not in env else term
    return bool(re.search(r"\[\s*[a-z]\s*\]", term)) and bool(_SUBJECT.match(term))


def _comparable(a, b) -> bool:
    return (_num(a) and _num(b)) or (isinstance(a, str) and isinstance(b, str))


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not (isinstance(x, float) and math.isnan(x))


def _side(term: str, env: dict, kinds: dict) -> list | None:
    """Values of one side of a comparison: a comma list of subjects (``m, n``), a subject or a bound."""
    pieces = [p for p in term.split(",") if p.strip()]
    if len(pieces) > 1:
        vals = [_subject_values(p, env, kinds) for p in pieces]
        return None if any(v is None for v in vals) else [x for v in vals for x in v]
    vals = _subject_values(term, env, kinds)
    if vals is not None:
        return vals
    b = _bound_value(term, env, kinds)
    return None if b is None else [b]


_CHARSETS = (("lowercase english letters", "abcdefghijklmnopqrstuvwxyz"),
             ("uppercase english letters", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
             ("lowercase letters", "abcdefghijklmnopqrstuvwxyz"),
             ("uppercase letters", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
             ("english letters", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
             ("digits", "0123456789"),
             ("spaces", " "), ("space", " "))


def _charset(line: str) -> Constraint | None:
    if not (m := _CONSISTS.match(line.rstrip("."))):
        return None
    subject, what = m.group(1).strip().strip("`'\""), m.group(2).lower()
    if not _SUBJECT.match(subject) or m.group(0).lower().startswith(("the ", "each ", "all ")):
        return None
    allowed = set(re.findall(r"'(.)'", m.group(2)))
    rest = re.sub(r"'.'", " ", what)
    for phrase, chars in _CHARSETS:
        if phrase in rest:
            allowed |= set(chars)
            rest = rest.replace(phrase, " ")
    if not allowed or re.sub(r"\b(?:and|or|only|of|the|characters?|letters?|english|[,.()]|\s)+", "", rest):
        return None   # something else is allowed too (symbols, "printable ASCII"...): do not enforce

    def holds(env: dict, kinds: dict) -> bool | None:
        vals = _subject_values(subject, env, kinds)
        if vals is None:
            return None
        chars = []
        for v in vals:
            if isinstance(v, str):
                chars.append(v)
            elif isinstance(v, list) and all(isinstance(x, str) for x in v):
                chars.extend(v)
            else:
                return None
        return all(set(s) <= allowed for s in chars)
    return Constraint(line, holds)


def _either(line: str) -> Constraint | None:
    if not (m := _EITHER.match(line)) or not _SUBJECT.match(subject := m.group(1).strip().strip("`'\"")):
        return None
    allowed = {int(m.group(2)), int(m.group(3))}

    def holds(env, kinds):
        vals = _subject_values(subject, env, kinds)
        return None if vals is None else all(v in allowed and not isinstance(v, bool) for v in vals)
    return Constraint(line, holds)


_RECORD_NOUNS = {"positions", "points", "coordinates", "pairs", "cells", "rectangles", "squares"}


def _unique(line: str) -> Constraint | None:
    if _NODE_UNIQUE.search(line):
        def holds_nodes(env, kinds):
            names = [n for n, k in kinds.items() if k in ("tree", "list") and n in env]
            return all(len(set(_nodes(env[n]))) == len(_nodes(env[n])) for n in names) if names else None
        return Constraint(line, holds_nodes)
    if not (m := _UNIQUE.search(line)):
        return None
    subject = m.group(1)

    def holds(env, kinds):
        alias = env.get("__aliases__", {}).get(subject) if subject not in env else None
        if alias is not None:          # "Each colori is distinct", segments[i] = [starti, endi, colori]
            items = _subject_values(alias, env, kinds)
            if items is None:
                return None
        elif subject.lower() in _RECORD_NOUNS:   # "All the given positions are unique": every list of records
            records = [v for v in env.values() if isinstance(v, list) and v and all(isinstance(x, list) for x in v)]
            return all(len({repr(x) for x in v}) == len(v) for v in records) if records else None
        elif subject.split("[")[0] not in env:
            return None
        else:
            value = env[subject.split("[")[0]]
            items = _nodes(value) if kinds.get(subject) in ("tree", "list") else value
        if not isinstance(items, (list, tuple, str)):
            return None
        try:
            keys = [repr(x) for x in items]
        except Exception:  # noqa: BLE001
            return None
        return len(set(keys)) == len(keys)
    return Constraint(line, holds)


def _sorted(line: str) -> Constraint | None:
    if not (m := _SORTED.match(line)):
        return None
    subject, strict = m.group(1), bool(m.group(2))

    def holds(env, kinds):
        value = env.get(subject)
        if kinds.get(subject) == "list":
            value = _nodes(value)
        if not isinstance(value, list) or not all(_num(x) for x in value):
            return None
        return all((a < b) if strict else (a <= b) for a, b in zip(value, value[1:]))
    return Constraint(line, holds)


def _node_count(line: str) -> Constraint | None:
    if not (m := _NODES_RANGE.search(line)):
        return None
    lo_t, hi_t = m.group(1), m.group(2)

    def holds(env, kinds):
        names = [n for n, k in kinds.items() if k in ("tree", "list") and n in env]
        lo, hi = _bound_value(lo_t, env, kinds), _bound_value(hi_t, env, kinds)
        return all(lo <= len(_nodes(env[n])) <= hi for n in names) if names and None not in (lo, hi) else None
    return Constraint(line, holds)


def _bullet(raw: str) -> str:
    """A section line without its list bullet (``- ``, ``* ``, ``•``; a leading minus sign stays)."""
    return re.sub(r"^(?:[-*]\s+|•\s*)", "", raw.strip()).strip()


_PARITY = re.compile(r"^([A-Za-z_]\w*)\s+is\s+(odd|even)\.?$", re.IGNORECASE)
_MEMBER = re.compile(r"^([A-Za-z_]\w*)\s+is\s+(?:guaranteed\s+to\s+be\s+|always\s+)?(?:in|an?\s+element\s+of|one\s+of"
                     r"(?:\s+the\s+values\s+(?:of|in))?)\s+([A-Za-z_]\w*)\.?$", re.IGNORECASE)


def _parity(line: str) -> Constraint | None:
    if not (m := _PARITY.match(line)):
        return None
    name, want = m.group(1), 1 if m.group(2).lower() == "odd" else 0

    def holds(env, kinds):
        v = env.get(name)
        return None if not _num(v) or not isinstance(v, int) else v % 2 == want
    return Constraint(line, holds)


def _member(line: str) -> Constraint | None:
    if not (m := _MEMBER.match(line)):
        return None
    item, coll = m.group(1), m.group(2)

    def holds(env, kinds):
        if item not in env or coll not in env:
            return None
        values = _nodes(env[coll]) if kinds.get(coll) in ("tree", "list") else env[coll]
        return env[item] in values if isinstance(values, (list, tuple, str)) else None
    return Constraint(line, holds)


def parse_constraints(question: str | None) -> list[Constraint]:
    """The checks the statement's Constraints section states, in its order (lines not understood: none)."""
    out = []
    for raw in section(question).split("\n"):
        if not (line := _bullet(raw)):
            continue
        for make in (_node_count, _unique, _sorted, _either, _parity, _member, _charset):
            if (c := make(line)) is not None:
                out.append(c)
                break
        else:
            if _CMP.search(line) and len(line) < 160:
                for piece in re.split(r"\s*(?:,\s*and\s+|;\s*|\band\b\s+)(?=[^,]*(?:<|>|=))", line.rstrip(".")):
                    if (c := _comparison(piece)) is not None:
                        out.append(c)
    return out


def definitions(question: str | None) -> list[tuple[str, str]]:
    """Names the section defines (``m == grid.length``, ``n == nums.length``, "the number of nodes in the list
    is n"): (name, expression) pairs, evaluated per input before the checks."""
    out = []
    for raw in section(question).split("\n"):
        line = _bullet(raw).rstrip(".")
        if (m := re.fullmatch(r"([A-Za-z_]\w*)\s*==?\s*(.+)", line)) and not _CMP.search(m.group(2)):
            out.append((m.group(1), m.group(2)))
            continue
        if m := _NODES_NAMED.search(line):
            out.append((m.group(1), "__nodes__"))
    return out


def environment(names: list[str], args: list, kinds: dict, defs: list[tuple[str, str]]) -> dict:
    """The call's named arguments plus the section's defined names (m, n, ...)."""
    env = dict(zip(names, args))
    for name, expr in defs:
        if name in env:
            continue
        if expr == "__nodes__":
            nodes = [n for n, k in kinds.items() if k in ("tree", "list") and n in env]
            if len(nodes) == 1:
                env[name] = len(_nodes(env[nodes[0]]))
            continue
        if (value := _bound_value(expr, env, kinds)) is not None:
            env[name] = value
    return env


class Checker:
    """The stated constraints of one problem, fitted to its examples: ``ok(args)`` and ``violated(args)``."""

    def __init__(self, question: str | None, names: list[str] | None, kinds: dict | None = None):
        self.names = list(names or [])
        self.kinds = dict(kinds or {})
        self.defs = definitions(question)
        self.checks = parse_constraints(question) if self.names else []
        self.aliases = {k: v for k, v in aliases(question).items() if k not in self.names}

    def violated(self, args: list) -> list[str]:
        env = environment(self.names, args, self.kinds, self.defs)
        env["__aliases__"] = self.aliases
        out = []
        for name, expr in self.defs:   # "the number of nodes in the tree is n" where n is an argument
            nodes = [n for n, k in self.kinds.items() if k in ("tree", "list") and n in env]
            if expr == "__nodes__" and name in self.names and len(nodes) == 1 and _num(env.get(name)) \
                    and env[name] != len(_nodes(env[nodes[0]])):
                out.append(f"the number of nodes is {name}")
        for c in self.checks:
            try:
                verdict = c.holds(env, self.kinds)
            except Exception:  # noqa: BLE001 - a check that cannot be evaluated says nothing
                verdict = None
            if verdict is False:
                out.append(c.text)
        return out

    def ok(self, args: list) -> bool:
        return not self.violated(args)

    def fit(self, examples: list[list]) -> "Checker":
        """Drop every check one of the problem's own examples violates (the line was misread)."""
        bad = {t for ex in examples for t in self.violated(ex)}
        self.checks = [c for c in self.checks if c.text not in bad]
        return self


_FITS_32 = re.compile(r"(?:answer|result|output|value)[^.]{0,80}\bfits?\s+(?:in|into|within)\s+(?:a\s+)?"
                      r"(?:signed\s+)?32-bit", re.IGNORECASE)


def answer_bound(question: str | None) -> int | None:
    """2**31 when the statement guarantees the answer fits a 32-bit integer, else None."""
    return 2 ** 31 if _FITS_32.search((question or "").replace("\xa0", " ")) else None
