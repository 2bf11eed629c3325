"""Shape-preserving mutation of stdin inputs (CodeContests-style ``stdio`` tests) for `factory augment`.

A stdin input is read as lines of whitespace-separated tokens. A mutant input keeps the seed's *shape* (the number
of lines and of tokens on each line) and every token that looks like a count (equal to the number of lines or
tokens that follow, on later lines or its own line, to the next line's word length, or the ``t`` of a multi-test
input), so the size fields stay consistent with the data they describe. Operators, driven by one ``random.Random``:

* an integer moves by +-1, +-2..10, doubles, halves, or jumps to the smallest / largest value the seeds show in
  the same role (line 0 token j; a body line's column), or to another value of the same input;
* two tokens of a line with three or more tokens swap (an array's order);
* two body lines of the same width swap where the seeds' lines read as edges (an edge list's order);
* a word has one character replaced by another of the seeds' alphabet, or two neighbours swapped (same length).

Because the statement's constraints are not machine-read here, :func:`stdio_contract` infers from the seeds (the
dataset's own inputs, all valid) facts that every seed satisfies and requires them of every candidate: each integer
within the range the seeds show for its role (and not 0 where no seed has a 0 there: 1-based ids around a -1
marker), body integers bounded by a first-line value where every seed's are, ``a < b`` / ``a <= b`` / ``a != b`` on
two-integer lines, sorted / strictly increasing / distinct / permutation-of-1..n on longer lines, no self-loop /
repeated edge / cycle and connectivity where the seeds' two- or three-integer lines read as edges have them, the
same number of negative integers where every seed has the same (one root marked -1) and the same line around it
where every seed's is the same ("-1 0": the root's parent and flag), and words over the seeds' alphabet. Inferred
from few seeds the facts are stronger than the statement's constraints, which errs on the side of valid inputs
(fewer candidates). Problems whose statement accepts several answers must not get tests with one expected output:
:func:`several_answers` finds CodeContests' wording of that.
"""
from __future__ import annotations

import random
import re

from factory.testgen.any_order import phrase, several_answers_phrase

_INT = re.compile(r"-?\d+")
_MANY = re.compile(
    r"(?:multiple|several|many|more\s+than\s+one)\s+(?:possible\s+|valid\s+|correct\s+|optimal\s+|suitable\s+)?"
    r"(?:answers?|solutions?|ways|arrays|strings|sequences|permutations|trees|pairs)"
    r"|\b(?:print|output|find|return)\s+any\b|\bany\s+of\s+(?:them|the(?:m|se))\b|\bin\s+any\s+order\b"
    r"|\bany\s+(?:valid|correct|optimal|such|possible)\s+(?:answer|solution|one)\b"
    r"|absolute\s+or\s+relative\s+error|relative\s+or\s+absolute\s+error", re.IGNORECASE)


def several_answers(question: str | None) -> str | None:
    """The statement's words saying more than one output is accepted (several answers, any order, a float
    answer within an error bound), or None. One expected output cannot judge such a problem."""
    return phrase(_MANY.search((question or "").replace("\xa0", " "))) or several_answers_phrase(question)


