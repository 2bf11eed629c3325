"""`factory ingest hf-* --path hf://datasets/ORG/NAME[@REV][/SUBDIR]` (or a folder in the Hub layout): streamed.

Records are read row group by row group (:mod:`factory.ingest.hub.stream`), converted one at a time and written
to the lake in batches of about ``flush_bytes`` inside ONE stage transaction: a failure anywhere writes nothing,
and memory holds one read batch plus one write batch whatever the dataset's size. Test payloads are stored once
(silver.tests); bronze keeps every other field verbatim and, for the columns that carry tests and programs, their
sha256 and size (``{"$elided": ...}``): the exact revision (``bronze.raw_records.source_revision``, the run's
config and the release card), file and row locate the original bytes.

Problem and test ids hash each test's sha256 instead of its text, so a 20 MB input is never serialised again to
be hashed.
"""
from __future__ import annotations

import hashlib
import json
import re
from contextlib import contextmanager
from operator import attrgetter, itemgetter
from pathlib import Path

from factory.errors import FactoryError, InputError
from factory.ingest.adapters import file_split
from factory.ingest.sources import ADAPTER_VERSION, ADAPTERS
from factory.ingest.hub.adapters import HUB_DATASETS, HUB_VERSION, SkipRecord, for_repo
from factory.ingest.hub.resolve import Resolved, is_hub_url, parse_url, resolve_folder, resolve_url
from factory.ingest.hub.stream import BATCH_BYTES, iter_records
from factory.ingest.normalize import stable_hash
from factory.ingest.visibility import statement_text, visibility

FLUSH_BYTES = 64 << 20   # write the buffered rows once they hold about this many bytes of text
ELIDE_CHARS = 4096       # a bulky column's string longer than this is replaced by its digest in bronze
PAYLOAD_COLUMNS = frozenset({"payload", "question", "starter_code", "test_preamble", "metadata", "code", "input",
                             "expected", "raw_completion"})   # lake files carry no min/max statistics for these
_TABLES = ("bronze.raw_records", "silver.problems", "silver.tests", "silver.programs")
_TEST_FIELDS = ("kind", "code", "input", "expected", "comparison", "atol", "subset")
_TEXTS = ("code", "input", "expected")


