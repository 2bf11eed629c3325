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
        yield from parquet_records(path, batch_bytes)
    elif name.endswith((".jsonl", ".jsonl.gz")):
        from factory.ingest.readers import read_jsonl   # line by line already
        yield from read_jsonl(path)
    elif name.endswith((".json", ".json.gz")):
        from factory.ingest.readers import read_records   # a JSON array has to be parsed whole
        yield from read_records(path)
    else:
        raise InputError("unsupported file type in a Hub dataset (expected .parquet, .jsonl, .json)", file=str(path))


def parquet_records(path: Path, batch_bytes: int = BATCH_BYTES, row_groups: range | None = None
                    ) -> Iterator[tuple[int, dict]]:
    """Rows of a Parquet file (of ``row_groups`` only, when given), a row group at a time (in byte-bounded batches
    for large row groups; the next batch read on a thread meanwhile). ``pre_buffer=False`` + ``buffer_size``
    stream a column chunk instead of caching it; columns are converted one at a time, each Arrow column freed before
    the next, so the Arrow and Python copies of a big value overlap only inside one column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    except Exception as exc:   # pyarrow raises several types for corrupt files
        raise InputError(f"unreadable Parquet file ({exc})", file=str(path)) from None
    from factory.streaming.background import read_ahead

    pool = pa.default_memory_pool()
    row = sum(pf.metadata.row_group(rg).num_rows for rg in range(row_groups.start)) if row_groups else 0
    for item in read_ahead(_row_group_batches(pf, path, batch_bytes, row_groups), depth=1, name="parquet-read"):
        rg, batch = item
        item.clear()   # the read-ahead thread's reference too: the batch is freed column by column below
        try:
            names, columns = batch.schema.names, list(batch.columns)
            del batch
            pool.release_unused()   # the reader's page buffers: back to the OS before Python allocates
            values = []
            for i in range(len(columns)):
                values.append(columns[i].to_pylist())
                columns[i] = None   # this column's Arrow buffers are freed before the next is converted
                pool.release_unused()
        except (OSError, ValueError) as exc:
            raise InputError(f"unreadable Parquet row group {rg} ({exc})", file=str(path), line=row + 1) from None
        records = [dict(zip(names, r)) for r in zip(*values)]
        del values
        records.reverse()   # pop from the end: a yielded record is the only reference left
        while records:
            row += 1
            yield row, records.pop()
    if row == 0 and row_groups is None:
        raise InputError("no rows", file=str(path))


def _row_group_batches(pf, path: Path, batch_bytes: int, row_groups: range | None):
    """[row group, batch] of every row group in ``row_groups`` (all by default; read on the read-ahead thread:
    decompression and decoding release the GIL, so they overlap the conversion of the batch before)."""
    meta, first = pf.metadata, 0
    for rg in range(meta.num_row_groups):
        info = meta.row_group(rg)
        if info.num_rows and (row_groups is None or rg in row_groups):
            per_row = max(1, info.total_byte_size // info.num_rows)
            batch_rows = max(1, min(4096, batch_bytes // per_row))
            try:
                for batch in _batches(pf, rg, batch_rows, info.num_rows):
                    yield [rg, batch]
                    del batch
            except (OSError, ValueError) as exc:
                raise InputError(f"unreadable Parquet row group {rg} ({exc})", file=str(path),
                                 line=first + 1) from None
        first += info.num_rows


def _batches(pf, rg: int, batch_rows: int, num_rows: int):
    """Row group ``rg`` in batches of ``batch_rows``; read whole when it fits one (its reader and buffers are gone
    once read). Nothing here keeps a yielded batch alive."""
    if batch_rows >= num_rows:
        yield pf.read_row_group(rg, use_threads=False)
        return
    yield from pf.iter_batches(batch_size=batch_rows, row_groups=[rg], use_threads=False)