def parse(text: str) -> list[list[str]]:
    """Lines of tokens, trailing blank lines dropped (blank lines inside are kept as empty lines)."""
    lines = [ln.split() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def render(lines: list[list[str]]) -> str:
    return "\n".join(" ".join(tokens) for tokens in lines) + "\n"


def _is_int(tok: str) -> bool:
    return bool(_INT.fullmatch(tok)) and len(tok.lstrip("-")) <= 18


def structural(lines: list[list[str]]) -> set[tuple[int, int]]:
    """Positions of integers that look like counts of what follows (kept unchanged by mutation)."""
    out = set()
    n_lines = len(lines)
    for i, tokens in enumerate(lines):
        for j, tok in enumerate(tokens):
            if not _is_int(tok):
                continue
            v = int(tok)
            if v < 0:
                continue
            rest = n_lines - i - 1
            counts = {rest, rest + 1, rest - 1}
            if j == 0 and len(tokens) > 1:            # "k t1 .. tk": the count of the rest of its own line
                counts.add(len(tokens) - 1)
            for k in (i + 1, i + 2):
                if k < n_lines:
                    counts.add(len(lines[k]))
                    counts.update(len(t) for t in lines[k][:1] if not _is_int(t))
            if i + 1 < n_lines:                      # a block of same-width lines right after this one
                width, run = len(lines[i + 1]), 0
                while i + 1 + run < n_lines and len(lines[i + 1 + run]) == width:
                    run += 1
                counts.update((run, run + 1, run - 1))
            if i == 0 and j == 0 and v >= 1 and rest % v == 0:   # t test cases of equal line count
                counts.add(v)
            if v in counts:
                out.add((i, j))
    return out


def _role(i: int, j: int, width: int):
    return ("head", j) if i == 0 else ("body", width, j) if width <= 3 else ("body", "many")


def _ints(tokens: list[str]) -> list[int] | None:
    return [int(t) for t in tokens] if tokens and all(_is_int(t) for t in tokens) else None


def _edge_facts(lines: list[list[str]]) -> set[str] | None:
    """Facts about the body lines of width 2 or 3 read as edges (the first two integers, both >= 1): no self-loop,
    no repeated edge, acyclic, and connected over 1..n (n = the first integer of line 0)."""
    edges = [(int(t[0]), int(t[1])) for t in lines[1:] if len(t) in (2, 3) and _ints(t) is not None]
    if not edges:
        return None                                  # no edge lines: says nothing (n = 1: a tree without edges)
    if any(a < 1 or b < 1 for a, b in edges):
        return set()
    facts = set()
    if all(a != b for a, b in edges):
        facts.add("no_loop")
    if len({frozenset(e) for e in edges}) == len(edges):
        facts.add("simple")
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    cycle = False
    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra == rb:
            cycle = True
        parent[ra] = rb
    if not cycle:
        facts.add("acyclic")
    head = lines[0] if lines else []
    if head and _is_int(head[0]) and 1 <= int(head[0]) <= 10 ** 6:
        n = int(head[0])
        if max(max(e) for e in edges) <= n and len({find(v) for v in range(1, n + 1)}) == 1:
            facts.add("connected")
    return facts


def _line_facts(tokens: list[str]) -> set[str]:
    vals = _ints(tokens)
    if vals is None or len(vals) < 2:
        return set()
    if len(vals) == 2:
        a, b = vals
        return {f for f, ok in (("lt", a < b), ("le", a <= b), ("ne", a != b), ("gt", a > b), ("ge", a >= b)) if ok}
    steps = list(zip(vals, vals[1:]))
    return {f for f, ok in (("sorted", all(x <= y for x, y in steps)), ("increasing", all(x < y for x, y in steps)),
                            ("sorted_desc", all(x >= y for x, y in steps)), ("distinct", len(set(vals)) == len(vals)),
                            ("permutation", sorted(vals) == list(range(1, len(vals) + 1)))) if ok}


def _negatives(lines: list[list[str]]) -> int:
    return sum(1 for tokens in lines for t in tokens if _is_int(t) and int(t) < 0)


class Contract:
    """What every seed satisfies; :meth:`holds` checks a candidate (see the module doc)."""

    def __init__(self, seeds: list[list[list[str]]]):
        self.ranges: dict = {}
        self.zero: set = set()                               # roles where some seed has a 0
        self.line_facts: dict[int, set[str]] = {}          # by width (2, or 3 meaning "3 or more")
        self.alphabet: set[str] = set()
        bounded: set[int] | None = None                      # line-0 columns bounding every body integer
        self.edge_facts: set[str] | None = None
        negatives = {_negatives(lines) for lines in seeds}
        self.negatives = negatives.pop() if len(negatives) == 1 else None   # e.g. exactly one root marked -1
        marked = {tuple(t) for lines in seeds for t in lines if any(_is_int(x) and int(x) < 0 for x in t)}
        self.negative_line = marked.pop() if len(marked) == 1 else None      # the root's line: always "-1 0"
        for lines in seeds:
            f = _edge_facts(lines)
            if f is not None:
                self.edge_facts = f if self.edge_facts is None else self.edge_facts & f
            for i, tokens in enumerate(lines):
                for j, tok in enumerate(tokens):
                    if _is_int(tok):
                        key, v = _role(i, j, len(tokens)), int(tok)
                        lo, hi = self.ranges.get(key, (v, v))
                        self.ranges[key] = (min(lo, v), max(hi, v))
                        if v == 0:
                            self.zero.add(key)
                    else:
                        self.alphabet.update(tok)
                if i and _ints(tokens) is not None and len(tokens) >= 2:
                    w = min(len(tokens), 3)
                    f = _line_facts(tokens)
                    self.line_facts[w] = f if w not in self.line_facts else self.line_facts[w] & f
            head = lines[0] if lines else []
            body = [int(t) for tokens in lines[1:] for t in tokens if _is_int(t)]
            cols = {j for j, t in enumerate(head) if _is_int(t) and body and max(body) <= int(t)}
            bounded = cols if bounded is None else bounded & cols
        self.bounded = bounded or set()
        self.edge_facts = self.edge_facts or set()

    def holds(self, lines: list[list[str]]) -> bool:
        body_max = None
        for i, tokens in enumerate(lines):
            for j, tok in enumerate(tokens):
                if _is_int(tok):
                    role = _role(i, j, len(tokens))
                    lo, hi = self.ranges.get(role, (None, None))
                    v = int(tok)
                    if lo is None or not lo <= v <= hi or (v == 0 and role not in self.zero):
                        return False
                    if i:
                        body_max = v if body_max is None else max(body_max, v)
                elif not set(tok) <= self.alphabet:
                    return False
            if i and _ints(tokens) is not None and len(tokens) >= 2:
                need = self.line_facts.get(min(len(tokens), 3), set())
                if not need <= _line_facts(tokens):
                    return False
        if self.negatives is not None and _negatives(lines) != self.negatives:
            return False
        if self.negative_line is not None and any(tuple(t) != self.negative_line for t in lines
                                                  if any(_is_int(x) and int(x) < 0 for x in t)):
            return False
        if self.edge_facts and not self.edge_facts <= (_edge_facts(lines) or set()):
            return False
        if body_max is not None and lines:
            for j in self.bounded:
                if j < len(lines[0]) and _is_int(lines[0][j]) and body_max > int(lines[0][j]):
                    return False
        return True


def stdio_contract(seeds: list[str]) -> Contract:
    return Contract([parse(s) for s in seeds])


def mutate_stdio(lines: list[list[str]], rng: random.Random, contract: Contract) -> list[list[str]]:
    """One or two shape-preserving edits of a parsed input (a copy; may return it unchanged)."""
    lines = [list(t) for t in lines]
    fixed = structural(lines)
    for _ in range(2 if rng.random() < 0.3 else 1):
        free_ints = [(i, j) for i, tokens in enumerate(lines) for j, t in enumerate(tokens)   # after a swap too
                     if _is_int(t) and (i, j) not in fixed]
        words = [(i, j) for i, tokens in enumerate(lines) for j, t in enumerate(tokens) if not _is_int(t) and t]
        op = rng.choice(("int", "int", "int", "swap_tokens", "swap_lines", "word"))
        if op == "int" and free_ints:
            i, j = rng.choice(free_ints)
            v = int(lines[i][j])
            lo, hi = contract.ranges.get(_role(i, j, len(lines[i])), (v, v))
            same = [int(t) for tokens in lines for t in tokens if _is_int(t)]
            lines[i][j] = str(rng.choice((v + 1, v - 1, v + rng.randint(2, 10), v - rng.randint(2, 10), v * 2,
                                          v // 2, lo, hi, rng.choice(same))))
        elif op == "swap_tokens":
            rows = [i for i, tokens in enumerate(lines) if len(tokens) >= 3
                    and not any((i, j) in fixed for j in range(len(tokens)))]
            if rows:
                i = rng.choice(rows)
                a, b = rng.sample(range(len(lines[i])), 2)
                lines[i][a], lines[i][b] = lines[i][b], lines[i][a]
        elif op == "swap_lines" and contract.edge_facts:    # edge lists only: a per-vertex list's order is data
            body = [i for i in range(1, len(lines)) if lines[i] and not any((i, j) in fixed
                                                                          for j in range(len(lines[i])))]
            pairs = [(a, b) for a in body for b in body if a < b and len(lines[a]) == len(lines[b])
                     and lines[a] != lines[b]]
            if pairs:
                a, b = rng.choice(pairs[:200])
                lines[a], lines[b] = lines[b], lines[a]
        elif op == "word" and words:
            i, j = rng.choice(words)
            w = list(lines[i][j])
            k = rng.randrange(len(w))
            if len(w) > 1 and rng.random() < 0.4:
                k = min(k, len(w) - 2)
                w[k], w[k + 1] = w[k + 1], w[k]
            else:
                w[k] = rng.choice(sorted(contract.alphabet or set(w)))
            lines[i][j] = "".join(w)
    return lines


def generate_stdio_inputs(seeds: list[str], n: int, rng: random.Random, seen: set[str], max_chars: int,
                          tries_per_input: int = 20, contract: Contract | None = None) -> list[tuple[str, str]]:
    """Up to n new (stdin text, stdin text) pairs, each a mutation of a seed that keeps the seeds' contract;
    ``seen`` (inputs already known, as :func:`key`) is extended with what is returned."""
    out: list[tuple[str, str]] = []
    parsed = [p for p in map(parse, seeds) if p]
    if not parsed:
        return out
    contract = contract or Contract(parsed)
    for _ in range(n * tries_per_input):
        if len(out) >= n:
            break
        cand = mutate_stdio(rng.choice(parsed), rng, contract)
        text = render(cand)
        if key(text) in seen or len(text) > max_chars or not contract.holds(cand):
            continue
        seen.add(key(text))
        out.append((text, text))
    return out


def key(text: str) -> str:
    """An input's identity for de-duplication: its tokens, line by line."""
    return "\n".join(" ".join(t) for t in parse(text))
