"""The lake and its one commit path: catalog enforcement, atomicity, time travel, concurrency, crashes."""
from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from factory.lake.catalog import default_catalog
from factory.errors import FactoryError
from factory.stages.ingest import ingest_source
from factory.lake import connect, current_snapshot, existing_columns
from factory.lake.commit import failed_runs, stage_run
from tests.lakeutil import factory_cli, query, snapshot_id


def counts(lake, snapshot=None):
    return dict(query(lake, "SELECT source, count(*) FROM silver.problems GROUP BY source", snapshot=snapshot))


def test_lake_schema_matches_catalog(full_lake):
    """Every table in the lake is declared, with exactly the declared columns, and vice versa."""
    con = connect(full_lake, read_only=True)
    live = existing_columns(con)
    con.close()
    catalog = default_catalog()
    assert set(live) == set(catalog.tables)
    for name, spec in catalog.tables.items():
        assert list(live[name]) == spec.column_names, name


def test_writes_outside_the_catalog_are_refused(empty_lake):
    with pytest.raises(FactoryError, match="not declared"):
        with stage_run("t", {}, lake=empty_lake) as run:
            run.write("silver.not_a_table", [{"a": 1}])
    with pytest.raises(FactoryError, match=r"columns \['surprise'\] are not declared"):
        with stage_run("t", {}, lake=empty_lake) as run:
            run.write("ops.runs", [{"run_id": "x", "surprise": 1}])
    with pytest.raises(FactoryError, match="NOT NULL"):
        with stage_run("t", {}, lake=empty_lake) as run:
            run.write("silver.problems", pa.table({"problem_id": [None]}, schema=pa.schema([("problem_id", pa.string())])))


def test_primary_key_is_enforced(empty_lake, shared_data):
    ingest_source("humaneval", [shared_data / "humaneval" / "HumanEval.jsonl.gz"], lake=empty_lake)
    con = connect(empty_lake, read_only=True)
    row = con.execute("SELECT * FROM silver.programs LIMIT 1").to_arrow_table()
    con.close()
    with pytest.raises(FactoryError, match="already exists"):
        with stage_run("t", {}, lake=empty_lake) as run:
            run.write("silver.programs", row.drop_columns(["run_id"]))


def test_commit_metadata_and_failed_runs(empty_lake, tmp_path):
    con = connect(empty_lake, read_only=True)
    before = current_snapshot(con)
    con.close()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a"}\n')
    with pytest.raises(FactoryError):
        ingest_source("humaneval", [bad], lake=empty_lake)
    ingest_source("humaneval", None, lake=empty_lake)
    con = connect(empty_lake, read_only=True)
    snaps = con.execute("SELECT commit_message, commit_extra_info FROM lake.snapshots() WHERE snapshot_id > ? "
                        "ORDER BY snapshot_id", [before]).fetchall()
    runs = con.execute("SELECT run_id, stage, status, config_hash, row_counts FROM ops.runs "
                       "WHERE stage = 'ingest' ORDER BY started_at").fetchall()
    con.close()
    # the failed ingest changed nothing and made no snapshot: it is in the lake's failed-runs log only
    assert [r[2] for r in runs] == ["success"] and len(snaps) == 1
    failed = failed_runs(empty_lake)
    assert [(f["stage"], f["status"]) for f in failed] == [("ingest", "failed")]
    assert "bad.jsonl" in failed[0]["message"] and json.loads(failed[0]["config"])["source"] == "humaneval"
    assert snaps[-1][0].startswith(f"ingest source=humaneval {runs[-1][0]}")
    info = json.loads(snaps[-1][1])
    assert info["run_id"] == runs[-1][0] and info["stage"] == "ingest" and info["config_hash"] == runs[-1][3]
    assert "git_sha" in info
    assert json.loads(runs[-1][4])["silver.problems"]["inserted"] == 164


