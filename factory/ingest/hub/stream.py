"""Bounded-memory record readers for Hub files: Parquet row group by row group (in byte-bounded batches), JSONL
line by line. Each yields (row, record) with a 1-based row number, like :func:`factory.ingest.readers.read_records`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from factory.errors import InputError

BATCH_BYTES = 8 << 20   # Python objects of at most ~this many (uncompressed) bytes are alive at once


def iter_records(path: Path, batch_bytes: int = BATCH_BYTES) -> Iterator[tuple[int, dict]]:
    name = path.name
    if not path.is_file():
        raise InputError("file not found", file=str(path))
    if name.endswith(".parquet"):
        yield from _parquet(path, batch_bytes)
    elif name.endswith((".jsonl", ".jsonl.gz")):
        from factory.ingest.readers import read_jsonl   # line by line already
        yield from read_jsonl(path)
    elif name.endswith((".json", ".json.gz")):
        from factory.ingest.readers import read_records   # a JSON array has to be parsed whole
        yield from read_records(path)
    else:
        raise InputError("unsupported file type in a Hub dataset (expected .parquet, .jsonl, .json)", file=str(path))


def _parquet(path: Path, batch_bytes: int) -> Iterator[tuple[int, dict]]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:   # pyarrow raises several types for corrupt files
        raise InputError(f"unreadable Parquet file ({exc})", file=str(path)) from None
    meta = pf.metadata
    row = 0
    for rg in range(meta.num_row_groups):
        info = meta.row_group(rg)
        if info.num_rows == 0:
            continue
        per_row = max(1, info.total_byte_size // info.num_rows)
        batch_rows = max(1, min(4096, batch_bytes // per_row))
        try:
            batches = pf.iter_batches(batch_size=batch_rows, row_groups=[rg], use_threads=False)
            for batch in batches:
                records = batch.to_pylist()
                del batch
                records.reverse()   # pop from the end: a yielded record is the only reference left
                while records:
                    row += 1
                    yield row, records.pop()
        except (OSError, ValueError) as exc:
            raise InputError(f"unreadable Parquet row group {rg} ({exc})", file=str(path), line=row + 1) from None
    if row == 0:
        raise InputError("no rows", file=str(path))
