"""Read input files record by record, locating every record by (file, line) for error messages."""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Iterator

from factory.errors import InputError

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet")


def files_sha256(paths: list[Path]) -> str:
    """One digest over the names and bytes of all input files of a source."""
    digest = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0")
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else open(path, encoding="utf-8")


def read_records(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield (line, record): 1-based line for JSONL, 1-based element for JSON arrays/dicts, row for Parquet."""
    name = path.name
    if not path.is_file():
        raise InputError("file not found", file=str(path))
    if path.stat().st_size == 0:
        raise InputError("empty file", file=str(path))
    if name.endswith(".parquet"):
        yield from _read_parquet(path)
    elif name.endswith((".jsonl", ".jsonl.gz")):
        yield from read_jsonl(path)
    elif name.endswith((".json", ".json.gz")):
        yield from _read_json(path)
    else:
        raise InputError(f"unsupported file type (expected one of {', '.join(SUFFIXES)})", file=str(path))


def read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """(line, record) of a JSONL file, line by line: only one line's text and record are alive at a time."""
    seen = 0
    with _open_text(path) as fh:
        for lineno, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", file=str(path),
                                 line=lineno) from None
            del text   # a MB-sized line is not kept beside its record
            if not isinstance(record, dict):
                raise InputError(f"expected a JSON object, got {type(record).__name__}", file=str(path), line=lineno)
            seen += 1
            yield lineno, record
    if not seen:
        raise InputError("no records (file holds only blank lines)", file=str(path))


def _read_json(path: Path) -> Iterator[tuple[int, dict]]:
    with _open_text(path) as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg})", file=str(path), line=exc.lineno) from None
    if isinstance(data, dict):
        # {id: record} (e.g. BigCodeBench-Hard) or a single wrapper {"data": [...]}
        items = list(data.values())
        if len(items) == 1 and isinstance(items[0], list):
            items = items[0]
    elif isinstance(data, list):
        items = data
    else:
        raise InputError("expected a JSON array of records", file=str(path))
    if not items:
        raise InputError("no records", file=str(path))
    for index, record in enumerate(items, start=1):
        if not isinstance(record, dict):
            raise InputError(f"record {index} is a {type(record).__name__}, expected an object",
                             file=str(path), line=index)
        yield index, record


def _read_parquet(path: Path) -> Iterator[tuple[int, dict]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise InputError(f"unreadable Parquet file ({exc})", file=str(path)) from None
    if table.num_rows == 0:
        raise InputError("no rows", file=str(path))
    yield from enumerate(table.to_pylist(), start=1)
