"""`factory ingest hf-* --path hf://datasets/ORG/NAME[@REV][/SUBDIR]` (or a folder in the Hub layout): streamed.

Records are read row group by row group (:mod:`factory.ingest.hub.stream`), converted in batches
(:mod:`factory.ingest.hub.convert`) and written to the lake in files of about ``flush_bytes`` of text inside ONE
stage transaction: a failure anywhere writes nothing, and memory holds a few read batches plus one write batch
whatever the dataset's size. A Parquet file of several row groups of small values is converted by worker processes
(one per core, in order; see _parts); this process drops exact duplicates and writes. Test payloads are stored
once (silver.tests); bronze keeps every other field verbatim and, for the columns that carry tests and programs,
their sha256 and size (``{"$elided": ...}``): the exact revision (``bronze.raw_records.source_revision``, the
run's config and the release card), file and row locate the original bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter, deque
from contextlib import contextmanager
from pathlib import Path

from factory.errors import FactoryError, InputError
from factory.ingest.adapters import file_split
from factory.ingest.sources import ADAPTER_VERSION, ADAPTERS
from factory.ingest.hub.adapters import HUB_DATASETS, HUB_VERSION, for_repo
from factory.ingest.hub.convert import ELIDE_CHARS, PAYLOAD_COLUMNS, TABLES, convert_records
from factory.ingest.hub.resolve import Resolved, is_hub_url, parse_url, resolve_folder, resolve_url
from factory.ingest.hub.stream import BATCH_BYTES, iter_records, parquet_records

FLUSH_BYTES = 64 << 20   # write the buffered rows once they hold about this many bytes of text
TASK_BYTES = 4 << 20     # a worker converts runs of row groups of about this many (uncompressed) bytes
ROW_GROUP_MAX = 64 << 20   # a row group larger than this is converted here, a batch at a time (bounded memory)
VALUE_BYTES = 1024       # workers convert files whose values average fewer (uncompressed) bytes than this
__all__ = ["ELIDE_CHARS", "ingest_hub", "resolve_target"]


def resolve_target(adapter_name: str, target: str) -> tuple[Resolved, str, str | None]:
    """(files and revision, default source label, config) for an hf:// URL or a Hub-layout folder."""
    spec = HUB_DATASETS[adapter_name]
    if is_hub_url(target):
        ref = parse_url(target)
        if ref.repo_id.lower() != spec.repo_id.lower():
            others = for_repo(ref.repo_id)
            raise FactoryError(f"{adapter_name} reads {spec.repo_id}, not {ref.repo_id}"
                               + (f"; use {', '.join(others)}" if others else ""))
        patterns, label = spec.files_for(ref.subdir)
        return resolve_url(target, patterns), label, ref.subdir
    folder = Path(target)
    if folder.is_dir() and folder.name in spec.configs and not any(folder.glob(".git")):
        # DATASET/taco: a config folder of a Hub-layout checkout -> that config of its parent
        patterns, label = spec.files_for(folder.name)
        return resolve_folder(folder.parent, patterns), label, folder.name
    patterns, label = spec.files_for(None)
    return resolve_folder(folder, patterns), label, None


