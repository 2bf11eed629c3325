"""File-level helpers for releases: deterministic Parquet shards, hashes, read-only freezing."""
from __future__ import annotations

import hashlib
import json
import os
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


def select_sql(con: duckdb.DuckDBPyConnection, spec: TableSpec,
               where: str | None = None) -> tuple[str, list[tuple[str, str]]]:
    """SELECT of a catalog entry in primary-key order (JSON columns as VARCHAR) and its (column, type) list;
    ``where`` keeps only matching rows (a recipe's release of a table shared by every recipe)."""
    described = con.execute(f"DESCRIBE {spec.name}").fetchall()
    columns = [(r[0], "VARCHAR" if r[1] == "JSON" else r[1]) for r in described]
    cols = ", ".join(f'"{c}"::VARCHAR AS "{c}"' if t == "JSON" else f'"{c}"' for c, t in
                     ((r[0], r[1]) for r in described))
    order = ", ".join(f'"{k}"' for k in spec.primary_key) or "ALL"
    filtered = f" WHERE {where}" if where else ""
    return f"SELECT {cols} FROM {spec.name}{filtered} ORDER BY {order}", columns


def write_shards(con: duckdb.DuckDBPyConnection, sql: str, out_dir: Path, shard_rows: int,
                 prefix: str = "part") -> list[dict]:
    """Stream a query into PREFIX-00000.parquet, ... of at most shard_rows rows each (always >= 1 file).

    Chunks are combined before writing so row-group boundaries depend only on the data, never on how
    DuckDB batched the result: the same rows give byte-identical files.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    reader = con.execute(sql).to_arrow_reader(min(shard_rows, 10_000))
    files: list[dict] = []
    pending: list[pa.RecordBatch] = []
    pending_rows = 0

    def flush(table: pa.Table) -> None:
        path = out_dir / f"{prefix}-{len(files):05d}.parquet"
        pq.write_table(table.combine_chunks(), path, compression="zstd", row_group_size=ROW_GROUP_ROWS,
                       write_statistics=True)
        files.append({"path": path, "rows": table.num_rows})

    for batch in reader:
        pending.append(batch)
        pending_rows += batch.num_rows
        while pending_rows >= shard_rows:
            table = pa.Table.from_batches(pending, schema=reader.schema)
            flush(table.slice(0, shard_rows))
            rest = table.slice(shard_rows)
            pending, pending_rows = rest.to_batches(), rest.num_rows
    if pending_rows or not files:
        flush(pa.Table.from_batches(pending, schema=reader.schema))
    return files


def freeze(root: Path) -> None:
    """Make every file read-only (0444) and every folder non-writable (0555)."""
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.chmod(Path(dirpath) / n, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    for dirpath, _dirs, _names in os.walk(root, topdown=False):
        os.chmod(dirpath, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def remove_tree(root: Path) -> None:
    """Delete a (possibly frozen) folder."""
    import shutil

    if not root.exists():
        return
    for dirpath, _dirs, _names in os.walk(root):
        os.chmod(dirpath, stat.S_IRWXU)
    shutil.rmtree(root)


def listed_files(root: Path) -> list[str]:
    """Every file under root as a POSIX path relative to root, sorted."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink())
