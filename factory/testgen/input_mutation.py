"""Suite adequacy helpers: EvalPlus-style type-aware input mutation and greedy set-cover suite reduction.

Pure functions (no lake, no sandbox); the stages that use them live in :mod:`factory.stages.augment`.

Input mutation works on the deserialized arguments of ``call`` tests (a list of positional arguments) and keeps
every argument's type: ints move by +-1, double, halve, flip sign or jump to a boundary (0, 1, -1); floats likewise;
strings lose, gain, swap or re-case characters; lists/tuples/dicts/sets lose, duplicate, swap or mutate elements
(recursively). Everything is driven by one ``random.Random``, so a seed fixes the candidates.

Set cover: given which mutants each test kills, :func:`greedy_rank` orders the tests so that its prefix up
to the last test that kills something new is a minimal-by-greedy suite with the same kill set as the full
suite (the classic ln(n)-approximation EvalPlus uses for its "mini" suites); the rest follow by kill count,
so the first k tests are "the k that kill most".
"""
from __future__ import annotations

import math
import random
from typing import Any

from factory.sandbox.serialize import serialize_value

_INT_BOUND = 10 ** 9          # mutated ints stay within +-this (doubling a large count must not explode)
_CHARS = "aZ0 _-.,!x"         # characters inserted into strings besides the string's own