def ingest_hub(adapter_name: str, paths: list, *, lake=None, source: str | None = None, replace: bool = False,
               flush_bytes: int = FLUSH_BYTES, batch_bytes: int = BATCH_BYTES, solutions_per_language: int = 8,
               workers: int | None = None):
    """Ingest one Hub dataset (config) as one source; same revision and adapter again is a no-op. ``workers``:
    conversion processes for Parquet files of many small values (default: one per core, none on one core; 0: none)."""
    import pyarrow as pa

    from factory.lake.commit import stage_run
    from factory.lake.connection import resolve_lake_dir
    from factory.ingest.outcome import IngestResult, file_splits as _file_splits, source_counts as _counts

    if adapter_name not in HUB_DATASETS:
        repo = parse_url(str(paths[0])).repo_id if paths and is_hub_url(str(paths[0])) else None
        hint = for_repo(repo) if repo else []
        raise FactoryError(f"{paths[0]} is a Hub dataset; the {adapter_name!r} adapter reads local files. "
                           + (f"Use {', '.join(hint)}." if hint else
                              f"Hub adapters: {', '.join(sorted(HUB_DATASETS))} (docs/hub.md)."))
    if not paths or len(paths) != 1:
        raise FactoryError(f"{adapter_name} takes one --path: hf://datasets/{HUB_DATASETS[adapter_name].repo_id}"
                           "[@REVISION][/SUBDIR] or a folder in that layout")
    spec = HUB_DATASETS[adapter_name]
    resolved, label, config = resolve_target(adapter_name, str(paths[0]))
    source = source or label
    rel_files = [resolved.relative(f) for f in resolved.files]
    sha = hashlib.sha256(json.dumps([resolved.revision, rel_files, adapter_name, ADAPTER_VERSION, HUB_VERSION,
                                     solutions_per_language]).encode()).hexdigest()
    where = resolved.url.split("@")[0] if is_hub_url(resolved.url) else str(Path(resolved.url).resolve())
    run_config = {"source": source, "adapter": adapter_name, "url": resolved.url, "location": where,
                  "repo_id": resolved.repo_id or spec.repo_id, "config": config, "revision": resolved.revision,
                  "files": rel_files, "sha256": sha, "files_sha256": sha}
    files = _DataFiles(resolve_lake_dir(lake))   # rows -> data files in the lake's data path (see _DataFiles)
    try:
        parts = {path: _parts(path) for path in resolved.files} if workers != 0 else {}
        with _workers(workers, any(parts.values())) as pool, stage_run("ingest", run_config, lake=lake) as run, \
                _write_behind() as writer:
            previous = run.con.execute("SELECT DISTINCT source_sha256 FROM bronze.raw_records WHERE source = ?",
                                       [source]).fetchall()
            if previous == [(sha,)]:
                run.noop = True
                return IngestResult(source, "unchanged", *_counts(run, source), run_id=None,
                                    file_splits=_file_splits(run, source))
            replacing = bool(previous)
            if replacing and not replace:
                _check_same_location(run, source, where)
            old = "SELECT problem_id FROM silver.problems WHERE source = ?"
            run.delete("silver.programs", f"problem_id IN ({old}) AND run_id LIKE 'ingest-%'", [source])
            run.delete("silver.tests", f"problem_id IN ({old})", [source])
            run.delete("silver.problems", "source = ?", [source])
            run.delete("bronze.raw_records", "source = ?", [source])

            buffers: dict[str, list] = {t: [] for t in TABLES}   # Arrow tables of the batches not yet written
            buffered = [0]
            counts = {t: 0 for t in TABLES}
            stats = {"skipped": Counter(), "first_skip": None, "duplicates": 0, "flushes": 0, "bytes_read": 0}
            file_splits: dict = {}
            files.run = run
            job = {"adapter": adapter_name, "source": source, "sha256": sha, "revision": resolved.revision,
                   "run_id": run.run_id, "now": run.started_at, "license": ADAPTERS[adapter_name].license,
                   "bulky": spec.bulky, "schemas": {t: run.catalog[t].arrow_schema() for t in TABLES}}

            def flush():   # the Parquet encoding and writing on the writer's thread
                for t in TABLES:
                    if buffers[t]:
                        arrow = pa.concat_tables(buffers[t])
                        buffers[t].clear()
                        counts[t] += arrow.num_rows
                        writer.submit(files.write, t, arrow)
                        del arrow
                buffered[0] = 0
                stats["flushes"] += 1

            seen: set[str] = set()
            for path, rel in zip(resolved.files, rel_files):
                stats["bytes_read"] += path.stat().st_size
                named = file_split(path)
                file_job = {**job, "rel": rel, "named": named,
                            "file": f"{resolved.url}/{rel}" if is_hub_url(resolved.url) else str(path),
                            "opts": {"file_split": named, "file_rel": rel, "config": config,
                                     "solutions_per_language": solutions_per_language}}
                splits = file_splits.setdefault(rel, {})
                for batch in _converted(pool, file_job, path, parts.get(path), batch_bytes):
                    stats["duplicates"] += batch.drop_repeated(seen)   # exact copies of earlier records: bronze only
                    stats["skipped"].update(batch.skipped)
                    stats["first_skip"] = stats["first_skip"] or batch.first_skip
                    for key in batch.splits:
                        splits[key] = splits.get(key, 0) + 1
                    for t, arrow in batch.tables.items():
                        buffers[t].append(arrow)
                    buffered[0] += batch.text_chars
                    del batch
                    if buffered[0] >= flush_bytes:
                        flush()
            flush()
            writer.close()   # every file written and added before the run goes on
            if counts["silver.problems"] == 0:
                raise InputError(f"no problem with usable tests (skipped: {dict(stats['skipped'])})",
                                 file=resolved.url)
            run.delete("silver.programs", "problem_id NOT IN (SELECT problem_id FROM silver.problems)")
            run.delete("silver.executions", "program_id NOT IN (SELECT program_id FROM silver.programs) "
                       "OR test_id NOT IN (SELECT test_id FROM silver.tests)")
            skipped = sum(stats["skipped"].values())
            run.summary = (("replaced " if replacing else "") + f"{source} @ {resolved.revision}: "
                           + ", ".join(f"{t}={n}" for t, n in counts.items())
                           + (f"; {stats['duplicates']} exact duplicate records kept in bronze only" if stats["duplicates"]
                              else "")
                           + (f"; {skipped} records without usable tests kept in bronze only ("
                              + ", ".join(f"{k}: {v}" for k, v in sorted(stats["skipped"].items()))
                              + f"; first {stats['first_skip']})" if skipped else "")
                           + f"; {stats['bytes_read']} source bytes in {stats['flushes']} writes")
            result = IngestResult(source, "replaced" if replacing else "ingested", counts["silver.problems"],
                                  counts["silver.tests"], counts["silver.programs"], counts["bronze.raw_records"],
                                  run.run_id, stats["duplicates"], file_splits)
            result.revision = resolved.revision
            result.records_skipped = dict(stats["skipped"])  # reason -> rows kept in bronze only
            result.bytes_read = stats["bytes_read"]
            return result
    except BaseException:
        files.discard()   # nothing of a failed or interrupted run stays on disk
        raise


