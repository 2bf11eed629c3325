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
