"""AceCoder-style synthesis: rewrite a seed program into a question + assert tests, and parse the reply.

Parser fallbacks, in order: JSON object (fenced or bare, truncation-repaired, python-literal dicts),
JSON-ish text (broken quoting), "Question:"/"Tests:" sections, fenced code blocks, loose ``assert`` lines.
Each test must be one independent ``assert`` statement calling the target function with constant
arguments and referencing no names besides that function, builtins and names it binds itself.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field

from .pyast import parse as _parse, parses as _parses

SYNTH_SYSTEM = "You are an AI assistant that helps people with python coding tasks."

_SYNTH_TEMPLATE = """You are given a Python code snippet{with_q}. Turn it into a LeetCode-style programming \
question and write test cases for it.

Requirements for the question:
1. It is clear and self-contained and describes the input and the output in enough detail.
2. It is solved by implementing exactly one Python function (not several functions, not a class).
3. It needs no external resources: no files, network or databases.
4. You may reuse wording from the original question, but include no complexity analysis and no test cases.

Requirements for the tests:
5. Write about {n_tests} test cases.
6. Every test case is a single, independent `assert` statement that calls the function.
7. All arguments and expected outputs are constants; use no helper variables and no external resources.
{original}
Code snippet:
```python
{program}
```

Reply with one JSON object and nothing else:
{{"question": "<the question>", "tests": ["assert ...", "assert ..."]}}"""

STATUSES = ("ok", "empty", "unparseable", "bad_question", "no_tests", "truncated", "invalid_tests",
            "duplicate_tests", "too_few_tests")


def build_synth_messages(seed_code: str, instruction: str | None = None, *, n_tests: int = 20,
                         system: str | None = SYNTH_SYSTEM) -> list[dict]:
    """Chat messages asking for ``{"question", "tests"}`` from a seed program (and optional original question)."""
    original = f"\nOriginal question:\n{instruction.strip()}\n" if instruction and instruction.strip() else ""
    user = _SYNTH_TEMPLATE.format(with_q=" and the question it answers" if original else "", n_tests=n_tests,
                                  original=original, program=seed_code.strip("\n"))
    msgs = [{"role": "system", "content": system}] if system else []
    return msgs + [{"role": "user", "content": user}]


@dataclass
class SynthResult:
    question: str
    tests: list[str]
    status: str
    detail: str = ""
    entry_point: str | None = None
    truncated: bool = False
    source: str = ""  # which parser path produced the result
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (test, reason)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# ---------------------------------------------------------------- text helpers

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)


def strip_think(text: str) -> str:
    """Drop reasoning: everything up to the last ``</think>``; an unclosed ``<think>`` drops the rest."""
    if "</think>" in text:
        return text.rsplit("</think>", 1)[1]
    return text.split("<think>", 1)[0] if "<think>" in text else text


def _closers(stack: list[str]) -> str:
    return "".join("}" if c == "{" else "]" for c in reversed(stack))


def _repair_json(s: str, max_tries: int = 400):
    """(dict, cut_off) for a broken/truncated JSON object: cut after the last complete value and close the
    brackets. Closing a string left open is tried last (it keeps a cut-off question, but could forge a
    shortened test). ``cut_off``: the text ended inside a string or with unclosed brackets."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    in_str = esc = False
    for i, ch in enumerate(s):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
                cuts.append((i + 1, _closers(stack)))
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
            cuts.append((i + 1, _closers(stack)))
    cut_off = in_str or bool(stack)
    tries = list(reversed(cuts[-max_tries:]))
    if in_str:
        tries.append((len(s), '"' + _closers(stack)))
    for pos, close in tries:
        try:
            obj = json.loads(s[:pos] + close, strict=False)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj, cut_off
    return None, cut_off


def _load_obj(text: str):
    """(dict, repaired, cut_off) for the first JSON/python-literal object in ``text``; dict None if none."""
    blocks = [b for lang, b in _FENCE.findall(text) if lang.lower() in ("json", "")]
    for cand in blocks + [text]:
        start = cand.find("{")
        if start < 0:
            continue
        body = cand[start:]
        with contextlib.suppress(ValueError):
            obj, _ = json.JSONDecoder(strict=False).raw_decode(body)
            if isinstance(obj, dict):
                return obj, False, False
        end = body.rfind("}")
        with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
            obj = ast.literal_eval(body[: end + 1]) if end > 0 else None
            if isinstance(obj, dict):
                return obj, False, False
        obj, cut_off = _repair_json(body)
        if obj is not None:
            return obj, True, cut_off
    return None, False, False


def _pick(obj: dict, *names: str):
    low = {str(k).lower().replace(" ", "_"): v for k, v in obj.items()}
    return next((low[n] for n in names if n in low), None)