def text_digest(text: str | None) -> str | None:
    """sha256 of a string's UTF-8 bytes, encoded 1 MiB at a time (no second full-size copy)."""
    if text is None:
        return None
    step = 1 << 20
    if len(text) <= step:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    h = hashlib.sha256()
    for i in range(0, len(text), step):
        h.update(text[i:i + step].encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _elide(value, known: dict):
    """A bulky column for bronze: long strings -> {"$elided": sha256, "chars": n}; nested values keep their shape.
    ``known``: id(string) -> its digest, for the strings already hashed as tests (each is hashed once)."""
    if isinstance(value, str):
        return value if len(value) <= ELIDE_CHARS else \
            {"$elided": "sha256:" + (known.get(id(value)) or text_digest(value)), "chars": len(value)}
    if isinstance(value, list):
        if all(type(v) is str and len(v) <= ELIDE_CHARS for v in value):
            return value   # a list of short strings (many tiny tests) is kept as it is, without a call per item
        return [_elide(v, known) for v in value]
    if isinstance(value, dict):
        return {k: _elide(v, known) for k, v in value.items()}
    return value


def _digests(tests: list) -> tuple[list[tuple], dict]:
    """[(kind, code digest, input digest, expected digest)] of a problem's tests (sha256 of each text, None for
    none), and {id(text): digest} of its texts longer than ELIDE_CHARS (bronze elides those: each is hashed once)."""
    sha256, columns, known = hashlib.sha256, [], {}
    for name in _TEXTS:
        texts = list(map(attrgetter(name), tests))
        longest = max(map(len, filter(None, texts)), default=0)
        if longest == 0 and "" not in texts:
            columns.append([None] * len(texts))   # e.g. no test has code: nothing to hash
            continue
        digests = [None if x is None else sha256(x.encode("utf-8", "surrogatepass")).hexdigest() for x in texts] \
            if longest <= 1 << 20 else list(map(text_digest, texts))
        columns.append(digests)
        if longest > ELIDE_CHARS:
            known.update((id(x), d) for x, d in zip(texts, digests) if len(x or "") > ELIDE_CHARS)
    return list(zip(map(attrgetter("kind"), tests), *columns)), known


def _test_ids(problem_id: str, digests: list[tuple]) -> list[str]:
    """stable_hash(problem_id, ordinal, kind, code_digest, input_digest) of each test, its JSON written directly
    (hex ids, an int and a kind of TEST_FORMATS need no escaping): the same ids at a fraction of the cost."""
    sha256, head = hashlib.sha256, f'["{problem_id}",'
    quoted = [["null" if d is None else f'"{d}"' for d in column] for column in list(zip(*digests))[1:3]]
    return [sha256(f'{head}{o},"{k}",{c},{i}]'.encode()).hexdigest()[:16]
            for o, (k, c, i) in enumerate(zip(map(itemgetter(0), digests), *quoted))]


def _visibility(statement: str, t) -> str:
    """factory.ingest.visibility's verdict, but 'hidden' without normalising (most of the ingest's CPU, and ~10
    copies of a 20 MB input) for a test far larger than the statement or a stdio test whose input or output
    provably is not in it."""
    if len(t.input or "") + len(t.expected or "") + len(t.code or "") > 16 * len(statement) + 65536:
        return "hidden"
    if t.kind == "stdio" and t.input is not None and (_not_in(statement, t.expected) or _not_in(statement, t.input)):
        return "hidden"
    return visibility(statement, t.kind, t.code, t.input, t.expected)


_DROPPED = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f0."   # the only ASCII characters normalise() removes
_WORD = re.compile(r"(?<![.0-9A-Za-z])[0-9A-Za-z]+")    # kept by normalise() as its lower case (not after a '.')


def _not_in(statement: str, text: str | None) -> bool:
    """True only when normalise(text) cannot occur in the normalised ``statement`` (stdio visibility needs both the
    input and the output there): for ASCII text, normalise() maps every character to one, except whitespace, '0'
    and '.', which it may drop, so its result is at least the rest long; and a run of letters and digits not after
    a '.' (other than 'none') is in its result as its lower case. Anything else: False (the full rule decides)."""
    if text is None or not text.isascii():
        return False
    first = _WORD.search(text, 0, 1024)   # most often decides alone (a tiny test's output is one word)
    if first is not None:
        if (word := first.group().lower()) != "none" and word not in statement:
            return True
        if any(w not in statement for w in map(str.lower, _WORD.findall(text, first.end(), 1024)) if w != "none"):
            return True
    return len(text) > len(statement) and len(text) - sum(map(text.count, _DROPPED)) > len(statement)


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
               flush_bytes: int = FLUSH_BYTES, batch_bytes: int = BATCH_BYTES, solutions_per_language: int = 8):
    """Ingest one Hub dataset (config) as one source; same revision and adapter again is a no-op."""
    import pyarrow as pa

    from factory.lake.commit import stage_run
    from factory.lake.connection import resolve_lake_dir
    from factory.ingest.outcome import IngestResult, file_splits as _file_splits, source_counts as _counts, validate

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
    convert = ADAPTERS[adapter_name].convert
    license_ = ADAPTERS[adapter_name].license
    files = _DataFiles(resolve_lake_dir(lake))   # rows -> data files in the lake's data path (see _DataFiles)
    try:
        with stage_run("ingest", run_config, lake=lake) as run, _write_behind() as writer:
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

            schemas = {t: run.catalog[t].arrow_schema() for t in _TABLES}
            buffers: dict[str, list[dict]] = {t: [] for t in _TABLES}
            # silver.tests is buffered column by column (600 k tiny tests: no dict each)
            tests: dict[str, list] = {k: [] for k in ("test_id", "problem_id", "ordinal", *_TEST_FIELDS, "visibility")}
            buffered = [0]
            counts = {t: 0 for t in _TABLES}
            stats = {"skipped": {}, "first_skip": None, "duplicates": 0, "flushes": 0, "bytes_read": 0}
            file_splits: dict = {}

            files.run = run

            def flush():   # rows -> Arrow here; the Parquet encoding and writing on the writer's thread
                for t in _TABLES:
                    if t == "silver.tests" and tests["test_id"]:
                        arrow = _columns_to_arrow(pa, tests, schemas[t], run.run_id)   # empties the columns
                    elif buffers[t]:
                        arrow = _to_arrow(pa, buffers[t], schemas[t])   # empties the buffer as it converts
                    else:
                        continue
                    counts[t] += arrow.num_rows
                    writer.submit(files.write, t, arrow)
                    del arrow
                buffered[0] = 0
                stats["flushes"] += 1

            seen: set[str] = set()
            now = run.started_at
            for path, rel in zip(resolved.files, rel_files):
                stats["bytes_read"] += path.stat().st_size
                named = file_split(path)
                opts = {"file_split": named, "file_rel": rel, "config": config,
                        "solutions_per_language": solutions_per_language}
                splits = file_splits.setdefault(rel, {})
                for line, rec in iter_records(path, batch_bytes):
                    ctx = (f"{resolved.url}/{rel}" if is_hub_url(resolved.url) else str(path), line)
                    try:
                        norm = convert(rec, ctx, opts)
                    except SkipRecord as why:
                        reason = str(why)
                        stats["skipped"][reason] = stats["skipped"].get(reason, 0) + 1
                        stats["first_skip"] = stats["first_skip"] or f"{rel}:{line} ({reason})"
                        norm = None
                    known, digests = {}, None
                    if norm is not None:
                        validate(norm, ctx)
                        if named == "test" or (named and norm.split is None):
                            norm.split = named
                        digests, known = _digests(norm.tests)
                    payload = json.dumps({k: (_elide(v, known) if k in spec.bulky else v) for k, v in rec.items()},
                                         ensure_ascii=False, default=str)
                    del rec, known
                    buffers["bronze.raw_records"].append({
                        "source": source, "source_id": norm.source_id if norm else f"{rel}:{line}", "payload": payload,
                        "file": rel, "line": line, "ingested_at": now, "source_sha256": sha, "run_id": run.run_id,
                        "source_revision": resolved.revision})
                    buffered[0] += len(payload)
                    if norm is None:
                        continue
                    problem_id = stable_hash(source, norm.source_id, norm.question, norm.starter_code, digests)
                    if problem_id in seen:   # an exact copy of an earlier record: bronze only
                        stats["duplicates"] += 1
                        continue
                    seen.add(problem_id)
                    key = norm.split or "unsplit"
                    splits[key] = splits.get(key, 0) + 1
                    statement = statement_text(norm.question, norm.starter_code)
                    buffers["silver.problems"].append({
                        "problem_id": problem_id, "source": source, "source_id": norm.source_id,
                        "question": norm.question, "starter_code": norm.starter_code, "entry_point": norm.entry_point,
                        "test_preamble": norm.test_preamble, "language": norm.language, "test_format": norm.test_format,
                        "difficulty_label": norm.difficulty_label, "license": license_, "split": norm.split,
                        "metadata": json.dumps({**(norm.metadata or {}), "hub_revision": resolved.revision},
                                               default=str),
                        "created_at": now, "run_id": run.run_id})
                    buffered[0] += len(norm.question)
                    n = len(norm.tests)
                    tests["test_id"] += _test_ids(problem_id, digests)
                    tests["problem_id"] += [problem_id] * n
                    tests["ordinal"] += range(n)
                    for name in _TEST_FIELDS:
                        values = list(map(attrgetter(name), norm.tests))
                        tests[name] += values
                        if name in _TEXTS:
                            buffered[0] += sum(map(len, filter(None, values)))
                    tests["visibility"] += [_visibility(statement, t) for t in norm.tests]
                    program_ids = set()
                    for p in norm.programs:
                        pid = stable_hash(problem_id, p.origin, p.model, p.sample_index, p.code)
                        if pid in program_ids:
                            continue
                        program_ids.add(pid)
                        buffers["silver.programs"].append({
                            "program_id": pid, "problem_id": problem_id, "origin": p.origin, "model": p.model,
                            "sample_index": p.sample_index, "code": p.code, "raw_completion": p.raw_completion,
                            "extraction_status": None, "reported_pass_rate": p.reported_pass_rate,
                            "parent_program_id": None, "metadata": json.dumps(p.metadata) if p.metadata else None,
                            "created_at": now, "run_id": run.run_id, "language": p.language})
                        buffered[0] += len(p.code) + len(p.raw_completion or "")
                    values = None   # the last column (maybe MB-sized texts) must not outlive its place in the buffer
                    del norm
                    if buffered[0] >= flush_bytes:
                        flush()
            flush()
            writer.close()   # every file written and added before the run goes on
            if counts["silver.problems"] == 0:
                raise InputError(f"no problem with usable tests (skipped: {stats['skipped']})", file=resolved.url)
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


