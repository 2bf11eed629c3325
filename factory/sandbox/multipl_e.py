"""Function-level problems in C++, Java, JavaScript, Rust (and Python) in MultiPL-E's published layout (``name``,
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

One construction serves ground truths (:func:`candidate`) and ``execute --samples`` (:func:`sample_code`) alike.
"""
from __future__ import annotations

import re

from . import languages
from .types import Job, TestSpec

# MultiPL-E's language names (file extensions) -> the sandbox's
LANGUAGES = {"cpp": "cpp", "java": "java", "js": "javascript", "javascript": "javascript", "nodejs": "javascript",
             "rs": "rust", "rust": "rust", "py": "python", "python": "python", "python3": "python"}
# the stop tokens MultiPL-E's translators give each language (a ground truth without its row's own uses these)
STOP_TOKENS = {"cpp": ["\n}"], "java": ["\n    }\n"], "javascript": ["\nfunction ", "\n/*", "\n//", "\nconsole.log"],
               "rust": ["\n}"], "python": ["\ndef", "\n#", "\nif", "\nclass"]}
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


_NOT_NAMES = {"if", "for", "while", "switch", "function", "fn", "return", "sizeof", "catch"}


def function_name(prompt: str) -> str | None:
    """The name of the function a MultiPL-E prompt ends by opening (its last line with ``name(``)."""
    return next((m.group(1) for line in reversed([ln for ln in prompt.splitlines() if ln.strip()])
                 for m in re.finditer(r"([A-Za-z_]\w*)\s*\(", line) if m.group(1) not in _NOT_NAMES), None)


def split_at_function(code: str, prompt: str) -> tuple[str, str]:
    """(up to the end of the line declaring the prompt's function, the rest); ("", code) when not found."""
    name = function_name(prompt)
    found = re.finditer(r"(?<![\w.])" + re.escape(name) + r"\s*\(", code) if name else ()
    m = next((f for f in found if not code[code.rfind("\n", 0, f.start()) + 1:f.start()].lstrip()
              .startswith(("//", "/*", "*", "#"))), None)   # a mention in a doc comment is not the declaration
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
    code = languages.fenced_block(completion or "", lang, 0)   # the first block: later ones usually call it
    # the stop tokens end a continuation of the function's body: a whole program's comments and code before the
    # function (a doc comment at column 0 is JavaScript's stop token "\n//") are not cut
    head, body = split_at_function(code, row["prompt"])
    code = head + cut_at_stop_tokens(body, [t for t in (row.get("stop_tokens") or ()) if t != "\n\n"])
    if lang in KEEP_END:   # up to the function's own closing line (what follows would run before the tests)
        end = code.find(KEEP_END[lang])
        if end != -1:
            code = code[:end + len(KEEP_END[lang])]
    return (prompt_header(row["prompt"], code) if lang in HEADER_LANGS else "") + code


# a prompt's lines that set up the program (headers, imports) rather than declare the function; given to whole
# programs in C++ (the harness's assert and the types of the signature) and Python (typing), not in Java, whose
# prompts import org.javatuples (a jar this sandbox does not ship) where an answer brings its own imports
HEADER_LANGS = ("cpp", "python")
_HEADER = re.compile(r"^\s*(#include\b|using\s+namespace\b|import\s|use\s|from\s+\S+\s+import\s)")


def prompt_header(prompt: str, code: str) -> str:
    """The prompt's include / import lines a whole program lacks. The harness relies on them (C++'s ``assert``
    comes from the prompt's ``#include<assert.h>``), so a chat answer that defines only the function gets them,
    as a continuation does; a line the program already has is not repeated (Rust refuses a duplicate ``use``)."""
    have = {ln.strip() for ln in code.splitlines()}
    return "".join(ln + "\n" for ln in prompt.splitlines() if _HEADER.match(ln) and ln.strip() not in have)


def job(row: dict, completion: str, program_id: str | None = None, *, full: bool | None = None, **kwargs) -> Job:
    """A sandbox job: the candidate's program and the row's harness as its one ``harness`` test."""
    return Job(program_id or str(row.get("name") or row.get("task_id")), program(row, completion, full=full),
               [TestSpec("tests", "harness", code=row["tests"])], language=language_of(row), **kwargs)