def split_asserts(code: str) -> tuple[list[str], bool]:
    """Assert statements in a code chunk (multi-line aware); second value: last one looked cut off."""
    with contextlib.suppress(SyntaxError, ValueError):
        return [ast.get_source_segment(code, n) for n in _parse(code).body if isinstance(n, ast.Assert)], False
    out, cur, cut = [], None, False
    for line in code.splitlines():
        s = line.strip()
        if m := _ASSERT_LINE.match(s):
            if cur is not None:
                out.append(cur)
            cur = _trim_assert(m.group(1))
        elif cur is not None and s and not _parses(cur):
            cur = cur + "\n" + s
        elif cur is not None:
            out.append(cur)
            cur = None
    if cur is not None:
        out.append(cur)
        cut = not _parses(cur)
    return out, cut


_ASSERT_LINE = re.compile(r"^(?:[-*]\s+|\d+[.)]\s+)?[\"'`]*\s*(assert\b.*)$")


def _trim_assert(s: str) -> str:
    """Strip JSON/list debris (``",`` ``]`` ``}``) after an assert copied out of broken JSON."""
    if _parses(s):
        return s
    t = s
    while t and t[-1] in "\",]}'` \t" and not _parses(t):
        t = t[:-1]
    return t if _parses(t) else s


# ---------------------------------------------------------------- extraction paths

_Q_HDR = re.compile(r"^\s*(?:#+\s*|\*\*)?\s*(question|problem(?: statement)?|task)\s*(?:\*\*)?\s*:?\s*(?:\*\*)?\s*:?",
                    re.I | re.M)
_T_HDR = re.compile(r"^\s*(?:#+\s*|\*\*)?\s*(tests?|test cases?|unit tests?)\s*(?:\*\*)?\s*:?\s*(?:\*\*)?\s*:?\s*$",
                    re.I | re.M)
_JSONISH_Q = re.compile(r'["\']question["\']\s*:\s*["\'](.*?)["\']\s*,\s*\n?\s*["\']tests', re.S | re.I)


def _tests_from_value(v) -> list[str]:
    """Test strings from a JSON value: a list of strings or one string; all-assert items are split."""
    items = v if isinstance(v, list) else [v] if isinstance(v, str) else []
    out = []
    for t in items:
        if not isinstance(t, str):
            continue
        try:
            body = _parse(t).body
        except (SyntaxError, ValueError):
            body = None
        if body and len(body) > 1 and all(isinstance(n, ast.Assert) for n in body):
            out += [ast.get_source_segment(t, n) for n in body]
        else:
            out.append(t.strip())
    return out


def _extract(text: str):
    """Yield (source, question, tests, truncated) candidates, most structured first."""
    obj, repaired, cut_off = _load_obj(text)
    if obj is not None:
        q = _pick(obj, "question", "problem", "prompt", "instruction")
        tests = _tests_from_value(_pick(obj, "tests", "test_cases", "testcases", "asserts", "test"))
        yield ("json_repaired" if repaired else "json"), (q if isinstance(q, str) else ""), tests, cut_off
    if m := _JSONISH_Q.search(text):
        yield "jsonish", m.group(1).replace("\\n", "\n").replace('\\"', '"'), *split_asserts(text[m.end():])
    qh, th = _Q_HDR.search(text), _T_HDR.search(text)
    if qh and th and th.start() > qh.end():
        rest = text[th.end():]
        code = "\n".join(b for _, b in _FENCE.findall(rest)) or rest
        yield "sections", text[qh.end():th.start()], *split_asserts(code)
    if fences := _FENCE.findall(text):
        found = [split_asserts(block) for _, block in fences]
        tests, cut = [t for ts, _ in found for t in ts], any(c for _, c in found)
        prose = _FENCE.sub("\n", text)
        yield "fenced", _question_from_prose(prose), tests, cut or text.count("```") % 2 == 1
    yield "loose", _question_from_prose(text), *split_asserts("\n".join(text.splitlines()))


def _question_from_prose(text: str) -> str:
    lines = []
    for ln in text.splitlines():
        s = ln.strip()
        if s.startswith(("assert ", "assert(", "```")) or _T_HDR.match(ln):
            break
        lines.append(ln)
    q = "\n".join(lines)
    return _Q_HDR.sub("", q, count=1) if _Q_HDR.match(q) else q


# ---------------------------------------------------------------- validation

_BUILTINS = set(dir(builtins))
_FORBIDDEN = {"open", "input", "exec", "eval", "compile", "__import__", "globals", "locals", "vars",
              "breakpoint", "exit", "quit", "help", "memoryview", "setattr", "delattr", "getattr"}
_CONST_CALLS = {"float", "int", "str", "set", "frozenset", "tuple", "list", "dict", "complex", "bytes",
                "bytearray", "range", "bool"}


