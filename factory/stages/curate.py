"""`factory curate`: materialize validation, pass rates, difficulty, filters and pairs in one transaction."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from factory.errors import FactoryError, reraise_if_interrupt
from factory.lake.connection import LAKE_ALIAS
from factory.lake.templating import DEFAULTS


class CurateResult(dict):
    """Row counts per materialized name, plus the per-source funnel and the unhealthy sources."""

    funnel: list[dict]
    unhealthy: list[dict]
    not_executed: list[dict]   # sources with references never executed: their train problems stay out, unvalidated


def not_executed(con) -> list[dict]:
    """Sources whose reference programs were never executed (`factory execute` not run on them yet)."""
    return con.execute("""
        SELECT pb.source, count(*) AS "references",
               count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM silver.executions e
                                                 WHERE e.program_id = p.program_id)) AS never_executed
        FROM silver.programs p JOIN silver.problems pb USING (problem_id)
        WHERE p.origin = 'reference' GROUP BY pb.source HAVING never_executed > 0 ORDER BY pb.source
        """).to_arrow_table().to_pylist()


def warn_not_executed(rows: list[dict]) -> None:
    for r in rows:
        print(f"curate: {r['source']}: {r['never_executed']} of {r['references']} references never executed - "
              f"their train problems are held out of gold.rl_problems as unvalidated; run `factory execute "
              f"--select reference --source {r['source']}` first, then curate again", file=sys.stderr)


RL_PROBLEMS = "gold.rl_problems"
PARTITION_MARK = "WHERE true  -- rl_problems partition"
PARTITION_BYTES = 256 << 20   # test text above which gold.rl_problems is packed by streaming (not one aggregate)
TEXT_PER_FILE_BYTE = 3        # test text per byte of silver.tests' zstd Parquet files (MB inputs: digits, ~2.4x)
ROW_GROUP_BYTES = 16 << 20    # packed test text per row group of a streamed gold.rl_problems file
FILE_BYTES = 256 << 20        # ... and per file (each added to the table with ducklake_add_data_files)
STREAM_ROWS = 256             # test rows per Arrow batch read from DuckDB
# narrow columns of gold.rl_problems: min/max statistics and dictionaries only for these (pyarrow keeps copies of a
# MB-wide value to compute its statistics)
_STATS_COLUMNS = ("problem_id", "source", "source_id", "entry_point", "test_format", "difficulty_label", "license",
                  "split", "n_tests", "n_public_tests", "pass_rate", "potential", "curriculum_stage", "cpu_s",
                  "language")


def rl_partitions(con) -> int:
    """1 when gold.rl_problems is packed in one statement (as any view), else how many ~PARTITION_BYTES parts of
    test text the lake's tests hold (estimated from silver.tests' file sizes: no test text is read): a lake above
    PARTITION_BYTES is packed by :func:`materialize_rl_problems`, streaming."""
    try:
        size = con.execute(f"SELECT coalesce(sum(data_file_size_bytes), 0) FROM ducklake_list_files('{LAKE_ALIAS}', "
                           f"'tests', schema => 'silver')").fetchone()[0]
    except Exception as exc:   # noqa: BLE001  (a catalog without the function: one statement)
        reraise_if_interrupt(exc)
        return 1
    return max(1, -(-int(size) * TEXT_PER_FILE_BYTE // PARTITION_BYTES))


def _split_rl_sql(body: str, where: str) -> tuple[str, str]:
    """sql/gold/rl_problems.sql -> (the per-test query: one row per usable test with its JSON, marked by
    PARTITION_MARK; the whole query with that subquery's ``test_json`` replaced by NULL, so no test text is read)."""
    if body.count(PARTITION_MARK) != 1:
        raise FactoryError(f"{where} lacks the partition mark {PARTITION_MARK!r} curate streams a large lake by")
    token = "__rl_tests_mark__"
    # comments out (string literals kept), so that parentheses in them do not count
    text = re.sub(r"('(?:[^']|'')*')|--[^\n]*", lambda m: m.group(1) or "",
                  body.replace(PARTITION_MARK, f"WHERE {token} --"))
    at, opened, i, j = text.index(token), [], -1, len(text)   # i, j: the '(' and ')' of the subquery holding the mark
    for k, ch in enumerate(text):
        if k == at:
            i = opened[-1] if opened else -1
        if ch == "(":
            opened.append(k)
        elif ch == ")" and opened and opened.pop() == i:
            j = k
            break
    if i <= 0 or j >= len(text):
        raise FactoryError(f"{where}: the partition mark is not inside a parenthesised subquery")
    per_test = text[i + 1:j].replace(f"WHERE {token}", "WHERE true")
    narrow = (text[:i] + f"(SELECT * REPLACE (NULL::VARCHAR AS test_json) FROM ({per_test}) AS _per_test)"
              + text[j + 1:])
    return per_test, narrow


class _PackedFiles:
    """gold.rl_problems rows -> zstd Parquet files in the lake's (local) data path, row groups of ~ROW_GROUP_BYTES of
    test text, files of ~FILE_BYTES: the packed text goes from the streamed tests to disk once, never through one
    aggregate or an INSERT that DuckLake holds until COMMIT. No query runs on the connection while the tests
    stream (it would end the stream): :meth:`close` adds the files with ``ducklake_add_data_files``, in the run's
    transaction."""

    def __init__(self, run, folder, schema, written: list):
        from factory.streaming.background import WriteBehind

        self.run, self.folder, self.schema, self.written = run, folder, schema, written
        self.behind = WriteBehind(depth=2, name="curate-rl-problems")   # encoding + zstd beside the stream
        self.writer = None
        self.group, self.group_bytes, self.file_bytes, self.files = [], 0, 0, []

    def add(self, table, text_bytes: int) -> None:
        self.group.append(table)
        self.group_bytes += text_bytes
        if self.group_bytes >= ROW_GROUP_BYTES:
            self._flush_group()

    def _flush_group(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.group:
            return
        table = pa.concat_tables(self.group).cast(self.schema)
        self.group, n_bytes, self.group_bytes = [], self.group_bytes, 0
        if self.writer is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"curate-{self.run.run_id}-{len(self.files):05d}.parquet"
            self.written.append(path)
            self.files.append(path)
            stats = [c for c in _STATS_COLUMNS if c in self.schema.names]
            self.writer = pq.ParquetWriter(path, self.schema, compression="zstd", use_dictionary=stats,
                                           write_statistics=stats)
        self.behind.submit(self.writer.write_table, table, max(1, table.num_rows))
        self.file_bytes += n_bytes
        if self.file_bytes >= FILE_BYTES:
            self.behind.submit(self.writer.close)
            self.writer, self.file_bytes = None, 0

    def abort(self) -> None:
        """Stop the writes (after an error: the caller deletes the written files)."""
        self.behind.abort()
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def close(self) -> None:
        self._flush_group()
        if self.writer is not None:
            self.behind.submit(self.writer.close)
            self.writer = None
        self.behind.close()   # every file written and closed (or the first write error)
        for path in self.files:
            self.run.con.execute(f"CALL ducklake_add_data_files('{LAKE_ALIAS}', 'rl_problems', ?, schema => 'gold')",
                                 [str(path)])


def local_data_path(con):
    """The lake's data path when it is a local folder (else None: object storage)."""
    row = con.execute(f"SELECT value FROM {LAKE_ALIAS}.options() WHERE option_name = 'data_path'").fetchone()
    return Path(row[0]) if row and row[0] and "://" not in row[0] else None


def _pack(pa, pc, table):
    """One problem's streamed test rows -> [n_tests, tests, n_public_tests, public_tests]: the JSON lists as
    sql/gold/rl_problems.sql's ordered string_agg builds them (ordinal order; one-value Arrow arrays, None where
    empty), joined in Arrow (no Python string of the text)."""
    table = table.take(pc.sort_indices(table, [("ordinal", "ascending")]))
    out = []
    for want in (True, False):
        part = table.column("test_json").filter(pc.equal(table.column("reward"), want))
        if len(part) == 0:
            out += [0, None]
            continue
        values = part.combine_chunks().cast(pa.large_string())
        text = lambda v: pa.scalar(v, pa.large_string())   # noqa: E731
        joined = pc.binary_join(pa.LargeListArray.from_arrays(pa.array([0, len(values)], pa.int64()), values),
                                text(","))
        out += [len(values), pc.binary_join_element_wise(text("["), joined, text("]"), text(""))]
    return out


def materialize_rl_problems(run, params: dict, written: list) -> None:
    """gold.rl_problems on a lake with large tests: the same rows as sql/gold/rl_problems.sql in one statement,
    built with one scan of the tests and memory bounded by the tests of the problems in flight.

    1. the query with no test text (its per-test subquery's JSON replaced by NULL) -> a temporary table of every
       row's other columns and its test counts (one narrow pass);
    2. the per-test subquery (the usable tests with their JSON), streamed in Arrow batches: one scan of
       silver.tests' text; a problem's tests are packed (ordinal order, as the ordered string_agg) as soon as all
       of them (its n_tests + n_public_tests) arrived - tests are stored by problem, so few are in flight;
    3. its row = the temporary row with the packed JSON, written to zstd Parquet files added to the table.
    ``written`` collects the files (the caller deletes them when the run does not commit)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from factory.lake.commit import PROJECT_ROOT, describe
    from factory.lake.templating import render_sql, transform_params

    spec = run.catalog[RL_PROBLEMS]
    con = run.con
    con.execute((PROJECT_ROOT / "sql" / "macros.sql").read_text())
    body = render_sql(spec.sql_text(), transform_params(params, run_id=run.run_id), spec.sql).strip().rstrip(";")
    per_test, narrow = _split_rl_sql(body, spec.sql)
    target = f"{LAKE_ALIAS}.{RL_PROBLEMS}"
    if con.execute("SELECT count(*) FROM duckdb_views() WHERE database_name = ? AND schema_name || '.' || view_name "
                   "= ?", [LAKE_ALIAS, RL_PROBLEMS]).fetchone()[0]:
        con.execute(f"DROP VIEW {target}")   # a lake from before rl_problems became a table
    settings = con.execute("SELECT current_setting('streaming_buffer_size'), current_setting('threads')").fetchone()
    con.execute(f"CREATE OR REPLACE TEMP TABLE _rl_rows AS {narrow}")
    sink = None
    try:
        actual = [r[0] for r in con.execute("DESCRIBE _rl_rows").fetchall()]
        if actual != spec.column_names:
            raise FactoryError(f"{spec.sql} produces columns {actual}, data_catalog.yaml declares "
                               f"{spec.column_names} for {RL_PROBLEMS}")
        con.execute(f"CREATE OR REPLACE TABLE {target} AS SELECT * FROM _rl_rows LIMIT 0")
        rows = con.execute("SELECT * FROM _rl_rows").to_arrow_table()
        schema = rows.schema
        ids = rows.column("problem_id").to_pylist()
        index = {pid: i for i, pid in enumerate(ids)}
        expect = dict(zip(ids, pc.add(rows.column("n_tests"), rows.column("n_public_tests")).to_pylist()))
        cols = {c: rows.schema.get_field_index(c) for c in ("tests", "public_tests")}
        sink = _PackedFiles(run, local_data_path(con) / "gold" / "rl_problems", schema, written)
        # DuckDB's streaming buffer counts a chunk's fixed-size part, not its MB-sized strings, and each thread holds
        # a chunk's text several times over: a 1 KB buffer and one thread bound the text in flight (same CPU time)
        con.execute("SET streaming_buffer_size = '1KB'")
        con.execute("SET threads = 1")
        reader = con.execute(f"SELECT s.problem_id, s.ordinal, s.reward, s.test_json FROM ({per_test}) AS s "
                             f"WHERE s.reward IS NOT NULL AND s.problem_id IN (SELECT problem_id FROM _rl_rows)"
                             ).to_arrow_reader(STREAM_ROWS)
        pending: dict = {}   # problem -> [its streamed rows so far, how many]
        for batch in reader:
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([batch])
            pids = table.column("problem_id").to_pylist()
            if 1 + sum(a != b for a, b in zip(pids, pids[1:])) != len(set(pids)):   # a problem's rows apart: sort
                table = table.take(pc.sort_indices(table, [("problem_id", "ascending")]))   # (stable)
                pids = table.column("problem_id").to_pylist()
            starts = [i for i in range(len(pids)) if i == 0 or pids[i] != pids[i - 1]] + [len(pids)]
            for a, b in zip(starts, starts[1:]):
                pid, part = pids[a], table.slice(a, b - a)
                got = pending.setdefault(pid, [[], 0])
                got[0].append(part)
                got[1] += part.num_rows
                if got[1] < expect[pid]:
                    continue
                del pending[pid]
                n_tests, tests, n_public, public = _pack(pa, pc, pa.concat_tables(got[0]))
                if n_tests != rows.column("n_tests")[index[pid]].as_py() or n_public != \
                        rows.column("n_public_tests")[index[pid]].as_py():
                    raise FactoryError(f"{RL_PROBLEMS}: problem {pid}: the streamed tests ({n_tests} reward, "
                                       f"{n_public} public) differ from the counted ones")
                row = rows.slice(index[pid], 1)
                size = 0
                for name, value in (("tests", tests), ("public_tests", public)):
                    field = schema.field(name)
                    value = pa.nulls(1, field.type) if value is None else value.cast(field.type)
                    size += pc.sum(pc.binary_length(value)).as_py() or 0
                    row = row.set_column(cols[name], field, value)
                sink.add(row, size)
        if pending:
            pid = next(iter(pending))
            raise FactoryError(f"{RL_PROBLEMS}: {len(pending)} problems' tests did not all arrive (e.g. {pid}: "
                               f"{pending[pid][1]} of {expect[pid]})")
        sink.close()
    finally:
        if sink is not None:
            sink.abort()   # no-op after close; after an error no write lands once the caller deletes the files
        con.execute(f"SET streaming_buffer_size = '{settings[0]}'")
        con.execute(f"SET threads = {int(settings[1])}")
        con.execute("DROP TABLE IF EXISTS _rl_rows")
    n = con.execute(f"SELECT count(*) FROM {target}").fetchone()[0]
    if n != len(ids):
        raise FactoryError(f"{RL_PROBLEMS}: wrote {n} rows for {len(ids)} problems")
    run._count(RL_PROBLEMS, "rows", n)
    describe(con, [spec])


def curate(lake=None, overrides: dict | None = None, allow_unhealthy: bool = False) -> CurateResult:
    """Re-materialize every curate-produced table/view; returns row counts (also stored in ops.runs) with the
    curation funnel (what each rule removed, per source) and the sources whose references fail here.
    Refuses to run when the lake's latest `factory health` check failed, unless ``allow_unhealthy``."""
    from factory.release.funnel import curation_funnel, require_healthy, unhealthy_sources
    from factory.lake.commit import run_stage

    overrides = dict(overrides or {})

    def body(run) -> CurateResult:
        check = require_healthy(run.con, allow_unhealthy)
        if check is not None and not check["healthy"]:
            run.config["allow_unhealthy"] = check["run_id"]
        params = {**DEFAULTS, **overrides}
        if params["difficulty_model"] == "auto":   # the model with the most sampled programs (else 'mutant')
            row = run.con.execute("SELECT model FROM silver.programs WHERE origin = 'sample' AND model IS NOT NULL "
                                  "GROUP BY model ORDER BY count(*) DESC, model LIMIT 1").fetchone()
            params["difficulty_model"] = row[0] if row else "mutant"
        run.config["params"] = params
        names = [s.name for s in run.catalog.transforms() if s.producer == "curate" or s.producer == "transform"]
        for path in written:   # files of an attempt that did not commit (run_stage retries a conflict)
            path.unlink(missing_ok=True)
        written.clear()
        parts = rl_partitions(run.con) if RL_PROBLEMS in names else 1
        if parts > 1 and local_data_path(run.con) is not None:   # large tests: packed streaming (memory: the problems in flight, not the lake's tests)
            i = names.index(RL_PROBLEMS)
            run.materialize(names[:i], params)
            materialize_rl_problems(run, params, written)
            run.materialize(names[i + 1:], params)
        else:
            run.materialize(names, params)
        counts = CurateResult({name: c.get("rows", 0) for name, c in run.row_counts.items()})
        counts.funnel = curation_funnel(run.con)
        counts.unhealthy = unhealthy_sources(run.con)
        counts.not_executed = not_executed(run.con)
        run.summary = ", ".join(f"{k}={v}" for k, v in counts.items()) + "; funnel: " + json.dumps(
            counts.funnel, default=int)
        return counts

    # CREATE OR REPLACE of the gold tables: a concurrent curate on a PostgreSQL catalog makes DuckLake refuse one
    # commit, which then re-materializes on the new state (run_stage)
    written: list = []   # gold.rl_problems files the streamed packing wrote: deleted unless the run commits
    try:
        return run_stage("curate", {"overrides": overrides}, body, lake=lake)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise


def register(sub, add_lake) -> None:
    """Add `curate` to the `factory` parser."""
    p = sub.add_parser("curate", help="test validation, pass rates, difficulty, filters, pairs (SQL transforms)")
    add_lake(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter (see factory/lake/templating.py DEFAULTS); VALUE is JSON or text")
    p.add_argument("--config", help="YAML file of parameter overrides")
    p.add_argument("--allow-unhealthy", action="store_true",
                   help="curate even though the latest `factory health` check failed")
    p.set_defaults(fn=cmd_curate)


def cmd_curate(args) -> None:
    from factory.streaming.allocator import keep_freed_memory

    keep_freed_memory()   # MB-sized strings freed and allocated row after row
    overrides = {}
    if args.config:
        import yaml
        overrides.update(yaml.safe_load(open(args.config)) or {})
    for item in args.set:
        if "=" not in item:
            raise FactoryError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = (part.strip() for part in item.split("=", 1))
        try:   # VALUE is JSON when it parses, else text
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    from factory.release.funnel import print_funnel, warn_unhealthy

    counts = curate(args.lake, overrides, allow_unhealthy=args.allow_unhealthy)
    for name, n in counts.items():
        print(f"{name:<30} {n}")
    print()
    print_funnel(counts.funnel)
    warn_unhealthy(counts.unhealthy)
    warn_not_executed(counts.not_executed)
