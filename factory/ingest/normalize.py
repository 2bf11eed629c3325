"""Building blocks for adapters: stable ids, normalized rows, and test-source splitting."""
from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import warnings
from dataclasses import dataclass, field
from typing import Any

from factory.errors import InputError

TEST_FORMATS = ("assert", "check", "call", "stdio", "pytest", "unittest", "answer", "harness")   # answer: a final answer, not code; harness: MultiPL-E
COMPARISONS = ("exact", "token", "float", "casefold")


def stable_hash(*parts: Any, length: int = 16) -> str:
    """sha256 over a canonical JSON encoding of the parts (stable across runs and machines)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


@dataclass
class TestRow:
    kind: str
    code: str | None = None
    input: str | None = None
    expected: str | None = None
    comparison: str = "exact"
    atol: float | None = None
    subset: str | None = None


@dataclass
class ProgramRow:
    code: str
    origin: str = "reference"
    model: str | None = None
    sample_index: int | None = None
    raw_completion: str | None = None
    reported_pass_rate: float | None = None
    metadata: dict | None = None
    language: str = "python"     # the program's language (factory.sandbox.languages: cpp, java, javascript, rust)


@dataclass
class Normalized:
    """What an adapter makes of one input record."""

    source_id: str
    question: str
    test_format: str
    tests: list[TestRow]
    starter_code: str | None = None
    entry_point: str | None = None
    test_preamble: str | None = None
    difficulty_label: str | None = None
    split: str | None = None
    programs: list[ProgramRow] = field(default_factory=list)
    metadata: dict | None = None
    language: str = "python"


def input_error(ctx: tuple[str, int], message: str, field: str) -> InputError:
    """An InputError naming the (file, line) of ``ctx`` and ``field``."""
    return InputError(message, file=ctx[0], line=ctx[1], field=field)


def require(record: dict, key: str, ctx: tuple[str, int], types: type | tuple = str) -> Any:
    """record[key], or an InputError naming file, line and field."""
    if key not in record or record[key] is None:
        raise input_error(ctx, "missing required field", key)
    value = record[key]
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise input_error(ctx, f"expected {names}, got {type(value).__name__}", key)
    if isinstance(value, str) and not value.strip() and key not in ("test_setup_code",):
        raise input_error(ctx, "empty value", key)
    return value


def parse_python(src: str) -> ast.Module:
    """ast.parse without the SyntaxWarnings/DeprecationWarnings that dataset code triggers (e.g. '\\d')."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(src)


def _segmenter(text: str):
    """``segment(node)``: an AST node's source in O(segment) time (ast.get_source_segment re-splits ``text``)."""
    lines = [line.encode() for line in text.splitlines(keepends=True)]

    def segment(node: ast.AST) -> str:
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            return lines[first][node.col_offset:node.end_col_offset].decode()
        parts = [lines[first][node.col_offset:], *lines[first + 1:last], lines[last][:node.end_col_offset]]
        return b"".join(parts).decode()
    return segment


def split_check(test_src: str) -> list[str]:
    """Split a HumanEval-style `def check(candidate)` whose body is only asserts into one check per assert.

    Module-level statements other than `check` (e.g. METADATA, imports, helpers) are kept in every piece.
    Asserts that never mention `candidate` (e.g. `assert True`) cannot fail and are dropped. Anything more
    complex (loops, assignments inside check) stays one test.
    """
    try:
        module = parse_python(test_src)
    except SyntaxError:
        return [test_src]
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        return [test_src]
    check = checks[0]
    body = [n for n in check.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if not body or not all(isinstance(n, ast.Assert) for n in body):
        return [test_src]
    arg = check.args.args[0].arg if check.args.args else "candidate"
    segment = _segmenter(test_src)
    prefix = "\n".join(segment(n) for n in module.body if n is not check)
    pieces = []
    for node in body:
        if not any(isinstance(x, ast.Name) and x.id == arg for x in ast.walk(node)):
            continue
        src = "\n    ".join(segment(node).splitlines())
        pieces.append(f"{prefix}\n\ndef check({arg}):\n    {src}\n".lstrip("\n"))
    return pieces or [test_src]


def split_pytest(test_src: str) -> list[str]:
    """Split a pytest module into one module per top-level `test_*` function (shared setup kept in each)."""
    try:
        module = parse_python(test_src)
    except SyntaxError:
        return [test_src]
    tests = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    if len(tests) < 2:
        return [test_src]
    segment = _segmenter(test_src)
    prefix = "\n\n".join(segment(n) for n in module.body if n not in tests)
    return [f"{prefix}\n\n\n{segment(t)}\n".lstrip("\n") for t in tests]


def called_function(asserts: list[str], code: str | None) -> str | None:
    """The function the asserts call that the reference code defines (MBPP has no entry_point field)."""
    defined: set[str] = set()
    if code:
        with contextlib.suppress(SyntaxError):
            defined = {n.name for n in ast.walk(parse_python(code)) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for src in asserts:
        try:
            tree = parse_python(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if not defined or node.func.id in defined:
                    return node.func.id
    return None


def function_params(starter_code: str) -> tuple[list[str], int] | None:
    """(parameter names, number of required ones) of the first function in a starter-code stub."""
    text = starter_code.strip("\n")
    for candidate in (text, text + "\n    pass", text.rstrip() + "\n\tpass"):
        try:
            tree = parse_python(candidate)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                names = [a.arg for a in node.args.args if a.arg != "self"]
                return names, len(names) - len(node.args.defaults)
    return None


def literal_or_text(text: str) -> Any:
    """A Python literal if `text` parses as one, else the text itself (APPS writes strings unquoted)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def unquote(value: Any) -> Any:
    """LeetCodeDataset v0.2.0 stores meta strings with their quotes ("'Easy'")."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        parsed = literal_or_text(value)
        return parsed if isinstance(parsed, str) else value
    return value
