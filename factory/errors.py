"""Errors that carry enough context (file, line, field) for a user to fix their input."""
from __future__ import annotations

import difflib


class FactoryError(Exception):
    """A user-facing error: the CLI prints it without a traceback and exits non-zero."""


class InputError(FactoryError):
    """Bad input data, located by file, line and field."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None):
        self.file, self.line, self.field = file, line, field
        where = ":".join(str(x) for x in (file, line) if x is not None)
        super().__init__(f"{where}: " * bool(where) + message + (f" (field {field!r})" if field else ""))


class Interrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM reached a stage: what was committed before it, and how to resume (the CLI prints it)."""


def interrupt_in(exc: BaseException | None) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt exc is, or was raised because of (DuckDB turns one that lands inside a query into
    ``RuntimeError: Query interrupted`` with the KeyboardInterrupt as its cause); None when there is none."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


# The CLI's first SIGINT / SIGTERM, noted here: a library may swallow its KeyboardInterrupt (DuckDB's "Query
# interrupted" taken for an ordinary failure), so the one commit path (factory.lake.commit.stage_run) raises it
# again before it begins or commits.
_pending_interrupt: str | None = None


def note_interrupt(signal_name: str | None) -> None:
    """Record (a name) or clear (None) the stop request of the process's first SIGINT / SIGTERM."""
    global _pending_interrupt
    _pending_interrupt = signal_name


def raise_pending_interrupt() -> None:
    """KeyboardInterrupt when a stop was requested and not yet acted on (it is consumed: raised once)."""
    global _pending_interrupt
    name, _pending_interrupt = _pending_interrupt, None
    if name is not None:
        raise KeyboardInterrupt(name)


def reraise_if_interrupt(exc: BaseException) -> None:
    """In a broad ``except`` that falls back: a Ctrl-C / SIGTERM that DuckDB wrapped is not a failure to fall back
    from, it is re-raised."""
    if (interrupt := interrupt_in(exc)) is not None:
        raise interrupt


def reraise_as_interrupted(exc: BaseException, describe) -> None:
    """In a stage's ``except BaseException`` block: when exc comes from Ctrl-C / SIGTERM, raise Interrupted with
    ``describe(signal name)`` (what was committed, how to resume); otherwise return so the caller re-raises."""
    if (interrupt := interrupt_in(exc)) is not None:
        raise Interrupted(describe(str(interrupt) or "SIGINT")) from None


# "unknown X" errors: the known names, and the closest one to a typo
def closest(name: str, known, n: int = 1) -> list[str]:
    """The known names closest to ``name`` (difflib ratio >= 0.6, or one that differs only in case / '-' vs '_');
    empty when none is close."""
    known = [str(k) for k in known]
    norm = {k.lower().replace("_", "-"): k for k in known}
    key = str(name).lower().replace("_", "-")
    if key in norm and norm[key] != name:
        return [norm[key]]
    return difflib.get_close_matches(str(name), known, n=n, cutoff=0.6)


def did_you_mean(name: str, known) -> str:
    """'; did you mean 'x'?' for the closest known name, or '' when none is close."""
    return f"; did you mean {match[0]!r}?" if (match := closest(name, known)) else ""


def unknown(kind: str, name: str, known, *, none_hint: str = "") -> str:
    """The message of an "unknown X" error: the name, the closest known one, and every known one."""
    known = sorted({str(k) for k in known})
    listed = ", ".join(known) if known else f"none yet{f' ({none_hint})' if none_hint else ''}"
    return f"unknown {kind} {name!r}{did_you_mean(name, known)} (known: {listed})"
