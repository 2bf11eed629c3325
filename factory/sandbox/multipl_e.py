"""Function-level problems in C++, Java, JavaScript and Rust in MultiPL-E's published layout (``name``,
``language``, ``prompt``, ``tests``, ``stop_tokens``; also HumanEval-X-style rows): the candidate's code and the
problem's test harness are compiled and run as one program (:class:`~.types.TestSpec` kind ``harness``), which
passes when it exits 0.

The program is built as MultiPL-E builds it: a **continuation** (a base model's text after the prompt) is cut at
the first of the row's stop tokens and put between the prompt and the tests; a **full program** (a chat model's
answer: its fenced block in the language) is cut at the stop tokens too (what follows the function belongs to
the tests, which open by closing it) and followed by the tests. Integrity: the harness shares the program's
process, so its verdict channel (the exit status) is in the program's reach (``exit(0)`` before the asserts
passes); every harness verdict is ``judged_in_process`` and rewards leave it out unless asked
(``exclude_in_process=False``), like in-process ``unittest`` verdicts.
"""
from __future__ import annotations

import re

from . import languages
from .types import Job, TestSpec

# MultiPL-E's language names (file extensions) -> the sandbox's
LANGUAGES = {"cpp": "cpp", "java": "java", "js": "javascript", "javascript": "javascript", "rs": "rust",
             "rust": "rust"}
# a full JavaScript program ends at its function's closing line (MultiPL-E's JavaScript tests do not close it)
KEEP_END = {"javascript": "\n}"}


def language_of(row: dict) -> str:
    """The sandbox language of a MultiPL-E row (``language``: cpp, java, js, rs; or a canonical name)."""
    name = str(row.get("language") or "").strip().lower()
    if name not in LANGUAGES:
        raise ValueError(f"MultiPL-E row {row.get('name')!r}: language {row.get('language')!r} is not one of "
                         f"{', '.join(sorted(LANGUAGES))}")
    return LANGUAGES[name]


def cut_at_stop_tokens(text: str, stop_tokens) -> str:
    """``text`` up to the earliest stop token (MultiPL-E's rule; ``re:`` tokens are regular expressions)."""
    end = len(text)
    for token in stop_tokens or ():
        if token.startswith("re:"):
            m = re.search(token[3:].strip(), text)
            at = m.start() if m else -1
        else:
            at = text.find(token)
        if at != -1:
            end = min(end, at)
    return text[:end]


def first_block(text: str, lang: str) -> str:
    """A chat answer's program: its first fenced block tagged with the language (later blocks are usually
    examples of calling it), else its first fenced block, else the text."""
    blocks = [(tag.strip().lower(), body) for tag, body in languages._FENCE.findall(text)]
    tagged = [body for tag, body in blocks if tag in languages._TAGS.get(lang, (lang,))]
    return tagged[0] if tagged else (blocks[0][1] if blocks else text)


_NOT_NAMES = {"if", "for", "while", "switch", "function", "fn", "return", "sizeof", "catch"}


def function_name(prompt: str) -> str | None:
    """The name of the function a MultiPL-E prompt ends by opening (its last line with ``name(``)."""
    for line in reversed([ln for ln in prompt.splitlines() if ln.strip()]):
        for m in re.finditer(r"([A-Za-z_]\w*)\s*\(", line):
            if m.group(1) not in _NOT_NAMES:
                return m.group(1)
    return None


def split_at_function(code: str, prompt: str) -> tuple[str, str]:
    """(up to the end of the line declaring the prompt's function, the rest); ("", code) when not found."""
    name = function_name(prompt)
    m = None
    for found in (re.finditer(r"(?<![\w.])" + re.escape(name) + r"\s*\(", code) if name else ()):
        line = code[code.rfind("\n", 0, found.start()) + 1:found.start()].lstrip()
        if not line.startswith(("//", "/*", "*", "#")):   # a mention in a doc comment is not the declaration
            m = found
            break
    if m is None:
        return "", code
    eol = code.find("\n", m.end())
    return (code, "") if eol == -1 else (code[:eol + 1], code[eol + 1:])


def program(row: dict, completion: str, *, full: bool | None = None) -> str:
    """The candidate's part of the program (the harness, ``row['tests']``, is the test). ``full``: the completion
    is a whole program (a fenced block in the language, else the text); None: a fenced completion is one."""
    lang = language_of(row)
    if full is None:
        full = "```" in (completion or "")
    if not full:
        return row["prompt"] + cut_at_stop_tokens(completion or "", row.get("stop_tokens"))
    code = first_block(completion or "", lang)
    # the stop tokens end a continuation of the function's body: a whole program's comments and code before the
    # function (a doc comment at column 0 is JavaScript's stop token "\n//") are not cut
    head, body = split_at_function(code, row["prompt"])
    code = head + cut_at_stop_tokens(body, [t for t in (row.get("stop_tokens") or ()) if t != "\n\n"])
    if lang in KEEP_END:   # up to the function's own closing line (what follows would run before the tests)
        end = code.find(KEEP_END[lang])
        if end != -1:
            code = code[:end + len(KEEP_END[lang])]
    return code


def job(row: dict, completion: str, program_id: str | None = None, *, full: bool | None = None,
        **kwargs) -> Job:
    """A sandbox job: the candidate's program and the row's harness as its one ``harness`` test."""
    lang = language_of(row)
    return Job(program_id or str(row.get("name") or row.get("task_id")), program(row, completion, full=full),
               [TestSpec("tests", "harness", code=row["tests"])], language=lang, **kwargs)
