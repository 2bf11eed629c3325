"""`factory` command line: the top-level parser; every subcommand comes from a stage module's ``register``
(factory/stages/, listed in STAGES), so this module holds no stage logic and nothing imports it."""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys

from factory.errors import FactoryError, Interrupted, did_you_mean, interrupt_in, note_interrupt


def _add_lake(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lake", help="lake directory (default: $FACTORY_LAKE, else `lake:` in "
                                  "~/.config/factory/config.yaml; never the current directory)")


# every stage module (factory/stages/NAME) adds its subcommands, in the order `factory --help` lists them
STAGES = ("init", "ingest", "sql", "transform", "execute", "curate", "demo", "sample", "synth", "mutate", "train",
          "eval", "dedup", "decontam", "serve", "release", "export", "report", "augment", "checkers", "gentests",
          "dedup_embed", "judge_quality", "health", "recipe", "hidden_tests", "interpreter_rollouts")


# `factory --help` lists the commands by purpose, in this order (every command of STAGES is in one group; a test
# checks it)
GROUPS = {
    "start": ("demo", "init", "status"),
    "build (ingest, judge, curate)": ("ingest", "dedup", "dedup-embed", "decontam", "execute", "checkers",
                                      "calibrate", "mutate", "augment", "suite-reduce", "gentests", "hidden-tests",
                                      "sample", "synth", "judge-quality", "transform", "curate", "health", "recipe"),
    "ship (releases, trainer formats)": ("release", "export"),
    "inspect": ("sql", "shell", "report"),
    "train and evaluate": ("train", "eval", "interpreter-rollouts"),
    "serve": ("serve", "sandbox-libs"),
}


class _Parser(argparse.ArgumentParser):
    """argparse, plus the closest valid name on an invalid choice (a mistyped command or option value)."""

    def error(self, message):
        if m := re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message):
            choices = re.findall(r"'([^']*)'", m.group(2)) or [c.strip() for c in m.group(2).split(",")]
            message += did_you_mean(m.group(1), choices)
        super().error(message)


# commands registered by a stage module of another name (`factory status` must not import every stage: 0.2 s)
COMMAND_MODULES = {"status": "sql", "shell": "sql", "suite_reduce": "augment", "calibrate": "checkers",
                   "sandbox_libs": "serve"}


class _OneStageParser(_Parser):
    """The top-level parser of a one-stage parse (:func:`parser_for`): its own errors (unrecognized arguments)
    are reported by the full parser, whose usage lists every command."""

    def error(self, message):
        build_parser().error(message)


def _top_parser(cls=_Parser) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = cls(prog="factory", description="Dataset factory for code RL")
    return parser, parser.add_subparsers(dest="command", required=True, parser_class=_Parser)


def build_parser() -> argparse.ArgumentParser:
    parser, sub = _top_parser()
    for name in STAGES:
        importlib.import_module(f"factory.stages.{name}").register(sub, _add_lake)
    _group_commands(parser, sub)
    return parser


def _group_commands(parser: argparse.ArgumentParser, sub: argparse._SubParsersAction) -> None:
    """The help's command list, grouped by purpose (GROUPS); commands no group names are listed under 'other'."""
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    grouped = {c for cmds in GROUPS.values() for c in cmds}
    rest = tuple(c for c in helps if c not in grouped)
    groups = {**GROUPS, "other": rest} if rest else GROUPS
    width = max(map(len, helps)) + 2
    lines = [line for title, cmds in groups.items()
             for line in (f"{title}:", *(f"  {c:<{width}}{helps[c]}" for c in cmds if c in helps), "")]
    parser.epilog = "\n".join(lines) + "`factory COMMAND --help` for a command's options; --lake DIR on every " \
                                       "command that touches a lake."
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    sub.help = argparse.SUPPRESS
    sub.metavar = "COMMAND"
    parser.usage = "factory [-h] COMMAND ..."


def parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser for one command line: where the command is named after its stage module (`sql`, `execute`,
    `dedup-embed`, ...), that module alone registers, so `factory sql ...` imports no other stage; the command's
    own parsing, help and errors are the same as in the full parser. Anything else (`--help`, `shell`, a typo)
    gets the full parser."""
    name = argv[0].replace("-", "_") if argv and not argv[0].startswith("-") else None
    name = COMMAND_MODULES.get(name, name)
    if name in STAGES:
        parser, sub = _top_parser(_OneStageParser)
        importlib.import_module(f"factory.stages.{name}").register(sub, _add_lake)
        if argv[0] in sub.choices:
            return parser
    return build_parser()


def _stop_on_signals() -> None:
    """One SIGINT or SIGTERM raises KeyboardInterrupt in the main thread (stages roll back the transaction in
    flight and stop their sandbox workers at once); a second one while stopping only says so."""
    import signal

    def second(signum, frame):
        print("\nstill stopping: rolling back the batch in flight ...", file=sys.stderr, flush=True)

    def first(signum, frame):
        signal.signal(signal.SIGINT, second)
        signal.signal(signal.SIGTERM, second)
        note_interrupt(signal.Signals(signum).name)   # raised again at the next commit if a library swallows it
        raise KeyboardInterrupt(signal.Signals(signum).name)

    note_interrupt(None)

    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:   # `factory ... &` in a script keeps ignoring Ctrl-C
            signal.signal(sig, first)


@contextlib.contextmanager
def _lake_for_the_run(lake: str | None):
    """--lake holds for everything the command touches (its releases, the processes it starts): it stands in
    for $FACTORY_LAKE while the command runs."""
    saved = os.environ.get("FACTORY_LAKE")
    if lake:
        os.environ["FACTORY_LAKE"] = os.path.abspath(os.path.expanduser(lake))
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("FACTORY_LAKE", None)
        else:
            os.environ["FACTORY_LAKE"] = saved


def _check_sources(args) -> None:
    """A stage's --source names sources the lake holds: a typo is an error listing them, never an empty selection
    (`ingest` takes a dataset kind instead, checked by ingest; `execute` checks them on its own read of the lake)."""
    sources = getattr(args, "source", None)
    if sources and args.command not in ("ingest", "execute"):
        from factory.lake.query import check_sources
        check_sources(getattr(args, "lake", None), sources)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not sys.stderr.isatty():
        # progress bars of the libraries a stage calls (transformers' GGUF loading, datasets, hub downloads) are
        # `\r`-joined lines in a log; factory's own progress prints plain lines there (factory.progress)
        os.environ.setdefault("TQDM_DISABLE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    args = parser_for(argv).parse_args(argv)
    _stop_on_signals()
    try:
        with _lake_for_the_run(getattr(args, "lake", None)):
            _check_sources(args)
            args.fn(args)
    except Interrupted as exc:
        print(f"\ninterrupted: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        return _interrupted(args)
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if interrupt_in(exc) is not None:   # e.g. DuckDB's "Query interrupted"
            return _interrupted(args)
        if isinstance(exc, FactoryError):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise
    return 0


def _interrupted(args) -> int:
    print(f"\ninterrupted: `factory {args.command}` stopped; the transaction in flight was rolled back "
          "(nothing half-written). Earlier commits stay; re-run the same command to go on.", file=sys.stderr)
    return 130


if __name__ == "__main__":
    sys.exit(main())
