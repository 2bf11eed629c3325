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


def program(row: dict, completion: str, *, full: bool | None = None) -> str:
    """The candidate's part of the program (the harness, ``row['tests']``, is the test). ``full``: the completion
    is a whole program (a fenced block in the language, else the text); None: a fenced completion is one."""
    lang = language_of(row)
    if full is None:
        full = "```" in (completion or "")
    if not full:
        return row["prompt"] + cut_at_stop_tokens(completion or "", row.get("stop_tokens"))
    code = first_block(completion or "", lang)
    code = cut_at_stop_tokens(code, [t for t in (row.get("stop_tokens") or ()) if t != "\n\n"])
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