def _parts(path: Path) -> list[range] | None:
    """A Parquet file's row groups in runs of about TASK_BYTES, for the workers; None when it is not Parquet, is one
    run, has a row group over ROW_GROUP_MAX, or has values of VALUE_BYTES or more on average: the conversion costs
    per value (many small tests), and moving large values to and from a worker costs more than it saves."""
    if not path.name.endswith(".parquet"):
        return None
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except Exception:   # an unreadable file: the reader in this process raises the located error
        return None
    groups = [meta.row_group(rg) for rg in range(meta.num_row_groups)]
    sizes = [g.total_byte_size for g in groups]
    values = sum(g.column(c).num_values for g in groups for c in range(g.num_columns))
    if max(sizes, default=ROW_GROUP_MAX + 1) > ROW_GROUP_MAX or sum(sizes) >= VALUE_BYTES * values:
        return None
    parts, start, size = [], 0, 0
    for rg, n in enumerate(sizes):
        size += n
        if size >= TASK_BYTES or rg == len(sizes) - 1:
            parts.append(range(start, rg + 1))
            start, size = rg + 1, 0
    return parts if len(parts) > 1 else None


def _convert_part(job: dict, path: Path, row_groups: range, batch_bytes: int) -> list:
    """(in a worker) The batches of ``row_groups``."""
    return list(convert_records(job, parquet_records(path, batch_bytes, row_groups)))


def _converted(pool, job: dict, path: Path, parts: list[range] | None, batch_bytes: int):
    """The batches of one file in order: of its ``parts`` from the workers (at most one part each ahead of the one
    handed on) when there are both; else converted here. A part whose worker failed is converted here again, so its
    error is the one this process would raise."""
    if pool is None or parts is None:
        yield from convert_records(job, iter_records(path, batch_bytes))
        return

    def results(part: range, future):
        try:
            batches = future.result()
        except Exception:   # noqa: BLE001 - the same part again here: its own error, or its rows
            batches = _convert_part(job, path, part, batch_bytes)
        while batches:
            yield batches.pop(0)   # handed on one at a time: the caller may drop it before the next

    ahead = deque()
    for part in parts:
        ahead.append((part, pool.submit(_convert_part, job, path, part, batch_bytes)))
        if len(ahead) > pool.workers:
            yield from results(*ahead.popleft())
    while ahead:
        yield from results(*ahead.popleft())


