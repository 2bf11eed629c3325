"""CLI start-up (#33): building the `factory` parser imports no heavy dependency, and the one-stage parser that
`factory CMD ...` uses parses and prints help exactly as the full parser does (timings: bench/cli_startup.py@3d3f87a)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO_ROOT

HEAVY = ("duckdb", "pyarrow", "numpy", "scipy", "polars", "pandas", "yaml", "tqdm", "torch", "transformers",
         "factory.sandbox.pool", "factory.sandbox.zygote")


def test_help_imports_nothing_heavy():
    probe = ("import contextlib, io, sys\nimport factory.cli as cli\n"
             "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
             "    cli.main(['--help'])\n"
             f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r}))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


# run in a child like the entry point (nothing in the repository imports factory.cli): every command's help and
# errors through the one-stage parser equal the full parser's, and only the command's own stage module loads
_COMPARE = """
import argparse, contextlib, io, json, sys
import factory.cli as cli

def subparsers(parser):
    return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))

def helps(parser, prefix=()):
    out = {" ".join(prefix): parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(helps(sub, prefix + (name,)))
    return out

def error(parser, argv):
    err = io.StringIO()
    with contextlib.suppress(SystemExit), contextlib.redirect_stderr(err):
        parser.parse_args(argv)
    return err.getvalue()

full = cli.build_parser()
commands = list(subparsers(full))
report = {"fast": [], "mismatch": [], "full_for": {}}
for command in commands:
    parser = cli.parser_for([command])
    if len(subparsers(parser)) < len(commands):
        report["fast"].append(command)
    own = lambda p: {k: v for k, v in helps(p).items() if k.split(" ")[0] == command}
    if own(parser) != own(full) or error(parser, [command, "--no-such-flag"]) != error(full, [command, "--no-such-flag"]):
        report["mismatch"].append(command)
for argv in (["--help"], [], ["judge_quality"], ["nosuch"], ["-x"]):
    report["full_for"][" ".join(argv)] = len(subparsers(cli.parser_for(argv))) == len(commands)
report["stages"] = len(cli.STAGES)
print(json.dumps(report))
"""


def test_one_stage_parser_matches_the_full_parser():
    out = subprocess.run([sys.executable, "-c", _COMPARE], cwd=REPO_ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "COLUMNS": "120"})
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["mismatch"] == []
    assert len(report["fast"]) >= report["stages"] - 1   # every command named after its module (not `shell`, ...)
    assert all(report["full_for"].values()), report["full_for"]


def test_a_command_loads_only_its_own_stage():
    probe = ("import contextlib, io, sys\nimport factory.cli as cli\n"
             "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
             "    cli.main(['sql', '--help'])\n"
             "print(sorted(m for m in sys.modules if m.startswith('factory.stages.')))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "['factory.stages.sql']"
