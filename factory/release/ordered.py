"""A view's rows in key order with bounded memory (DuckDB's `ORDER BY` holds every row: rows can carry MB of tests):
an external merge sort of Arrow record batches.

The view streams from DuckDB unordered (:func:`_stream`: a row group of the lake's files at a time). Rows
collect into runs of at most :data:`RUN_BYTES`; a run is sorted by key with Arrow and, when the view does not fit
in one run, written to an uncompressed Arrow IPC file in the connection's spill folder (DuckDB's temp_directory)
on a background thread while the next run is read; the runs are then merged a batch of each at a time. Memory
holds two runs during the read and one spill batch per run during the merge, whatever the view's size; the spill
folder is removed when the rows are consumed.

The order is DuckDB's `ORDER BY k1, k2, ...` (ascending, NULLs last): strings compare by bytes (UTF-8 byte order
is code point order, which Python's comparison uses too), integers, booleans, dates and timestamps by value.
:func:`sortable` says whether a key's types are among those; other keys keep DuckDB's ORDER BY.
"""
from __future__ import annotations

import contextlib
import heapq
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from factory.errors import FactoryError, reraise_if_interrupt
from factory.lake.connection import LAKE_ALIAS
from factory.release.files import row_bytes

RUN_BYTES = 128 << 20        # rows per sorted run, by their Arrow size ($FACTORY_RELEASE_RUN_MB overrides)
RUN_ENV = "FACTORY_RELEASE_RUN_MB"
SPILL_BATCH_BYTES = 1 << 20  # rows per batch of a spilled run (one batch per run is in memory while merging)
OUT_BATCH_BYTES = 4 << 20    # rows per merged output batch
OUT_BATCH_ROWS = 4_096


def sortable(types: list[str]) -> bool:
    """Whether key columns of these DuckDB types sort here exactly as DuckDB's ORDER BY sorts them."""
    ok = ("VARCHAR", "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT",
          "BOOLEAN", "DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE")
    return bool(types) and all(t in ok for t in types)


def _cuts(sizes, limit: int, max_rows: int) -> Iterator[tuple[int, int]]:
    """(start, stop) pieces of consecutive rows, each under ``limit`` bytes and ``max_rows`` rows (or one row)."""
    start, acc = 0, 0
    for i, s in enumerate(sizes):
        s = int(s)
        if i > start and (acc + s > limit or i - start >= max_rows):
            yield start, i
            start, acc = i, 0
        acc += s
    if start < len(sizes):
        yield start, len(sizes)


