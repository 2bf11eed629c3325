"""`factory status` reads the DuckLake catalog alone (#43: 12-22 s and ~1 GB on the demo lake when it counted every
gold view through DuckDB): its row counts are DuckDB's count(*) on every table -- Parquet files, delete files and
rows DuckLake inlined into the catalog -- and the CLI imports no DuckDB to print them."""
from __future__ import annotations

import subprocess
import sys
import time

from factory.lake import connect
from factory.lake.status import lake_status
from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake


def _counts_through_duckdb(lake) -> dict[str, int]:
    con = connect(lake, read_only=True)
    try:
        names = [r[0] for r in con.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables WHERE table_catalog = 'lake' "
            "AND table_type = 'BASE TABLE'").fetchall()]
        return {n: con.execute(f"SELECT count(*) FROM {n}").fetchone()[0] for n in names}
    finally:
        con.close()


def test_row_counts_are_duckdbs_after_inserts_and_deletes(tmp_path):
    lake = init_lake(tmp_path / "lake")
    ingest_source("humaneval", None, lake=lake)             # Parquet files (164 problems, their tests)
    con = connect(lake)
    # deletes of file rows (delete files) and inserted-then-deleted inlined rows
    con.execute("DELETE FROM silver.tests WHERE problem_id IN (SELECT problem_id FROM silver.problems LIMIT 7)")
    con.execute("DELETE FROM silver.problems WHERE problem_id IN (SELECT problem_id FROM silver.problems LIMIT 7)")
    con.execute("DELETE FROM ops.runs WHERE stage = 'init'")   # an inlined row, deleted
    con.close()
    st = lake_status(lake)
    counted = {name: n for name, kind, n in st["objects"] if kind == "table"}
    through_duckdb = _counts_through_duckdb(lake)
    assert counted == through_duckdb
    assert counted["silver.problems"] == 157 and counted["bronze.raw_records"] == 164
    assert counted["ops.runs"] == 1                           # init + ingest, inlined; init's deleted
    views = {name for name, kind, _ in st["objects"] if kind == "view"}
    assert {"gold.problem_overview", "gold.clean_problems"} <= views
    # the three deletes above are commits of no stage; before them, ingest and init
    assert [info.get("stage") for _sid, _ts, _msg, info in st["snapshots"]][:5] == [None, None, None, "ingest", "init"]


def test_cli_status_imports_no_duckdb_and_names_a_missing_lake(tmp_path):
    lake = init_lake(tmp_path / "lake")
    ingest_source("humaneval", None, lake=lake)
    code = ("import sys; from factory.cli import main; rc = main(['status', '--lake', sys.argv[1]]); "
            "assert 'duckdb' not in sys.modules, 'status imported duckdb'; sys.exit(rc)")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(lake)], capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert any(line.split()[:3] == ["silver.problems", "table", "164"] for line in lines), out.stdout
    assert any(line.split()[:3] == ["gold.clean_problems", "view", "-"] for line in lines), out.stdout
    assert "ingest-" in out.stdout.split("last runs:")[1] and "last snapshots" in out.stdout
    print(f"factory status: {wall:.2f}s wall (python start included)")
    missing = subprocess.run([sys.executable, "-m", "factory.cli", "status", "--lake", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no lake at" in missing.stderr
