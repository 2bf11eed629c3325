"""Lake tables carry data_catalog.yaml's words (#35, #48): every column of every table and view has a one-line
description (its trailing `# ...`), and a plain DuckDB session (attached with `factory shell --print-init`) sees
each one after init, after a stage and in a release: a table column's as its column comment (duckdb_columns), a
view column's as a `column: description` line of the view's comment (duckdb_views; DuckLake keeps no column
comments on views), the release's in its manifest and card."""
from __future__ import annotations

import json
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


def _shown(lake) -> dict:
    """{(table, column): description} as plain DuckDB shows them: duckdb_columns() comments, and the
    `column: description` lines under the first line of each view's duckdb_views() comment."""
    con = _plain_duckdb(lake)
    try:
        out = {(f"{s}.{t}", c): cm for s, t, c, cm in con.execute(
            "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() "
            "WHERE database_name = 'lake' AND comment IS NOT NULL").fetchall()}
        for view, comment in con.execute("SELECT schema_name || '.' || view_name, comment FROM duckdb_views() "
                                         "WHERE database_name = 'lake'").fetchall():
            for line in (comment or "").splitlines()[1:]:
                column, _, text = line.partition(": ")
                out[(view, column)] = text
    finally:
        con.close()
    return out


def test_every_catalog_column_has_a_one_line_description():
    catalog = default_catalog()
    missing = [f"{spec.name}.{col.name}" for spec in catalog.tables.values() for col in spec.columns
               if not (col.comment or "").strip()]
    assert not missing, f"{len(missing)} catalog columns have no `# description`: {missing[:10]}"
    assert sum(len(spec.columns) for spec in catalog.tables.values()) > 500   # every entry's columns were read
    # a view's comment lists its columns (DuckLake has no column comments on views), one line each
    rl_tests = catalog["gold.rl_tests"]
    lines = rl_tests.comment.splitlines()
    assert lines[0] == rl_tests.description and len(lines) == 1 + len(rl_tests.columns)
    assert lines[-1] == f"reward: {rl_tests.columns[-1].comment}"
    assert catalog["silver.problems"].comment == catalog["silver.problems"].description


def test_catalog_comments_are_parsed_from_the_yaml_text():
    text = CATALOG_PATH.read_text()
    comments = column_comments(text)
    assert comments[("ops.runs", "status")] == "success | failed"
    assert comments[("silver.executions", "judged_in_process")].startswith("the test ran in the candidate")
    catalog = default_catalog()
    assert catalog["ops.runs"].columns[2].comment == "success | failed"
    language = next(c for c in catalog["silver.programs"].columns if c.name == "language")   # after a DEFAULT
    assert (language.default, language.comment.split(" | ")[:2]) == ("python", ["python", "cpp"])
    # every commented line under a `columns:` block is found (a parser that misses some would fail here)
    in_cols = sum(1 for block in text.split("\n    columns:\n")[1:]
                  for line in block.split("\n\n")[0].splitlines()
                  if line.startswith("      ") and not line.startswith("       ") and " # " in line.split(":", 1)[1])
    assert len(comments) == in_cols


def test_plain_duckdb_shows_every_column_description(tmp_path):
    lake = init_lake(tmp_path / "lake")
    catalog = default_catalog()
    expected = {(spec.name, col.name): col.comment for spec in catalog.tables.values() for col in spec.columns}
    assert ("gold.rl_tests", "reward") in expected and ("gold.test_validation", "valid") in expected
    shown = _shown(lake)   # after init
    missing = {k: v for k, v in expected.items() if shown.get(k) != v}
    assert not missing, list(missing.items())[:5]
    # a lake whose words are stale (made before a description changed): the next stage run, any stage, sets them
    from factory.lake import connect
    con = connect(lake)
    con.execute("COMMENT ON VIEW gold.rl_tests IS 'stale'")
    con.execute("COMMENT ON COLUMN silver.problems.question IS NULL")
    con.close()
    assert ("gold.rl_tests", "reward") not in _shown(lake)
    from factory.stages.ingest import ingest_source
    ingest_source("humaneval", None, lake=lake)
    shown = _shown(lake)
    missing = {k: v for k, v in expected.items() if shown.get(k) != v}
    assert not missing, list(missing.items())[:5]
    from factory.stages.curate import curate
    curate(lake)   # re-creates the gold views and tables (CREATE OR REPLACE): their comments must be set again
    shown = _shown(lake)
    missing = {k: v for k, v in expected.items() if shown.get(k) != v}
    assert not missing, list(missing.items())[:5]
    con = _plain_duckdb(lake)
    assert con.execute("SELECT comment FROM duckdb_columns() WHERE database_name = 'lake' AND "
                       "table_name = 'runs' AND column_name = 'status'").fetchone()[0] == "success | failed"
    described = dict(con.execute("SELECT schema_name || '.' || table_name, comment FROM duckdb_tables() "
                                 "WHERE database_name = 'lake' UNION ALL SELECT schema_name || '.' || view_name, "
                                 "comment FROM duckdb_views() WHERE database_name = 'lake'").fetchall())
    assert described["silver.problems"] == catalog["silver.problems"].description
    assert described["gold.rl_problems"] == catalog["gold.rl_problems"].description
    assert described["gold.rl_tests"].splitlines()[0] == catalog["gold.rl_tests"].description
    # setting them is idempotent: a second curate changes no comment
    before = con.execute("SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL").fetchone()[0]
    con.close()
    curate(lake)
    con = _plain_duckdb(lake)
    assert con.execute("SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL").fetchone()[0] == before
    con.close()

    from factory.release.create import create_release
    views = ["gold.rl_problems", "gold.rl_tests"]
    create_release("words-v1", views, lake=lake, releases_dir=tmp_path / "releases")
    root = tmp_path / "releases" / "words-v1"
    con = duckdb.connect()   # the release in plain DuckDB: its manifest's column_comments
    for view in views:
        got = dict(con.execute(f"SELECT key, value ->> '$' FROM read_text(?), "
                               f"json_each(content, '$.views.\"{view}\".column_comments')",
                               [str(root / "manifest.json")]).fetchall())
        assert got == {c.name: c.comment for c in catalog[view].columns}
    manifest = json.loads((root / "manifest.json").read_text())
    assert [c for c, _ in manifest["views"]["gold.rl_problems"]["columns"]] == catalog["gold.rl_problems"].column_names
    card = (root / "README.md").read_text()
    assert "### Columns of rl_tests" in card
    assert f"| reward | BOOLEAN | {catalog['gold.rl_tests'].columns[-1].comment} |" in card
