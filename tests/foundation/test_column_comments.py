"""Lake tables carry data_catalog.yaml's words (#35): every table column's trailing `# ...` is its column comment
and every table/view's description its comment, seen by a plain DuckDB session (duckdb_columns/duckdb_tables)."""
from __future__ import annotations

import subprocess
import sys

import duckdb

from factory.lake.catalog import CATALOG_PATH, column_comments, default_catalog
from tests.lakeutil import init_lake


def _plain_duckdb(lake):
    """A DuckDB connection that attached the lake with `factory shell --print-init` (no factory code in it)."""
    init = subprocess.run([sys.executable, "-m", "factory.cli", "shell", "--print-init", "--lake", str(lake)],
                          capture_output=True, text=True, check=True).stdout
    con = duckdb.connect()
    con.execute(init)
    return con


def test_catalog_comments_are_parsed_from_the_yaml_text():
    text = CATALOG_PATH.read_text()
    comments = column_comments(text)
    assert comments[("ops.runs", "status")] == "success | failed"
    assert comments[("silver.executions", "judged_in_process")].startswith("the test ran in the candidate")
    catalog = default_catalog()
    assert catalog["ops.runs"].columns[2].comment == "success | failed"
    assert not any(c.comment for c in catalog["ops.runs"].columns if c.name in ("run_id", "stage"))
    # every commented line under a `columns:` block is found (a parser that misses some would fail here)
    in_cols = sum(1 for block in text.split("\n    columns:\n")[1:]
                  for line in block.split("\n\n")[0].splitlines()
                  if line.startswith("      ") and not line.startswith("       ") and " # " in line.split(":", 1)[1])
    assert len(comments) == in_cols


def test_plain_duckdb_shows_the_catalog_comments(tmp_path):
    lake = init_lake(tmp_path / "lake")
    from factory.stages.curate import curate
    curate(lake)   # re-creates the gold tables (CREATE OR REPLACE): their comments must be set again
    con = _plain_duckdb(lake)
    live = {(f"{s}.{t}", c): cm for s, t, c, cm in con.execute(
        "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() WHERE database_name = 'lake'"
    ).fetchall()}
    catalog = default_catalog()
    expected = {(spec.name, col.name): col.comment for spec in catalog.tables.values() if spec.kind == "table"
                for col in spec.columns if col.comment}
    assert ("gold.test_validation", "valid") in expected          # a curate-made table is among them
    missing = {k: v for k, v in expected.items() if live.get(k) != v}
    assert not missing, list(missing.items())[:5]
    assert live[("ops.runs", "status")] == "success | failed"
    described = dict(con.execute("SELECT schema_name || '.' || table_name, comment FROM duckdb_tables() "
                                 "WHERE database_name = 'lake' UNION ALL SELECT schema_name || '.' || view_name, "
                                 "comment FROM duckdb_views() WHERE database_name = 'lake'").fetchall())
    assert described["silver.problems"] == catalog["silver.problems"].description
    assert described["gold.rl_problems"] == catalog["gold.rl_problems"].description
    # setting them is idempotent: a second curate changes no comment
    before = con.execute("SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL").fetchone()[0]
    con.close()
    curate(lake)
    con = _plain_duckdb(lake)
    assert con.execute("SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL").fetchone()[0] == before