def _to_arrow(pa, rows: list, schema, slice_chars: int = 8 << 20):
    """``rows`` -> one Arrow table, converted ~``slice_chars`` of text at a time; each slice's Python rows are
    released once converted (the list is emptied), so a write batch's text is held about once, not twice."""
    parts, start, chars = [], 0, 0
    bulky = [c for c in schema.names if c in PAYLOAD_COLUMNS]   # the columns whose text counts
    texts = itemgetter(*bulky) if len(bulky) > 1 else lambda row: (row[bulky[0]],)
    for i in range(len(rows)):
        chars += sum(map(len, filter(None, texts(rows[i]))))
        if chars >= slice_chars or i == len(rows) - 1:
            parts.append(pa.Table.from_pylist(rows[start:i + 1], schema=schema))
            rows[start:i + 1] = [None] * (i + 1 - start)   # the slice's strings are freed now
            start, chars = i + 1, 0
    rows.clear()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _columns_to_arrow(pa, columns: dict, schema, run_id: str, slice_chars: int = 8 << 20):
    """silver.tests columns -> one Arrow table in ``schema``; the text columns are converted ~``slice_chars`` at a
    time and each slice's Python strings released once converted (as :func:`_to_arrow` does for rows). Empties
    ``columns``."""
    from bisect import bisect_right
    from itertools import accumulate

    n = len(columns["test_id"])
    arrays = {"origin": pa.array(["dataset"] * n, pa.string()), "run_id": pa.array([run_id] * n, pa.string())}
    for name in list(columns):
        values, kind = columns[name], schema.field(name).type
        columns[name] = []
        if name not in _TEXTS:
            arrays[name] = pa.array(values, kind)
            continue
        longest, chunks, start = max(map(len, filter(None, values)), default=0), [], 0
        ends = list(accumulate(len(v) if v else 0 for v in values)) if longest > 1 << 16 else None
        while start < n:   # slices of ~slice_chars: by row count when no text is long, else by running length
            stop = min(n, start + max(1, slice_chars // max(1, longest))) if ends is None else \
                max(start + 1, bisect_right(ends, (ends[start - 1] if start else 0) + slice_chars))
            chunks.append(pa.array(values[start:stop], kind))
            values[start:stop] = [None] * (stop - start)   # the slice's strings are freed now
            start = stop
        arrays[name] = pa.chunked_array(chunks, kind)
    return pa.table([arrays[f.name] for f in schema], schema=schema)


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
