"""AceCoder-style solution sampling prompt and code extraction from chatty completions."""
from __future__ import annotations

import re

from .pyast import parses as _parses
from .sanitize import entry_point_parts, sanitize
from .synth import strip_think

SAMPLE_INSTRUCTION = ("Please provide a self-contained Python script that solves the following problem "
                      "in a markdown code block:")
SAMPLE_PREFIX = ("Below is a Python script with a self-contained function that solves the problem and passes "
                 "corresponding tests:")


def build_sample_messages(question: str, starter_code: str | None = None, tests: list[str] | None = None, *,
                          n_example_tests: int = 2, assistant_prefix: bool = True,
                          system: str | None = None) -> list[dict]:
    """AceCoder sampling layout: the request, then a fence holding a triple-quoted block with the question
    and the first ``n_example_tests`` tests; optional starter code; optional assistant prefix that opens a
    python fence for the model to continue (use ``continue_final_message`` on vLLM / the HF backend)."""
    body = question.strip()
    if shown := [t.strip() for t in (tests or [])[:n_example_tests]]:
        body += "\n" + "\n".join(shown)
    user = f'{SAMPLE_INSTRUCTION}\n```\n"""\n{body}\n"""\n```'
    if starter_code and starter_code.strip():
        user += f"\nStart from this code:\n```python\n{starter_code.strip()}\n```"
    msgs = [{"role": "system", "content": system}] if system else []
    msgs.append({"role": "user", "content": user})
    if assistant_prefix:
        msgs.append({"role": "assistant", "content": f"{SAMPLE_PREFIX}\n```python\n"})
    return msgs


_OPEN = re.compile(r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*$", re.M)
_CODE_START = re.compile(r"^(def |class |import |from |@|async def |[A-Za-z_][\w]*\s*=)")


def _fenced_blocks(text: str) -> tuple[list[tuple[str, str, bool]], str | None]:
    """([(lang, body, closed)], leading) - ``leading`` is text before a lone closing fence (prefix case)."""
    marks = list(_OPEN.finditer(text))
    blocks, i, leading = [], 0, None
    if marks and not marks[0].group(1) and _parses(text[: marks[0].start()]) and \
            _CODE_START.search(text[: marks[0].start()].lstrip()) is not None:
        # completion continued an opened fence: code first, then a closing fence
        leading = text[: marks[0].start()]
        i = 1
    while i < len(marks):
        lang = marks[i].group(1).lower()
        start = marks[i].end() + 1
        if i + 1 < len(marks):
            blocks.append((lang, text[start: marks[i + 1].start()], True))
            i += 2
        else:
            blocks.append((lang, text[start:], False))
            i += 1
    return blocks, leading


def _largest_parseable(text: str) -> str | None:
    """Unfenced fallback: the longest chunk starting at a code-looking line that parses."""
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if _CODE_START.match(ln)]
    best = None
    for s in starts[:50]:
        for e in range(len(lines), s, -1):
            if _parses(chunk := "\n".join(lines[s:e])):
                if best is None or len(chunk) > len(best):
                    best = chunk
                break
    return best


WHOLE_PROGRAM_FORMATS = ("pytest", "unittest")   # suites that may use any name the program defines


def extract_for_tests(completion: str | None, entry_point: str | None, test_formats, *,
                      finish_reason: str | None = None) -> tuple[str, str]:
    """The one extraction sampling and every reward entry point use: `extract_code`, keeping the whole program
    when the problem's tests are pytest/unittest (they reference helper classes and several functions)."""
    formats = {test_formats} if isinstance(test_formats, str) else set(test_formats or ())
    return extract_code(completion, entry_point, finish_reason=finish_reason,
                        sanitize_code=not formats & set(WHOLE_PROGRAM_FORMATS))


def extract_code(completion: str | None, entry_point: str | None = None, *,
                 finish_reason: str | None = None, sanitize_code: bool = True) -> tuple[str, str]:
    """(code, status) from a completion. Status: ``ok`` | ``no_code`` | ``syntax_error`` | ``truncated`` |
    ``missing_entry_point``. Takes the last python (or untagged) fenced block, else the code before a lone
    closing fence (assistant-prefix continuation), else the largest parseable unfenced chunk; reasoning up
    to ``</think>`` is dropped; then, where there is an entry point, sanitized (imports + entry point and its
    dependencies).  A stdin/stdout program (no entry point) is kept whole."""
    text = completion or ""
    if "<think>" in text and "</think>" not in text:
        return "", "truncated"
    text = strip_think(text)
    if not text.strip():
        return "", "no_code"
    blocks, leading = _fenced_blocks(text)
    py = [b for b in blocks if b[0] in ("python", "py", "python3", "")]
    if leading is not None:
        py.insert(0, ("", leading, True))
    code, closed = None, True
    nonempty = [b for b in py if b[1].strip()]
    if nonempty:
        func = entry_point_parts(entry_point)[1] if entry_point else None
        pat = rf"\bdef\s+{re.escape(func or entry_point)}\s*\(" if entry_point else r"^\s*(?:async\s+)?(?:def|class)\s"
        defining = [b for b in nonempty if re.search(pat, b[1], re.M)]
        _, code, closed = (defining or nonempty)[-1]
    elif not blocks:  # unfenced: nothing marks the end of the code, so a length stop means truncated
        code = _largest_parseable(text)
        closed = False
        if code is None and "def " in text:
            code = text
    if code is None or not code.strip():
        return "", "no_code"
    code = code.strip("\n")
    truncated = not closed and finish_reason == "length"
    if not _parses(code):
        return code, "truncated" if finish_reason == "length" or (not closed and blocks) else "syntax_error"
    if sanitize_code and entry_point:  # without an entry point the program is a script: its module-level
        code, found = sanitize(code, entry_point)   # statements (input(), loops, prints) are the program
        if entry_point and not found:
            return code, "missing_entry_point"
    return code, "truncated" if truncated else "ok"