class _Spill:
    """Sorted runs as Arrow IPC stream files in a private folder under ``where`` (removed by :meth:`close`)."""

    def __init__(self, where: str | None):
        self.made = Path(where) if where and not Path(where).exists() else None   # removed again when empty
        if where:
            Path(where).mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix="factory-release-sort-", dir=where or None))
        self.runs: list[Path] = []

    def write(self, batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> None:
        path = self.dir / f"run-{len(self.runs):05d}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            for b in batches:
                writer.write_batch(b)
        self.runs.append(path)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.made is not None:
            with contextlib.suppress(OSError):  # DuckDB spilled there meanwhile: its folder, DuckDB removes it
                self.made.rmdir()
            self.made = None


def _sorted_pieces(table: pa.Table, key: list[str], limit: int, max_rows: int) -> Iterator[pa.RecordBatch]:
    """A run's rows in key order, a piece (<= limit bytes, or one row) at a time."""
    table = table.combine_chunks()
    order = pc.sort_indices(table, sort_keys=[(k, "ascending", "at_end") for k in key])
    sizes = row_bytes(table).take(order.to_numpy())
    for start, stop in _cuts(sizes, limit, max_rows):
        yield from table.take(order.slice(start, stop - start)).to_batches()


def _run_rows(path: Path, key: list[str]) -> Iterator[tuple[tuple, pa.RecordBatch, int, object]]:
    """(key, batch, row, the batch's row sizes) of a spilled run, in order; one batch in memory (read, not
    memory-mapped)."""
    with pa.OSFile(str(path), "rb") as source:
        for batch in pa.ipc.open_stream(source):
            cols = [batch.column(k).to_pylist() for k in key]
            sizes = row_bytes(batch)
            for i in range(batch.num_rows):
                yield tuple((c[i] is None, 0 if c[i] is None else c[i]) for c in cols), batch, i, sizes   # NULLs last


def _merged(runs: list[Path], key: list[str], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The runs merged in key order, as batches of <= OUT_BATCH_BYTES / OUT_BATCH_ROWS rows (or one row)."""
    pieces: list[pa.RecordBatch] = []
    rows = size = 0
    cur: list | None = None   # [batch, start, stop, sizes]: consecutive rows of one spill batch

    def flush_piece() -> None:
        nonlocal cur, rows, size
        if cur is not None:
            b, start, stop, sizes = cur
            pieces.append(b.slice(start, stop - start))
            rows += stop - start
            size += int(sizes[start:stop].sum())
            cur = None

    def out() -> pa.RecordBatch:
        nonlocal pieces, rows, size
        t = pa.Table.from_batches(pieces, schema=schema).combine_chunks()
        pieces, rows, size = [], 0, 0
        return t.to_batches()[0]

    for _k, batch, i, sizes in heapq.merge(*(_run_rows(p, key) for p in runs), key=lambda r: r[0]):
        if cur is not None and cur[0] is batch and cur[2] == i:
            cur[2] = i + 1
            continue
        flush_piece()
        if pieces and (rows >= OUT_BATCH_ROWS or size >= OUT_BATCH_BYTES):
            yield out()
        cur = [batch, i, i + 1, sizes]
    flush_piece()
    if pieces:
        yield out()


def run_bytes_setting() -> int:
    """Bytes of rows per sorted run: $FACTORY_RELEASE_RUN_MB (MiB, >= 1), else RUN_BYTES."""
    text = os.environ.get(RUN_ENV)
    if not text:
        return RUN_BYTES
    try:
        mb = int(text)
    except ValueError:
        mb = 0
    if mb < 1:
        raise FactoryError(f"${RUN_ENV}={text!r}: give the sort run size in MiB, an integer >= 1")
    return mb << 20


def ordered_batches(con: duckdb.DuckDBPyConnection, sql: str, key: list[str], *,
                    run_bytes: int | None = None, tables=()) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """(schema, batches) of ``sql``'s rows ordered by the ``key`` columns (ascending, NULLs last): the rows and
    order of ``sql ORDER BY key`` in DuckDB, by the merge sort above. Iterate the batches to the end, or close
    the iterator, so the spill folder is removed. ``tables``: the lake tables (schema.table) the rows come from,
    which size the streamed batches (:func:`stream_batch_rows`)."""
    from factory.streaming.background import WriteBehind

    run_bytes = run_bytes or run_bytes_setting()
    where = con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
    # the Arrow types DuckDB gives these rows (the stream's batches are cast to them when they differ)
    schema = con.execute(f"SELECT * FROM ({sql}) LIMIT 0").to_arrow_table().schema

    def gen() -> Iterator[pa.RecordBatch]:
        spill = _Spill(where)

        def spill_run(table: pa.Table) -> None:
            spill.write(_sorted_pieces(table, key, SPILL_BATCH_BYTES, OUT_BATCH_ROWS), schema)

        behind = WriteBehind(depth=1, name="release-sort-runs")
        try:
            buf: list[pa.RecordBatch] = []
            held = 0
            for batch in _stream(con, sql, schema, tables):
                buf.append(batch)
                held += batch.get_total_buffer_size()
                if held >= run_bytes:   # the previous run written before this one goes: two runs in memory
                    behind.drain()
                    behind.submit(spill_run, pa.Table.from_batches(buf, schema=schema))
                    buf, held = [], 0
            behind.close()
            table = pa.Table.from_batches(buf, schema=schema)
            buf = []
            if not spill.runs:   # fits in one run: sorted in memory
                yield from _sorted_pieces(table, key, OUT_BATCH_BYTES, OUT_BATCH_ROWS)
                return
            if table.num_rows:
                spill_run(table)
            del table
            yield from _merged(spill.runs, key, schema)
        finally:
            behind.abort()
            spill.close()

    return schema, gen()


STREAM_BATCH_BYTES = 8 << 20   # rows per Arrow batch asked of DuckDB: about this many bytes of the widest row
MAX_STREAM_ROWS = 1_024        # the rows' tables can hold, at most (DuckDB fills a batch across row groups)
UNKNOWN_WIDTH_ROWS = 16        # rows of no known table


def widest_stored_row(con: duckdb.DuckDBPyConnection, tables) -> int:
    """Bytes of the widest row the lake's ``tables`` (schema.table) can give, from their data files' footers
    alone (a row group's uncompressed bytes over its rows, the widest row group of each table, summed over the
    tables: a row a view joins from them is at most that); 0 where the files are not local."""
    import pyarrow.parquet as pq

    total = 0
    for name in tables:
        schema, table = name.split(".", 1)
        try:
            files = con.execute(f"SELECT data_file FROM ducklake_list_files('{LAKE_ALIAS}', ?, schema => ?)",
                                [table, schema]).fetchall()
        except Exception as exc:   # noqa: BLE001  (not a lake table, or a catalog without the function)
            reraise_if_interrupt(exc)
            continue
        widest = 0.0
        for (path,) in files:
            if "://" in str(path) or not Path(path).is_file():
                continue
            meta = pq.read_metadata(path)
            for i in range(meta.num_row_groups):
                rg = meta.row_group(i)
                widest = max(widest, rg.total_byte_size / max(rg.num_rows, 1))
        total += int(widest)
    return total


def stream_batch_rows(con: duckdb.DuckDBPyConnection, tables=()) -> int:
    """Rows per streamed batch: STREAM_BATCH_BYTES over :func:`widest_stored_row` of the tables the rows come
    from (1 for rows of MBs, MAX_STREAM_ROWS for narrow rows; UNKNOWN_WIDTH_ROWS when no table says). No row is
    read to find out: the first rows of a view need not be like the others, and reading them costs their bytes."""
    widest = widest_stored_row(con, tables)
    if widest <= 0:
        return UNKNOWN_WIDTH_ROWS
    return max(1, min(MAX_STREAM_ROWS, STREAM_BATCH_BYTES // widest))


# DuckDB settings while a view streams, restored after: its streaming buffer counts a chunk's fixed-size part, not
# its strings (the default reads far ahead of the reader); each file is read once (no file cache)
_STREAM_SETTINGS = {"threads": "1", "preserve_insertion_order": "false", "streaming_buffer_size": "1KB",
                    "enable_external_file_cache": "false"}


def _stream(con: duckdb.DuckDBPyConnection, sql: str, schema: pa.Schema, tables=()) -> Iterator[pa.RecordBatch]:
    """``sql``'s rows as DuckDB reads them (insertion order not kept) under :data:`_STREAM_SETTINGS`: the scan holds
    a row group of the lake's files at a time."""
    rows = stream_batch_rows(con, tables)
    names = ", ".join(f"'{n}'" for n in _STREAM_SETTINGS)
    keep = dict(con.execute(f"SELECT name, value FROM duckdb_settings() WHERE name IN ({names})").fetchall())
    for name, value in _STREAM_SETTINGS.items():
        con.execute(f"SET {name} = '{value}'")
    try:
        for b in con.execute(sql).to_arrow_reader(rows):
            if b.num_rows:
                yield b if b.schema == schema else pa.RecordBatch.from_arrays(b.columns, schema=schema) \
                    if b.schema.types == schema.types else b.cast(schema)
    finally:
        for name in _STREAM_SETTINGS:
            con.execute(f"SET {name} = '{keep[name]}'")