def is_row(data) -> bool:
    """A row in MultiPL-E's published layout (``prompt``, ``tests`` as harness source, ``stop_tokens``)."""
    return (isinstance(data, dict) and isinstance(data.get("tests"), str) and isinstance(data.get("prompt"), str)
            and isinstance(data.get("stop_tokens"), list))


def harness_row(gt) -> dict | None:
    """The MultiPL-E row a ground truth stands for, or None when it is not a harness ground truth: a MultiPL-E
    row itself, or a factory ground truth (``{"tests": [...], "language"}``) whose only test is of kind
    ``harness`` (its optional ``prompt`` / ``stop_tokens`` place a continuation; without a prompt the completion
    is a whole program). A harness mixed with other tests is the dataset's fault (ValueError)."""
    if is_row(gt):
        return gt
    tests = gt.get("tests") if isinstance(gt, dict) else None
    if not isinstance(tests, list) or not any(isinstance(t, dict) and t.get("kind") == "harness" for t in tests):
        return None
    if len(tests) != 1:
        raise ValueError("a harness test is compiled together with the program: it must be the only test")
    lang = LANGUAGES.get(str(gt.get("language") or "python").strip().lower())
    if lang is None:
        raise ValueError(f"harness ground truth: language {gt.get('language')!r} is not one of "
                         f"{', '.join(sorted(LANGUAGES))}")
    stops = gt.get("stop_tokens")
    return {"name": gt.get("entry_point") or "harness", "language": lang, "prompt": gt.get("prompt") or "",
            "tests": tests[0].get("code") or "",
            "stop_tokens": stops if isinstance(stops, list) else STOP_TOKENS[lang]}


def candidate(row: dict, completion: str) -> str:
    """The candidate's program for ``row`` (:func:`harness_row`): :func:`program`, except that without a prompt
    the completion can only be a whole program."""
    return program(row, completion, full=True if not row.get("prompt") else None)


def lake_row(problem: dict) -> dict | None:
    """The MultiPL-E row of a lake problem (``silver.problems``: test_format, language, starter_code, metadata as
    `ingest multipl-e` writes them), or None for a problem of another test format."""
    if problem.get("test_format") != "harness":
        return None
    import json
    meta = problem.get("metadata")
    meta = json.loads(meta) if isinstance(meta, str) else (meta or {})
    lang = problem.get("language") or "python"
    stops = (meta.get("multipl_e") or {}).get("stop_tokens")
    return {"name": problem.get("source_id"), "language": lang, "prompt": problem.get("starter_code") or "",
            "stop_tokens": stops if isinstance(stops, list) else STOP_TOKENS.get(LANGUAGES.get(lang, lang), [])}


def sample_code(row: dict, rec: dict) -> str | None:
    """The program of an ``execute --samples`` record for a harness problem: ``solution`` is a whole program,
    ``completion`` a continuation of the prompt (or a fenced answer), both built as MultiPL-E builds them."""
    if isinstance(rec.get("solution"), str):
        return program(row, rec["solution"], full=True)
    if isinstance(rec.get("completion"), str):
        return candidate(row, rec["completion"])
    return None


def lake_rows(con, source: str | None = None) -> dict[str, dict]:
    """{problem_id: :func:`lake_row`} of the lake's harness problems (of ``source`` when given)."""
    keys = ("problem_id", "source_id", "test_format", "language", "starter_code", "metadata")
    rows = con.execute(f"SELECT {', '.join(keys)} FROM silver.problems WHERE test_format = 'harness'"
                       + (" AND source = ?" if source else ""), [source] if source else []).fetchall()
    return {r[0]: lake_row(dict(zip(keys, r))) for r in rows}


def by_language(matches: list, harness: dict[str, dict], rec: dict) -> list:
    """The problems (``(problem_id, ...)`` tuples) a sample record's ``language`` picks among several with its
    name: MultiPL-E names a problem the same in every language (its completion records carry ``language``)."""
    lang = LANGUAGES.get(str(rec.get("language") or "").strip().lower())
    if lang is None:
        return matches
    return [m for m in matches if (harness.get(m[0]) or {}).get("language") == lang] or matches
