"""`factory` command line: the top-level parser; every subcommand comes from a stage module's ``register``
(factory/stages/, listed in STAGES), so this module holds no stage logic and nothing imports it."""
from __future__ import annotations

import argparse
import importlib
import sys

from factory.errors import FactoryError, Interrupted, caused_by_interrupt


def _add_lake(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lake", help="lake directory (default: $FACTORY_LAKE or ./lake)")


# every stage module (factory/stages/NAME) adds its subcommands, in the order `factory --help` lists them
STAGES = ("init", "ingest", "sql", "transform", "execute", "curate", "demo", "sample", "synth", "mutate", "train",
          "eval", "dedup", "decontam", "serve", "release", "export", "report", "augment", "checkers", "gentests",
          "dedup_embed", "judge_quality", "health", "recipe", "hidden_tests")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="factory", description="Dataset factory for code RL")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in STAGES:
        importlib.import_module(f"factory.stages.{name}").register(sub, _add_lake)
    return parser


def _stop_on_signals() -> None:
    """One SIGINT or SIGTERM raises KeyboardInterrupt in the main thread (stages roll back the transaction in
    flight and stop their sandbox workers at once); a second one while stopping only says so."""
    import signal

    def second(signum, frame):
        print("\nstill stopping: rolling back the batch in flight ...", file=sys.stderr, flush=True)

    def first(signum, frame):
        signal.signal(signal.SIGINT, second)
        signal.signal(signal.SIGTERM, second)
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:   # `factory ... &` in a script keeps ignoring Ctrl-C
            signal.signal(sig, first)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _stop_on_signals()
    try:
        args.fn(args)
    except FactoryError as exc:
        if caused_by_interrupt(exc):
            return _interrupted(args)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"\ninterrupted: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        return _interrupted(args)
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if caused_by_interrupt(exc):   # e.g. DuckDB's "Query interrupted"
            return _interrupted(args)
        raise
    return 0


def _interrupted(args) -> int:
    print(f"\ninterrupted: `factory {args.command}` stopped; the transaction in flight was rolled back "
          "(nothing half-written). Earlier commits stay; re-run the same command to go on.", file=sys.stderr)
    return 130


if __name__ == "__main__":
    sys.exit(main())
