"""The per-call fixed cost of the lake, without giving up a check: a stage run skips the schema sync only while the
lake is exactly as a sync of this catalog left it, and an extension file's signature is checked once per process
only while the file is unchanged."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

import factory.lake.connection as connection
from factory.lake import connect, existing_columns
from factory.lake.catalog import default_catalog
from factory.lake.commit import SCHEMA_MARK, stage_run
from tests.lakeutil import init_lake


def _noop_run(lake, catalog=None) -> list[str]:
    with stage_run("probe", {}, lake=lake, catalog=catalog) as run:
        run.noop = True
        return run.schema_changes


def test_schema_sync_skipped_only_while_the_lake_is_as_synced(tmp_path):
    lake = init_lake(tmp_path / "lake")
    mark = json.loads((lake / SCHEMA_MARK).read_text())
    assert mark["catalog"] == default_catalog().fingerprint
    assert _noop_run(lake) == []

    # someone drops a declared column with plain DuckDB: DuckLake's schema_version moves, the next run re-adds it
    con = connect(lake)
    con.execute("ALTER TABLE silver.problems DROP COLUMN starter_code")
    con.close()
    with stage_run("probe", {}, lake=lake) as run:
        assert "added silver.problems.starter_code" in run.schema_changes
    con = connect(lake, read_only=True)
    assert "starter_code" in existing_columns(con)["silver.problems"]
    con.close()

    # another catalog (another code version) never trusts this catalog's mark
    other = replace(default_catalog(), fingerprint="another-catalog")
    with stage_run("probe", {}, lake=lake, catalog=other) as run:
        run.noop = True
    assert json.loads((lake / SCHEMA_MARK).read_text())["catalog"] == "another-catalog"

    # a lost or garbled mark only means one more sync
    (lake / SCHEMA_MARK).write_text("{not json")
    assert _noop_run(lake) == []
    assert json.loads((lake / SCHEMA_MARK).read_text())["catalog"] == default_catalog().fingerprint


def _allows_unsigned(con) -> bool:
    return con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()[0] in (True, "true")


def test_extension_signature_checked_again_when_the_file_changes(tmp_path, monkeypatch):
    if not connection.extension_paths():
        pytest.skip("extensions are not pip-packaged here")
    lake = init_lake(tmp_path / "lake")
    monkeypatch.setattr(connection, "_VERIFIED", {})
    monkeypatch.setattr(connection, "VERIFIED_RECORD", tmp_path / "cache" / "verified-extensions.json")
    first = connect(lake, read_only=True)
    assert not _allows_unsigned(first)   # DuckDB checks the signatures
    first.close()
    second = connect(lake, read_only=True)
    assert _allows_unsigned(second)      # same files, already checked in this process
    assert second.execute("SELECT count(*) FROM silver.problems").fetchone() == (0,)
    second.close()
    path = next(iter(connection._VERIFIED))
    dev, ino, size, mtime = connection._VERIFIED[path]
    connection._VERIFIED[path] = (dev, ino, size, mtime - 1)   # as if the file were replaced since
    third = connect(lake, read_only=True)
    assert not _allows_unsigned(third)
    third.close()
    # a later process (nothing verified in it yet) trusts the record DuckDB's own checks wrote, this user's only
    monkeypatch.setattr(connection, "_VERIFIED", {})
    record = connection.VERIFIED_RECORD
    assert record.stat().st_mode & 0o077 == 0 and set(json.loads(record.read_text())) == set(map(str, (
        connection.extension_paths().values())))
    later = connect(lake, read_only=True)
    assert _allows_unsigned(later)
    later.close()
    monkeypatch.setattr(connection, "_VERIFIED", {})
    record.chmod(0o622)                  # writable by others: not trusted, DuckDB checks again
    assert not _allows_unsigned(again := connect(lake, read_only=True))
    again.close()
    monkeypatch.setattr(connection, "_VERIFIED", {})
    record.chmod(0o600)
    entries = json.loads(record.read_text())
    record.write_text(json.dumps({k: [v[0], v[1], v[2] + 1, v[3]] for k, v in entries.items()}))
    assert not _allows_unsigned(changed := connect(lake, read_only=True))   # the files are not the recorded ones
    changed.close()