def test_an_interrupt_a_library_swallowed_still_stops_before_the_commit(empty_lake):
    """The CLI's first Ctrl-C is noted as well as raised: when a broad ``except`` in a library (DuckDB's "Query
    interrupted" under a fallback) swallows the KeyboardInterrupt, the commit path raises it again and rolls the
    run back, instead of the stage going on to the end (CI: ^C echoed, all 60 programs executed, exit 0)."""
    from factory.errors import note_interrupt

    con = connect(empty_lake, read_only=True)
    before = current_snapshot(con)
    con.close()
    metric_row = pa.Table.from_pylist([{"run_id": "probe", "step": 1, "metric": "loss", "value": 1.0,
                                        "logged_at": datetime.datetime(2026, 1, 1)}])
    with pytest.raises(KeyboardInterrupt, match="SIGINT"):
        with stage_run("ingest", {"probe": 1}, lake=empty_lake) as run:
            try:
                note_interrupt("SIGINT")   # what the CLI's handler does, then raises where the main thread is
                raise KeyboardInterrupt("SIGINT")
            except BaseException:   # noqa: BLE001 - the library that swallows it
                pass
            run.write("ops.train_metrics", metric_row)
    con = connect(empty_lake, read_only=True)
    assert current_snapshot(con) == before   # rolled back: nothing of the run in the lake
    assert con.execute("SELECT count(*) FROM ops.train_metrics").fetchone()[0] == 0
    con.close()
    assert failed_runs(empty_lake) == []   # a stop asked for is not a failure
    with stage_run("ingest", {"probe": 2}, lake=empty_lake) as run:   # acted on once: the next run commits
        run.write("ops.train_metrics", metric_row)
    con = connect(empty_lake, read_only=True)
    assert con.execute("SELECT count(*) FROM ops.train_metrics").fetchone()[0] == 1
    con.close()


BAD_INPUTS = [
    ('{"task_id": "HumanEval/0", "prompt": "p"\n', "line 1|:1:", "malformed JSON"),
    ('{"task_id": "X/0", "prompt": "def f():", "entry_point": "f", "canonical_solution": "  pass"}\n', ":1:",
     "field 'test'"),
    ("", "", "empty file"),
]


@pytest.mark.parametrize("content,where,what", BAD_INPUTS, ids=["malformed", "missing-field", "empty"])
def test_bad_input_names_file_line_field_and_commits_nothing(empty_lake, tmp_path, content, where, what):
    bad = tmp_path / "HumanEval.jsonl"
    good = json.dumps({"task_id": "HumanEval/9", "prompt": "def f():\n", "entry_point": "f",
                       "canonical_solution": "    return 1\n", "test": "def check(c):\n    assert c() == 1\n"})
    bad.write_text((good + "\n" + content) if content else "")
    before = snapshot_id(empty_lake)
    proc = factory_cli("ingest", "humaneval", "--path", str(bad), lake=empty_lake)
    assert proc.returncode != 0
    assert str(bad) in proc.stderr and what in proc.stderr, proc.stderr
    if content:
        assert ":2:" in proc.stderr  # the bad record is on line 2
    assert "Traceback" not in proc.stderr
    assert counts(empty_lake) == {}
    con = connect(empty_lake, read_only=True)
    data_snaps = con.execute("SELECT count(*) FROM lake.snapshots() WHERE snapshot_id > ? AND "
                             "commit_message NOT LIKE '%failed'", [before]).fetchone()[0]
    con.close()
    assert data_snaps == 0


def test_unknown_source_and_test_format(empty_lake, tmp_path):
    proc = factory_cli("ingest", "nosuch", "--path", "x.jsonl", lake=empty_lake)
    assert proc.returncode == 2 and "unknown source 'nosuch'" in proc.stderr
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps({"id": 1, "q": "x", "t": ["assert 1"]}) + "\n")
    proc = factory_cli("ingest", "jsonl", "--path", str(f), "--map", "id=id", "--map", "question=q", "--map", "tests=t",
                       "--test-format", "fuzzy", lake=empty_lake)
    assert proc.returncode == 2 and "unknown test format 'fuzzy'" in proc.stderr


def test_time_travel_to_the_snapshot_before_an_ingest(empty_lake, shared_data):
    ingest_source("mbpp-sanitized", [shared_data / "mbpp_sanitized" / "sanitized-mbpp.json"], lake=empty_lake)
    before = snapshot_id(empty_lake)
    ingest_source("humaneval", None, lake=empty_lake)
    assert counts(empty_lake) == {"mbpp-sanitized": 427, "humaneval": 164}
    assert counts(empty_lake, snapshot=before) == {"mbpp-sanitized": 427}
    proc = factory_cli("sql", "SELECT count(*) AS n FROM silver.problems", "--snapshot", str(before),
                       "--format", "json", lake=empty_lake)
    assert json.loads(proc.stdout) == {"n": 427}


