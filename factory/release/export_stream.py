"""Streamed exports (verl, trl-grpo, openrlhf, trl): a release's rows read a Parquet batch at a time in primary-key
order and written a row group at a time, so memory holds a few batches (read ahead on a thread) and at most three
output row groups (written behind on another), never the view.

A release writes each split of a view (``train-*``, ``test-*``) as shards in primary-key order
(:func:`factory.release.ordered.ordered_batches`), so merging those sorted streams gives the rows and order of
``SELECT * ... ORDER BY <primary key>`` over every file: what :func:`factory.release.export.view_rows` reads.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from factory.release.create import ANSWER_VIEWS
from factory.streaming.background import read_ahead

READ_ROWS = 16                 # rows per batch read from a release file (rows can carry MB of tests)
WRITE_ROWS = 10_000            # rows per output row group ...
WRITE_BYTES = 16 << 20         # ... or fewer, once their text passes this many bytes
STREAMED = ("verl", "trl-grpo", "openrlhf", "trl")
NOT_STREAMED_VIEWS = ANSWER_VIEWS   # final-answer exports build their rows whole


def iter_view(path: Path, manifest: dict, view: str, batch_rows: int = READ_ROWS) -> Iterator[dict] | None:
    """A released view's rows (dicts) in primary-key order, streamed; None when the release lacks the view."""
    info = manifest["views"].get(view)
    if info is None:
        return None
    key = info["primary_key"]
    runs: dict[str, list[str]] = {}
    for f in info["files"]:   # shards of one split, in write order: each split is one sorted run
        runs.setdefault(Path(f["path"]).name.rsplit("-", 1)[0], []).append(f["path"])

    def run(files: list[str]) -> Iterator[dict]:
        for rel in sorted(files):   # each file's batches read and decompressed a few ahead, on a thread
            for batch in read_ahead(iter_batches(path / rel, batch_rows), depth=4, name="export-read"):
                yield from batch.to_pylist()

    streams = [run(files) for _, files in sorted(runs.items())]
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=lambda r: tuple(r[k] for k in key))


def iter_batches(file: Path, batch_rows: int = READ_ROWS) -> Iterator[pa.RecordBatch]:
    """A Parquet file's batches, one row group at a time and without reader threads (pyarrow's reader otherwise
    reads ahead: 2.5x the memory on MB-sized rows)."""
    pf = pq.ParquetFile(file)
    for i in range(pf.num_row_groups):
        yield from pf.iter_batches(batch_size=batch_rows, row_groups=[i], use_threads=False)

def streamable(manifest: dict, fmt: str) -> bool:
    """Whether :func:`write_streamed` serves this release and format (every view it reads has a primary key)."""
    views = manifest["views"]
    if fmt not in STREAMED or set(NOT_STREAMED_VIEWS) & set(views):
        return False
    problems = "gold.rl_problems" if "gold.rl_problems" in views else "gold.recipe_problems"
    used = {"trl": ["gold.rm_pairs"], "verl": [problems], "trl-grpo": [problems],
            "openrlhf": [v for v in (problems, "gold.rm_pairs") if v in views]}[fmt]
    return bool(used) and all(v in views and views[v].get("primary_key") for v in used)


def _text_bytes(row: dict) -> int:
    return sum(len(v) for v in row.values() if isinstance(v, str)) + 64


class _Sink:
    """One ParquetWriter per output file, opened at its first row (no zero-row files); rows buffered up to a row
    group (WRITE_ROWS rows or WRITE_BYTES of text)."""

    def __init__(self, staging: Path, schema_for: Callable[[str], pa.Schema]):
        from factory.streaming.background import WriteBehind

        self.staging, self.schema_for = staging, schema_for
        self.behind = WriteBehind(depth=2, name="export-write")   # encoding + zstd off the main thread
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.pending: dict[str, list] = {}
        self.bytes: dict[str, int] = {}
        self.rows: dict[str, int] = {}

    def add(self, rel: str, row: dict, size: int) -> None:
        self.pending.setdefault(rel, []).append(row)
        self.bytes[rel] = self.bytes.get(rel, 0) + size
        self.rows[rel] = self.rows.get(rel, 0) + 1
        if len(self.pending[rel]) >= WRITE_ROWS or self.bytes[rel] >= WRITE_BYTES:
            self._flush(rel)

    def _flush(self, rel: str) -> None:
        rows = self.pending.get(rel)
        if not rows:
            return
        schema = self.schema_for(rel)
        if rel not in self.writers:
            target = self.staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            self.writers[rel] = pq.ParquetWriter(target, schema, compression="zstd")
        self.behind.submit(self.writers[rel].write_table, pa.Table.from_pylist(rows, schema=schema))
        self.pending[rel], self.bytes[rel] = [], 0

    def close(self) -> dict[str, int]:
        try:
            for rel in list(self.pending):
                self._flush(rel)
            self.behind.close()   # every row group written (or the first write error)
        finally:
            self.behind.abort()
            for w in self.writers.values():
                w.close()
        return dict(self.rows)


def write_streamed(path: Path, manifest: dict, fmt: str, staging: Path,
                   schema_for: Callable[[str], pa.Schema]) -> dict[str, int]:
    """The format's files under ``staging``, row for row what :func:`factory.release.export.build_export` gives;
    returns {relative file: rows}."""
    from factory.release.export_rows import RM_COLUMNS, check_truth, pair_rows, problem_row, release_reward
    from factory.release.prompts import ground_truth, truth_json

    reward = release_reward(manifest)
    split_file = lambda row: "test.parquet" if row.get("split") == "test" else "train.parquet"
    sink = _Sink(staging, lambda rel: schema_for(fmt, rel))
    try:
        if fmt in ("trl", "openrlhf") and "gold.rm_pairs" in manifest["views"]:
            for pair in iter_view(path, manifest, "gold.rm_pairs"):
                row = pair_rows([pair])[0]
                if fmt == "openrlhf":
                    row = {k: row[k] for k in RM_COLUMNS}
                sink.add(("rm/" if fmt == "openrlhf" else "") + split_file(pair), row, _text_bytes(pair))
        if fmt != "trl":
            problems = (iter_view(path, manifest, "gold.rl_problems")   # a recipe's release: the same RL rows
                        or iter_view(path, manifest, "gold.recipe_problems"))   # ... with the recipe's tests
            for i, p in enumerate(problems or ()):
                truth_rules = ground_truth(p, reward)
                rel = ("prompts/" if fmt == "openrlhf" else "") + split_file(p)   # the file the row goes to
                check_truth(rel, sink.rows.get(rel, 0), truth_rules)   # the validation's row rules, on the row
                truth = truth_json(truth_rules, utf8=True)   # pyarrow takes (and checks) UTF-8 bytes
                sink.add(rel, problem_row(fmt, p, i, truth), 2 * _text_bytes(p))
    finally:
        counts = sink.close()
    order = lambda rel: (rel.startswith("prompts/"), rel.endswith("test.parquet"))   # as build_export lists them
    return {rel: counts[rel] for rel in sorted(counts, key=order)}
