"""Errors that carry enough context (file, line, field) for a user to fix their input."""
from __future__ import annotations


class FactoryError(Exception):
    """A user-facing error: the CLI prints it without a traceback and exits non-zero."""


class InputError(FactoryError):
    """Bad input data, located by file, line and field."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None):
        self.file, self.line, self.field = file, line, field
        where = ":".join(str(x) for x in (file, line) if x is not None)
        prefix = f"{where}: " if where else ""
        suffix = f" (field {field!r})" if field else ""
        super().__init__(f"{prefix}{message}{suffix}")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM reached a stage: what was committed before it, and how to resume (the CLI prints it)."""


def caused_by_interrupt(exc: BaseException) -> bool:
    """True when exc is, or was raised because of, a KeyboardInterrupt (DuckDB turns one that lands inside a
    query into ``RuntimeError: Query interrupted`` with the KeyboardInterrupt as its cause)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