def _start_ingest(lake, shared_data):
    env = dict(os.environ, FACTORY_LAKE=str(lake))
    return subprocess.Popen([sys.executable, "-m", "factory.cli", "ingest", "humanevalplus", "--path",
                             str(shared_data / "humanevalplus" / "HumanEvalPlus.jsonl.gz")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_data_files(lake, proc, timeout=120):
    """Block until the writer has put Parquet files for silver.tests on disk (it is inside its transaction)."""
    folder = lake / "data" / "silver" / "tests"
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if folder.is_dir() and any(folder.iterdir()):
            return True
        time.sleep(0.02)
    return False


def test_reader_runs_while_an_ingest_is_writing(empty_lake, shared_data):
    ingest_source("humaneval", None, lake=empty_lake)
    writer = _start_ingest(empty_lake, shared_data)
    try:
        assert _wait_for_data_files(empty_lake, writer), writer.communicate()
        assert writer.poll() is None, "writer finished before the reader could overlap"
        proc = factory_cli("sql", "SELECT count(*) AS n FROM silver.problems", "--format", "json", lake=empty_lake)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {"n": 164}  # the uncommitted ingest is invisible
    finally:
        out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    assert counts(empty_lake) == {"humaneval": 164, "humanevalplus": 164}


def test_kill_9_during_ingest_leaves_the_lake_at_the_previous_snapshot(empty_lake, shared_data):
    ingest_source("humaneval", None, lake=empty_lake)
    before = snapshot_id(empty_lake)
    writer = _start_ingest(empty_lake, shared_data)
    assert _wait_for_data_files(empty_lake, writer), writer.communicate()
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert writer.returncode == -signal.SIGKILL
    assert snapshot_id(empty_lake) == before
    assert counts(empty_lake) == {"humaneval": 164}
    # a re-run completes (the dead writer's lock died with it)
    result = ingest_source("humanevalplus", [shared_data / "humanevalplus" / "HumanEvalPlus.jsonl.gz"],
                           lake=empty_lake)
    assert result.status == "ingested"
    assert counts(empty_lake) == {"humaneval": 164, "humanevalplus": 164}


def test_transform_view_matches_direct_query(full_lake):
    con = connect(full_lake, read_only=True)
    view = con.execute("SELECT source, problems, tests FROM gold.problem_overview ORDER BY source").fetchall()
    direct = con.execute("SELECT source, count(DISTINCT problem_id), count(test_id) FROM silver.problems "
                         "LEFT JOIN silver.tests USING (problem_id) GROUP BY source ORDER BY source").fetchall()
    con.close()
    assert view == direct


def test_cli_sql_formats_and_status(full_lake, tmp_path):
    proc = factory_cli("sql", "SELECT source, count(*) AS n FROM silver.problems GROUP BY 1 ORDER BY 1",
                       "--format", "csv", lake=full_lake)
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == 'source,n'
    out = tmp_path / "p.parquet"
    proc = factory_cli("sql", "SELECT * FROM silver.problems WHERE source = 'humaneval'", "--format", "parquet",
                       "--output", str(out), lake=full_lake)
    import pyarrow.parquet as pq
    assert proc.returncode == 0 and pq.read_table(out).num_rows == 164
    proc = factory_cli("status", lake=full_lake)
    assert "silver.problems" in proc.stdout and "last snapshots" in proc.stdout
    proc = factory_cli("shell", "--print-init", lake=full_lake)
    assert "ATTACH 'ducklake:sqlite:" in proc.stdout
    # the printed init SQL works in a plain duckdb session
    import duckdb
    con = duckdb.connect()
    for stmt in proc.stdout.strip().split(";\n"):
        con.execute(stmt.rstrip(";"))
    assert con.execute("SELECT count(*) FROM silver.problems WHERE source = 'mbpp'").fetchone()[0] == 974
