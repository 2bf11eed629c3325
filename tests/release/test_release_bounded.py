"""`factory release create` holds a bounded number of rows, not the view (#41 goal 3).

It used to run `SELECT ... ORDER BY <primary key>` per split in DuckDB: the sort (and DuckDB's streamed result,
which holds every row before the first batch is read) kept every MB-wide gold.rl_problems row in memory - 8.2 GB
at 1/8 of DeepCoder-Preview, growing with the data. Now each view streams unordered from DuckDB and is sorted
in Arrow runs of $FACTORY_RELEASE_RUN_MB, merged from disk (factory.release.ordered);
the files must stay the ones the old writer produced, row for row and byte for byte.
"""
from __future__ import annotations

import json
import random
import tempfile
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factory.lake import connect
from factory.lake.commit import stage_run
from factory.release import create_release
from factory.release.files import ROW_GROUP_BYTES
from factory.release.ordered import RUN_ENV
from tests.lakeutil import cli_peak_mb, init_lake

ROWS = 36
BIG = 4 << 20
_DIGITS = bytes(48 + (i % 10) if i % 11 else 32 for i in range(256))   # any byte -> a digit or a space


def _problem(k: int, pid: int) -> dict:
    size = BIG // 2 + (k * 97_331) % (2 * BIG)        # 2-10 MB of test input, different per row
    big = random.Random(pid).randbytes(size).translate(_DIGITS).decode()
    tests = json.dumps([{"test_id": f"t{pid}", "kind": "stdio", "code": None, "input": big, "expected": f"{pid}\n",
                         "comparison": "token", "atol": None, "rtol": None}])
    split = "test" if k % 3 == 0 else (None if k % 5 == 0 else "train")   # NULL goes to train
    return {"problem_id": f"p{pid:04d}", "source": "bigsource", "source_id": str(pid), "question": f"Sum {pid}.",
            "starter_code": None, "entry_point": None, "test_preamble": None, "test_format": "stdio",
            "difficulty_label": None, "license": "mit", "split": split,
            "prompt": f"Read the numbers and print their sum ({pid}).", "tests": tests, "n_tests": 1,
            "public_tests": None, "n_public_tests": 0, "pass_rate": 0.5, "potential": 1.0, "curriculum_stage": 1,
            "checker": None, "cpu_s": None}


def _lake(path: Path, n: int, per_commit: int = 12) -> Path:
    """n rows written in shuffled key order, 12 per commit: Parquet files (DuckLake keeps inserts of up to 10
    rows in its catalog), none in key order."""
    lake = init_lake(path)
    ids = list(range(n))
    random.Random(7).shuffle(ids)
    for start in range(0, n, per_commit):
        with stage_run("curate", {"test": "big rows", "start": start}, lake=lake) as run:
            run.write("gold.rl_problems", [_problem(k, ids[k]) for k in range(start, min(n, start + per_commit))])
    return lake


@pytest.fixture(scope="module")
def big_lake(tmp_path_factory) -> Path:
    return _lake(tmp_path_factory.mktemp("bounded") / "lake", ROWS)