@contextmanager
def _workers(n: int | None, wanted: bool):
    """A pool of ``n`` conversion processes (None: one per core when there are several) when ``wanted``, started
    now, before the lake opens: forked when this thread is the only one (a lock another thread held would stay held
    in the child), else spawned (a script that calls this needs an ``if __name__ == "__main__"`` guard, as for
    any spawned pool). None for none."""
    import threading

    if n is None:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        n = n if n > 1 else 0
    if not (wanted and n):
        yield None
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    for thread in threading.enumerate():
        if thread.name == "warm-pandas":   # factory.lake.connection's import of pandas: done before a fork
            thread.join()
    method = "fork" if sys.platform == "linux" and threading.active_count() == 1 else "spawn"
    pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context(method), initializer=_ignore_sigint)
    pool.workers = n
    try:
        for started in [pool.submit(os.getpid) for _ in range(n)]:   # every worker started before the lake opens
            started.result()
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C stops the ingest in the parent, which stops the pool


@contextmanager
def _write_behind():
    """The run's file writes on one background thread (one write batch waiting at most); leaving the block with
    an error drops what waits and waits for the write in progress, before the run rolls back."""
    from factory.streaming.background import WriteBehind

    writer = WriteBehind(depth=1, name="hub-ingest-write")
    try:
        yield writer
    finally:
        writer.abort()   # after close(): nothing left to stop


class _DataFiles:
    """Rows -> Parquet files in the lake's data path, added with ``ducklake_add_data_files`` inside the run's
    transaction: DuckLake holds rows INSERTed in an open transaction in memory until COMMIT, so memory stays flat
    and the commit is still one snapshot (a failed run's files are deleted). A data path that is not a local
    folder falls back to ``run.write``."""

    def __init__(self, lake_dir: Path):
        self.lake_dir = lake_dir
        self.run = None
        self.written: list[Path] = []

    def write(self, table: str, arrow) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from factory.lake.commit import check_columns
        from factory.lake.connection import LAKE_ALIAS, lake_config

        run = self.run
        data_path = lake_config(self.lake_dir)["data_path"]
        if not data_path or "://" in data_path:
            return run.write(table, arrow)
        check_columns(run.catalog[table], arrow)
        for col in run.catalog[table].columns:   # JSON columns carry Parquet's JSON logical type, as DuckLake's own
            if str(col.type).upper() == "JSON" and col.name in arrow.column_names:
                i = arrow.column_names.index(col.name)
                arrow = arrow.set_column(i, col.name, arrow.column(i).cast(pa.json_(pa.string())))
        schema, name = table.split(".")
        folder = Path(data_path) / schema / name
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"hub-{run.run_id}-{len(self.written):05d}.parquet"
        self.written.append(path)
        # no dictionary (ids and texts never repeat; it cost ~1/4 of the CPU); zstd keeps the lake below the source;
        # no min/max statistics on payload columns (pyarrow kept ~6 copies of a 20 MB value; nothing filters on them)
        stats = [c for c in arrow.column_names if c not in PAYLOAD_COLUMNS]
        pq.write_table(arrow, path, compression="zstd", use_dictionary=False, write_statistics=stats)
        run.con.execute(f"CALL ducklake_add_data_files('{LAKE_ALIAS}', '{name}', ?, schema => '{schema}')",
                        [str(path)])
        run._count(table, "inserted", arrow.num_rows)
        return arrow.num_rows

    def discard(self) -> None:
        for path in self.written:
            path.unlink(missing_ok=True)
        self.written.clear()


def _check_same_location(run, source: str, where: str) -> None:
    """A source from another dataset / folder is replaced only with --replace (a new revision of the same one is
    an update and replaces it)."""
    row = run.con.execute(
        "SELECT json_extract_string(config, '$.location'), json_extract(config, '$.files')::VARCHAR FROM ops.runs "
        "WHERE stage = 'ingest' AND status = 'success' AND json_extract_string(config, '$.source') = ? "
        "ORDER BY finished_at DESC LIMIT 1", [source]).fetchone()
    if row is None or row[0] == where:
        return
    raise FactoryError(f"source {source!r} was ingested from {row[0] or row[1]}; ingesting {where} would replace it. "
                       "Pass --replace to replace the source, or --name NEW to ingest it as another source")