def _is_const(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_is_const(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_const(k) for k in node.keys) and all(_is_const(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _is_const(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_const(node.left) and _is_const(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONST_CALLS:
        return all(_is_const(a) for a in node.args) and all(_is_const(k.value) for k in node.keywords)
    return False


def _called_names(tree: ast.AST) -> list[str]:
    return [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id not in _BUILTINS]


def guess_entry_point(tests: list[str]) -> str | None:
    """Most frequently called non-builtin function name across the tests."""
    counts = Counter()
    for t in tests:
        with contextlib.suppress(SyntaxError, ValueError):
            counts.update(set(_called_names(_parse(t))))
    return counts.most_common(1)[0][0] if counts else None


def check_test(test: str, entry_point: str | None) -> str | None:
    """None when ``test`` is a valid independent constant-argument assert on ``entry_point``, else a reason."""
    if not test.strip():
        return "empty"
    if len(test) > 5000:
        return "too_long"
    try:
        tree = _parse(test)
    except (SyntaxError, ValueError) as e:
        return "incomplete" if "never closed" in str(e) or "EOF" in str(e) else "syntax_error"
    if len(tree.body) != 1:
        return "multiple_statements"
    if not isinstance(tree.body[0], ast.Assert):
        return "not_assert"
    bound = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.comprehension):
            bound |= {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}
        elif isinstance(n, ast.Lambda):
            a = n.args
            bound |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
        elif isinstance(n, ast.NamedExpr):
            bound.add(n.target.id)
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id != entry_point and n.id not in bound:
            if n.id in _FORBIDDEN:
                return f"forbidden_name:{n.id}"
            if n.id not in _BUILTINS:
                return f"undefined_name:{n.id}"
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == entry_point]
    if entry_point is None or not calls:
        return "no_call"
    for c in calls:
        if not all(_is_const(a) for a in c.args) or not all(_is_const(k.value) for k in c.keywords):
            return "non_constant_args"
    return None


def _norm(test: str) -> str:
    try:
        return ast.dump(_parse(test))
    except (SyntaxError, ValueError):
        return test.strip()


# ---------------------------------------------------------------- main entry

def parse_synth_output(text: str | None, *, entry_point: str | None = None, min_tests: int = 5,
                       min_question_chars: int = 20) -> SynthResult:
    """Parse a synthesis reply into a question and validated, de-duplicated tests (see module docstring).

    ``status`` is one of :data:`STATUSES`; ``detail`` explains non-ok statuses; ``rejected`` lists
    dropped tests with reasons (``duplicate`` for repeats).
    """
    raw = strip_think(text or "")
    if not raw.strip():
        return SynthResult("", [], "empty", "no text")
    best = None
    for source, q, cands, cut in _extract(raw):
        res = _validate(source, (q or "").strip(), cands, cut, entry_point)
        score = (len(res.tests) >= min_tests and len(res.question) >= min_question_chars, len(res.tests),
                 len(res.question) >= min_question_chars, len(cands))
        if best is None or score > best[0]:
            best = (score, res, len(cands))
        if score[0]:
            break
    _, res, n_cands = best
    if not res.question and not n_cands:
        return SynthResult("", [], "unparseable", "no question or tests found", source=res.source)
    question, truncated = res.question, res.truncated
    n_valid = len(res.tests) + sum(r == "duplicate" for _, r in res.rejected)
    n_dup = n_valid - len(res.tests)
    n = len(res.tests)
    if len(question) < min_question_chars or _looks_like_code(question):
        res.status, res.detail = "bad_question", f"question missing or not prose ({len(question)} chars)"
    elif truncated and n < min_tests:
        res.status, res.detail = "truncated", f"output cut off; {n} valid test(s) recovered"
    elif not n_cands:
        res.status, res.detail = "no_tests", "no assert statements found"
    elif n_valid == 0:
        reasons = Counter(r.split(":")[0] for _, r in res.rejected)
        res.status, res.detail = "invalid_tests", f"no valid test; rejections: {dict(reasons)}"
    elif n < min_tests and n_dup and n_valid >= min_tests:
        res.status, res.detail = "duplicate_tests", f"{n} unique of {n_valid} valid tests (< {min_tests})"
    elif n < min_tests:
        res.status, res.detail = "too_few_tests", f"{n} valid unique test(s) < {min_tests}"
    elif truncated:
        res.detail = "recovered from truncated output"
    return res


def _validate(source: str, question: str, cands: list[str], truncated: bool, entry_point: str | None):
    ep = entry_point or guess_entry_point(cands)
    res = SynthResult(question, [], "ok", entry_point=ep, truncated=truncated, source=source)
    seen = set()
    for t in cands:
        reason = check_test(t, ep)
        if reason is None:
            key = _norm(t)
            reason = "duplicate" if key in seen else None
            seen.add(key)
        if reason is None:
            res.tests.append(t.strip())
        else:
            res.rejected.append((t, reason))
    return res


def _looks_like_code(q: str) -> bool:
    first = q.lstrip().splitlines()[0] if q.strip() else ""
    return first.startswith(("def ", "class ", "import ", "from ", "assert ", "{", "[")) and _parses(q)