def _old_writer_rows(lake: Path) -> dict[str, pa.Table]:
    """What the old writer released: per split, `SELECT <columns> ... ORDER BY problem_id` in DuckDB."""
    con = connect(lake, read_only=True)
    try:
        return {split: con.execute(f"SELECT * FROM gold.rl_problems WHERE {cond} ORDER BY problem_id")
                .to_arrow_table()
                for split, cond in (("train", "split IS DISTINCT FROM 'test'"), ("test", "split = 'test'"))}
    finally:
        con.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_release_memory_is_flat_in_the_view_size(big_lake, tmp_path):
    """12 then 36 rows of 2-10 MB (~70 then ~215 MB of tests, Parquet files not in key order), sorted in 16 MB
    runs: three times the rows add little to release create's peak (the old writer's grew with the view), and
    the files hold the old writer's rows in its order, value for value."""
    small = _lake(tmp_path / "lake-small", ROWS // 3)
    env = {RUN_ENV: "16"}
    peaks = {}
    for name, lake in (("small", small), ("big", big_lake)):
        peaks[name] = cli_peak_mb("release", "create", name, "--view", "gold.rl_problems", "--lake", str(lake),
                               "--releases-dir", str(tmp_path / "rel"), env=env)
    manifest = json.loads((tmp_path / "rel" / "big" / "manifest.json").read_text())
    view = manifest["views"]["gold.rl_problems"]
    want = _old_writer_rows(big_lake)
    assert view["splits"] == {"train": want["train"].num_rows, "test": want["test"].num_rows} \
        == {"train": 24, "test": 12}
    got = {"train": [], "test": []}
    for f in view["files"]:
        path = tmp_path / "rel" / "big" / f["path"]
        meta = pq.ParquetFile(path).metadata
        assert max(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) < 2 * ROW_GROUP_BYTES
        got[Path(f["path"]).name.split("-")[0]].append(pq.read_table(path))
    for split, table in want.items():
        released = pa.concat_tables(got[split])
        ids = released.column("problem_id").to_pylist()
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        assert released.schema.names == table.schema.names
        for name in table.schema.names:   # every value of every row, in the old order
            assert released.column(name).equals(table.column(name)), (split, name)
    # measured: +42-66 MB for 3x the rows with DuckDB's COPY into a spill file, +174-178 MB streamed from DuckDB
    # (what its multi-file scan keeps grows with the files read, then levels off: 24 -> 48 -> 96 rows here cost
    # +186 / +393 / +594 MB streamed, +185 / +351 / +417 MB with COPY); the old writer: +263-274 MB for 3x, and
    # growing with every row (sorting every row in DuckDB)
    assert peaks["big"] - peaks["small"] < 230, peaks


def test_spilled_runs_give_the_files_of_one_run(big_lake, tmp_path, monkeypatch):
    """The same view sorted as one run in memory and through 4 MB runs merged from disk: byte-identical files
    (same sha256); the spill folder is empty after."""
    spill = tmp_path / "spill" / "duckdb"
    monkeypatch.setenv("FACTORY_DUCKDB_TEMP", str(spill))
    hashes = {}
    for name, run_mb in (("one-run", "1024"), ("runs", "4")):
        monkeypatch.setenv(RUN_ENV, run_mb)
        manifest = create_release(name, ["gold.rl_problems"], lake=big_lake, releases_dir=tmp_path / "rel")
        hashes[name] = [(Path(f["path"]).name, f["rows"], f["sha256"])
                        for f in manifest["views"]["gold.rl_problems"]["files"]]
    assert hashes["one-run"] == hashes["runs"]
    assert [h[0] for h in hashes["runs"]] == ["train-00000.parquet", "test-00000.parquet"]
    assert not spill.exists()   # the spill folder (created for the sort) is removed with what it held


def test_bad_run_size_names_the_variable(big_lake, tmp_path, monkeypatch):
    from factory.errors import FactoryError

    monkeypatch.setenv(RUN_ENV, "lots")
    with pytest.raises(FactoryError, match=RUN_ENV):
        create_release("bad", ["gold.rl_problems"], lake=big_lake, releases_dir=tmp_path / "rel")
    assert not (tmp_path / "rel" / "bad").exists()


def test_sorted_runs_keep_duckdbs_types_and_order():
    """Lists, structs, maps, a TIMESTAMPTZ in a non-UTC session, dates, NULLs: the rows come back with the
    Arrow types and in the order DuckDB's ORDER BY gives (a Parquet round trip alone renames a map's fields and
    turns the time zone into UTC), from one run in memory and from 2 KB runs merged from disk."""
    import duckdb

    from factory.release.ordered import ordered_batches

    con = duckdb.connect()
    con.execute("SET TimeZone = 'Europe/Paris'")
    con.execute(f"SET temp_directory = '{tempfile.mkdtemp(prefix='release-bounded-')}'")
    sql = """SELECT CASE WHEN i % 17 = 0 THEN NULL ELSE 'k' || ((i * 7919) % 100) END AS k, i % 2 AS r,
                    [i, i + 1] AS l, {'a': i, 'b': 'v' || i} AS st, MAP {'m': i} AS mp,
                    TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) HOUR AS tz, DATE '2024-01-01' + i::INTEGER AS d,
                    CASE WHEN i % 10 = 0 THEN NULL ELSE i * 1.5 END AS f, repeat('x', i * 40) AS wide
             FROM range(100) t(i)"""
    want = con.execute(sql + " ORDER BY r, k, d").to_arrow_table()
    for run_bytes in (1 << 30, 2048):
        schema, batches = ordered_batches(con, sql, ["r", "k", "d"], run_bytes=run_bytes)
        got = pa.Table.from_batches(list(batches), schema=schema)
        assert got.schema == want.schema
        assert got.equals(want), run_bytes
