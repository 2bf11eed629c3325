"""File-level helpers for releases: deterministic Parquet shards, hashes, read-only freezing."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from factory.lake.catalog import TableSpec

DEFAULT_SHARD_ROWS = 50_000
ROW_GROUP_ROWS = 2_000  # rows with MB-sized test blobs: keep row groups well under the HF viewer limit


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def schema_hash(columns: list[tuple[str, str]]) -> str:
    """sha256 over the ordered (column name, type) pairs."""
    return hashlib.sha256(json.dumps(columns, separators=(",", ":")).encode()).hexdigest()


def view_dirname(view: str) -> str:
    """`gold.rl_problems` -> `rl_problems` (the folder under data/ and the HF config name)."""
    return view.split(".", 1)[1]


def select_sql(con: duckdb.DuckDBPyConnection, spec: TableSpec, where: str | None = None,
               first: tuple[str, str] | None = None) -> tuple[str, list[tuple[str, str]]]:
    """SELECT of a catalog entry in primary-key order (JSON columns as VARCHAR) and its (column, type) list;
    ``where`` keeps only matching rows (a recipe's release of a table shared by every recipe). ``first`` (NAME,
    SQL expression) adds the expression as a last column NAME and orders by it before the primary key (one
    query for every split of a view; not in the returned column list)."""
    described = con.execute(f"DESCRIBE {spec.name}").fetchall()
    columns = [(r[0], "VARCHAR" if r[1] == "JSON" else r[1]) for r in described]
    cols = ", ".join(f'"{r[0]}"::VARCHAR AS "{r[0]}"' if r[1] == "JSON" else f'"{r[0]}"' for r in described)
    order = ", ".join(f'"{k}"' for k in spec.primary_key) or "ALL"
    if first:
        cols += f', {first[1]} AS "{first[0]}"'
        order = f'"{first[0]}", ' + (order if spec.primary_key else ", ".join(f'"{c}"' for c, _ in columns))
    filtered = f" WHERE {where}" if where else ""
    return f"SELECT {cols} FROM {spec.name}{filtered} ORDER BY {order}", columns


ROW_GROUP_BYTES = 16 << 20   # ... and at most this many bytes of values (a reader holds a row group: MB-sized rows)
READ_ROWS = 1_024            # rows per Arrow batch read from DuckDB


def row_bytes(table: pa.Table | pa.RecordBatch):
    """Bytes of each row: its string / binary values (what makes a row large), 8 per other value."""
    import numpy as np
    import pyarrow.compute as pc

    total = np.zeros(table.num_rows, dtype=np.int64)
    for column in table.columns:
        t = column.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            total += pc.fill_null(pc.binary_length(column), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            total += 8
    return total


class ShardWriter:
    """PREFIX-00000.parquet, ... of at most shard_rows rows each, from record batches fed in order.

    Row groups hold :data:`ROW_GROUP_ROWS` rows, fewer where their values pass :data:`ROW_GROUP_BYTES`: their
    boundaries depend only on the rows, not their batching, so the same rows give byte-identical files. Each row
    group is written once complete, on a background thread while the next is collected, so memory holds at most
    three row groups and the batch being fed. :meth:`close` returns the files ({path, rows}); a writer fed no rows
    leaves one empty file with the schema.
    """

    def __init__(self, out_dir: Path, schema: pa.Schema, shard_rows: int, prefix: str = "part"):
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir, self.schema, self.shard_rows, self.prefix = out_dir, schema, shard_rows, prefix
        self.files: list[dict] = []
        self._writer: pq.ParquetWriter | None = None
        self._group: list[pa.RecordBatch] = []
        self._group_rows = self._group_bytes = 0
        self._behind = None   # the background thread that encodes, compresses and writes (started at a first row)

    def _write_group(self) -> None:
        if not self._group_rows:
            return
        if self._writer is None:
            path = self.out_dir / f"{self.prefix}-{len(self.files):05d}.parquet"
            self._writer = pq.ParquetWriter(path, self.schema, compression="zstd", write_statistics=True)
            self.files.append({"path": path, "rows": 0})
        table = pa.Table.from_batches(self._group, schema=self.schema).combine_chunks()
        if self._behind is None:
            from factory.streaming.background import WriteBehind
            self._behind = WriteBehind(depth=2, name="release-shards")
        self._behind.submit(self._writer.write_table, table, ROW_GROUP_ROWS)
        self.files[-1]["rows"] += table.num_rows
        self._group, self._group_rows, self._group_bytes = [], 0, 0
        if self.files[-1]["rows"] >= self.shard_rows:
            self._behind.submit(self._writer.close)
            self._writer = None

    def write(self, batch: pa.RecordBatch) -> None:
        sizes = row_bytes(batch)
        start = 0
        for i in range(batch.num_rows):
            shard_left = self.shard_rows - (self.files[-1]["rows"] if self._writer is not None else 0)
            full = self._group_rows + (i - start) >= min(ROW_GROUP_ROWS, shard_left)
            heavy = self._group_bytes > 0 and self._group_bytes + int(sizes[i]) > ROW_GROUP_BYTES
            if full or heavy:
                if i > start:
                    self._group.append(batch.slice(start, i - start))
                    self._group_rows += i - start
                start = i
                self._write_group()
            self._group_bytes += int(sizes[i])
        if batch.num_rows > start:
            self._group.append(batch.slice(start))
            self._group_rows += batch.num_rows - start

    def close(self) -> list[dict]:
        try:
            self._write_group()
            if self._writer is not None:
                self._behind.submit(self._writer.close)
                self._writer = None
            if self._behind is not None:
                self._behind.close()   # every row group written, every file closed (or the first error)
        finally:
            self.abort()
        if not self.files:   # an empty view: one file with its schema
            path = self.out_dir / f"{self.prefix}-00000.parquet"
            pq.write_table(self.schema.empty_table(), path, compression="zstd", row_group_size=ROW_GROUP_ROWS,
                           write_statistics=True)
            self.files.append({"path": path, "rows": 0})
        return self.files

    def abort(self) -> None:
        """Stop the writes, close the open file (after an error: the caller removes the folder)."""
        if self._behind is not None:
            self._behind.abort()
            self._behind = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def freeze(root: Path) -> None:
    """Make every file read-only (0444) and every folder non-writable (0555)."""
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.chmod(Path(dirpath) / n, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    for dirpath, _dirs, _names in os.walk(root, topdown=False):
        os.chmod(dirpath, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def remove_tree(root: Path) -> None:
    """Delete a (possibly frozen) folder."""
    if not root.exists():
        return
    for dirpath, _dirs, _names in os.walk(root):
        os.chmod(dirpath, stat.S_IRWXU)
    shutil.rmtree(root)


def listed_files(root: Path) -> list[str]:
    """Every file under root as a POSIX path relative to root, sorted."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink())
