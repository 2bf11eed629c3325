"""Checker programs a dataset ships as a script that reads files (open-r1/codeforces ``generated_checker``), turned
into the factory's checker contract (``check(input, expected, actual)``, :mod:`factory.sandbox.checker`).

open-r1's judge runs such a checker as ``python checker.py input.txt correct_output.txt solution_output.txt``
(the files hold the test's input, the jury's answer and the program's output, in the working directory) and
accepts the program's output when the checker exits cleanly and its stdout, stripped, is ``1`` (open-r1
``cf_scoring.score_submission``). :func:`script_checker` wraps the script so it runs the same way inside the
sandbox's checker job - never in the trusted process: the wrapper writes the three files into a fresh temporary
folder, runs the script there as ``__main__`` with that argv, and returns (accepted, what it printed). An exception,
a non-zero exit or any other output is a reject (the checker contract then records ``WrongAnswer`` or
``CheckerError``).
"""
from __future__ import annotations

import ast

FILES = ("input.txt", "correct_output.txt", "solution_output.txt")
ORIGIN = "dataset"   # silver.checkers.origin of a checker the dataset ships with the problem

_TEMPLATE = '''\
# A dataset's checker script (run as: python checker.py {files}; accepts when it prints 1),
# wrapped into the factory checker contract by factory.judging.file_checker.
SCRIPT = {script!r}


def check(input, expected, actual):
    import contextlib
    import io
    import os
    import shutil
    import sys
    import tempfile

    work = tempfile.mkdtemp(prefix="checker-")
    names = {names!r}
    for name, text in zip(names, (input, expected, actual)):
        with open(os.path.join(work, name), "w", encoding="utf-8") as f:
            f.write(text or "")
    cwd, argv, out, status = os.getcwd(), sys.argv, io.StringIO(), 0
    try:
        os.chdir(work)
        sys.argv = ["checker.py", *names]
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(SCRIPT, "checker.py", "exec"), {{"__name__": "__main__", "__file__": "checker.py"}})
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.chdir(cwd)
        sys.argv = argv
        shutil.rmtree(work, ignore_errors=True)
    printed = out.getvalue()
    accepted = status == 0 and printed.strip() == "1"
    return accepted, ("exit status %d, printed %r" % (status, printed[-200:]))
'''


def script_checker(script: str) -> str:
    """The factory checker source (defining ``check(input, expected, actual)``) that runs ``script`` as open-r1's
    judge does (above); a source that already is that contract (and runs no ``__main__`` block) is returned as it
    is. Raises ValueError for a script that is not Python source."""
    if not isinstance(script, str) or not script.strip():
        raise ValueError("a checker script must be non-empty Python source")
    try:
        tree = ast.parse(script, "checker.py")
    except SyntaxError as exc:   # the dataset's fault: name the line
        raise ValueError(f"checker script does not parse: {exc.msg} (line {exc.lineno})") from None
    defines = any(isinstance(n, ast.FunctionDef) and n.name == "check" and len(n.args.args) == 3 for n in tree.body)
    main = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    if defines and not main:   # already the factory contract: check(input, expected, actual), no __main__ block
        return script
    return _TEMPLATE.format(files=" ".join(FILES), script=script, names=FILES)