def _mutate_int(v: int, rng: random.Random) -> int:
    out = rng.choice((v + 1, v - 1, v * 2, -v, v // 2, 0, 1, -1, v + rng.randint(2, 10)))
    return out if abs(out) <= _INT_BOUND else v - 1


def _mutate_float(v: float, rng: random.Random) -> float:
    if not math.isfinite(v):
        return 0.0
    return rng.choice((v + 1.0, v - 1.0, v * 2.0, -v, v / 2.0, 0.0, v + rng.choice((0.5, 0.1, -0.5))))


def _mutate_str(v: str, rng: random.Random) -> str:
    if not v:
        return rng.choice(_CHARS)
    i = rng.randrange(len(v))
    op = rng.randrange(6)
    if op == 0:                                     # delete one character
        return v[:i] + v[i + 1:]
    if op == 1:                                     # insert a character (from the string or a small alphabet)
        return v[:i] + rng.choice(v + _CHARS) + v[i:]
    if op == 2 and len(v) > 1:                      # swap neighbours
        j = min(i, len(v) - 2)
        return v[:j] + v[j + 1] + v[j] + v[j + 2:]
    if op == 3:                                     # duplicate a slice
        j = rng.randrange(i, len(v)) + 1
        return v[:j] + v[i:j] + v[j:]
    if op == 4:                                     # change the case of one character
        return v[:i] + v[i].swapcase() + v[i + 1:] if v[i].swapcase() != v[i] else v[:i] + v[i + 1:]
    return v[:i] if i else v[1:]                    # truncate


def _mutate_seq(items: list, rng: random.Random, depth: int, keep_length: bool) -> list:
    items = list(items)
    if not items:
        return items
    ops = ("mutate",) if keep_length else ("mutate", "mutate", "remove", "duplicate", "swap", "insert", "empty")
    op = rng.choice(ops)
    i = rng.randrange(len(items))
    if op == "mutate":
        items[i] = mutate_value(items[i], rng, depth + 1)
    elif op == "remove":
        del items[i]
    elif op == "duplicate":
        items.insert(rng.randrange(len(items) + 1), items[i])
    elif op == "swap" and len(items) > 1:
        j = rng.randrange(len(items))
        items[i], items[j] = items[j], items[i]
    elif op == "insert":
        items.insert(rng.randrange(len(items) + 1), mutate_value(items[i], rng, depth + 1))
    elif op == "empty":
        items = []
    return items


def mutate_value(v: Any, rng: random.Random, depth: int = 0) -> Any:
    """A type-preserving variant of v (a new object; v is never changed). Unknown types come back as they are."""
    if depth > 8:
        return v
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return _mutate_int(v, rng)
    if isinstance(v, float):
        return _mutate_float(v, rng)
    if isinstance(v, str):
        return _mutate_str(v, rng)
    if isinstance(v, list):
        return _mutate_seq(v, rng, depth, keep_length=False)
    if isinstance(v, tuple):                        # tuples are often records (fixed arity): keep the length
        return tuple(_mutate_seq(list(v), rng, depth, keep_length=True))
    if isinstance(v, (set, frozenset)):
        items = sorted(v, key=serialize_value)
        if items and rng.random() < 0.5:
            items.pop(rng.randrange(len(items)))
        elif items:
            items.append(mutate_value(rng.choice(items), rng, depth + 1))
        try:
            return type(v)(items)
        except TypeError:                           # a mutated element became unhashable
            return v
    if isinstance(v, dict):
        if not v:
            return v
        key = rng.choice(list(v))
        out = dict(v)
        if rng.random() < 0.25 and len(out) > 1:
            del out[key]
        else:
            out[key] = mutate_value(out[key], rng, depth + 1)
        return out
    return v


def mutate_args(args: list, rng: random.Random) -> list:
    """Mutate one argument (sometimes two) of a positional-argument list."""
    args = list(args)
    if not args:
        return args
    for _ in range(2 if len(args) > 1 and rng.random() < 0.3 else 1):
        i = rng.randrange(len(args))
        args[i] = mutate_value(args[i], rng)
    return args


def generate_inputs(seeds: list[list], n: int, rng: random.Random, seen: set[str], max_chars: int,
                    tries_per_input: int = 20, transform=None) -> list[tuple[str, list]]:
    """Up to n new (serialized input, args) pairs, each a mutation of a seed; ``seen`` (serialized inputs
    already known) is extended with what is returned. Inputs longer than max_chars or holding values that do
    not serialize (opaque) are skipped. ``transform`` (args -> args) makes a mutated input valid for its
    kind before it is compared with what is known (a tree's level-order list made canonical)."""
    out: list[tuple[str, list]] = []
    if not seeds:
        return out
    for _ in range(n * tries_per_input):
        if len(out) >= n:
            break
        args = mutate_args(rng.choice(seeds), rng)
        if transform is not None:
            args = transform(args)
        text = serialize_value(args)
        if text in seen or len(text) > max_chars or '"$o"' in text:
            continue
        seen.add(text)
        out.append((text, args))
    return out


def greedy_rank(kills: dict[str, frozenset], ordinal: dict[str, int]) -> tuple[list[str], int]:
    """Order tests for set cover; returns (ranking, cover_size).

    ranking[:cover_size] is the greedy cover: each step takes the test killing the most mutants not killed
    yet (ties: more kills overall, then lower ordinal, then test id), until the union of kills equals that
    of the whole suite. The remaining tests follow by kill count, then ordinal, so ranking[:k] is "the k
    tests that kill most". cover_size is at least 1 when there is a test (a reward needs one test even for a
    problem whose suite kills nothing)."""
    key = {t: (ordinal[t], t) for t in kills}
    remaining = set(kills)
    covered: set = set()
    ranking: list[str] = []
    while remaining:
        best = min(remaining, key=lambda t: (-len(kills[t] - covered), -len(kills[t]), key[t]))
        if not kills[best] - covered:
            break
        ranking.append(best)
        covered |= kills[best]
        remaining.discard(best)
    cover_size = len(ranking)
    ranking += sorted(remaining, key=lambda t: (-len(kills[t]), key[t]))
    return ranking, max(cover_size, 1 if ranking else 0)


def killed_by(kills: dict[str, frozenset], tests) -> frozenset:
    return frozenset().union(*(kills[t] for t in tests))


def parameter_names(code: str, function: str) -> list[str] | None:
    """Positional parameter names of ``function`` (a method: without ``self``) defined in ``code``."""
    import ast
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            names = [a.arg for a in node.args.posonlyargs + node.args.args]
            return names[1:] if names and names[0] in ("self", "cls") else names
    return None


def positional(args: list, kwargs: dict, names: list[str]) -> list | None:
    """The call as a positional-argument list in the order of ``names`` (None if a keyword is unknown)."""
    if not kwargs:
        return list(args)
    rest = names[len(args):]
    if set(kwargs) - set(rest) or len(kwargs) != len(rest):
        return None
    return list(args) + [kwargs[n] for n in rest]


# -- a contract inferred from the examples -------------------------------------------------------------------
def _value_facts(v: Any) -> set[str]:
    """Facts about one argument value that a problem's constraints usually state."""
    if isinstance(v, bool):
        return {"bool"}
    if isinstance(v, int):
        return {f for f, ok in (("int", True), ("nonneg", v >= 0), ("positive", v >= 1)) if ok}
    if isinstance(v, str):
        return {"str"} | {f for f, ok in (
            ("nonempty", True), ("lower", v.islower() and v.isalpha()), ("upper", v.isupper() and v.isalpha()),
            ("digits", v.isdigit()), ("alpha", v.isalpha()), ("alnum", v.isalnum()), ("binary", set(v) <= set("01")),
            ("brackets", set(v) <= set("()[]{}"))) if v and ok}
    if not isinstance(v, (list, tuple)):
        return set()
    items = list(v)
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items)
    matrix = bool(items) and all(isinstance(x, (list, tuple)) for x in items)
    strings = bool(items) and all(isinstance(x, str) for x in items)
    return {f for f, ok in (
        ("seq", True), ("nonempty", bool(items)), ("numbers", numbers),
        ("all_nonneg", numbers and all(x >= 0 for x in items)),
        ("sorted", numbers and all(a <= b for a, b in zip(items, items[1:]))),
        ("distinct", numbers and len(set(items)) == len(items)),
        ("matrix", matrix), ("rectangular", matrix and len({len(x) for x in items}) == 1),
        ("strings", strings), ("lower_words", strings and all(x.isalpha() and x.islower() for x in items))) if ok}


def inferred_contract(seeds: list[list]):
    """A predicate on argument lists: what every seed (the problem's own examples) satisfies, argument by
    argument - the same arity, and each fact (non-negative, non-empty, sorted, distinct, lowercase, rectangular,
    ...) that holds for that argument in all seeds holds for the candidate too. A cheap stand-in for the
    statement's constraints: generated inputs stay inside what the examples show, where a different correct
    program may not disagree with the reference."""
    if not seeds:
        return lambda args: True
    arity = {len(s) for s in seeds}
    common: dict[int, set[str]] = {}
    for s in seeds:
        for i, v in enumerate(s):
            f = _value_facts(v)
            common[i] = f if i not in common else common[i] & f

    def holds(args: list) -> bool:
        return len(args) in arity and all(common.get(i, set()) <= _value_facts(v) for i, v in enumerate(args))
    return holds
