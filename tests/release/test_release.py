"""Releases: creation from a frozen snapshot, verification, diff, immutability, time-travel reproduction."""
from __future__ import annotations

import json
import os
import shutil
import stat

import datasets
import duckdb
import pyarrow.parquet as pq
import pytest

from factory.errors import FactoryError
from factory.lake import connect
from factory.release import (
    create_release, diff_releases, list_releases, reproduce_release, show_release, verify_release,
)
from factory.release.files import sha256_file
from factory.lake.commit import failed_runs, stage_run

from .conftest import VIEWS, factory_cli


def lake_counts(lake, snapshot):
    con = connect(lake, snapshot=snapshot)
    try:
        return {v: con.execute(f"SELECT count(*) FROM {v}").fetchone()[0] for v in VIEWS}
    finally:
        con.close()


def test_release_layout_and_manifest(releases):
    r1, path = releases.r1, releases.root / "r1"
    assert r1["snapshot_id"] >= 1
    # rows equal the lake's at the frozen snapshot, and humaneval + mbpp-sanitized are all there
    assert {v: i["rows"] for v, i in r1["views"].items()} == lake_counts(releases.lake, r1["snapshot_id"])
    assert r1["views"]["gold.rm_pairs"]["rows"] == len(releases.pair_ids)
    assert r1["views"]["gold.rl_problems"]["rows"] > 164 + 400
    # HumanEval and sanitized MBPP are benchmarks: every rl_problems row is in the test split (test-*.parquet)
    shards = sorted((path / "data" / "rl_problems").glob("test-*.parquet"))
    assert len(shards) == len(r1["views"]["gold.rl_problems"]["files"]) >= 3  # shard_rows=200
    assert [s.name for s in shards][:2] == ["test-00000.parquet", "test-00001.parquet"]
    assert r1["views"]["gold.rl_problems"]["splits"] == {"test": r1["views"]["gold.rl_problems"]["rows"]}
    manifest = json.loads((path / "manifest.json").read_text())
    for f in manifest["files"]:
        assert sha256_file(path / f["path"]) == f["sha256"]
    assert manifest["packages"]["duckdb"] == duckdb.__version__
    assert manifest["packages"]["datasketch_scheme"] == "affine32"
    assert manifest["source_licenses"]["humaneval"] == ["MIT"]
    assert {r["stage"] for r in manifest["stage_runs"]} >= {"init", "ingest", "curate"}
    cols = dict(map(tuple, manifest["views"]["gold.rl_problems"]["columns"]))
    assert cols["problem_id"] == "VARCHAR" and cols["n_tests"] == "BIGINT"
    # deterministic order: primary key
    ids = [pq.read_table(s, columns=["problem_id"]).column(0).to_pylist() for s in shards]
    flat = [i for part in ids for i in part]
    assert flat == sorted(flat) and len(ids[0]) == 200


def test_datasets_sees_real_splits(releases):
    """r2 adds APPS (a training source): `datasets` loads rl_problems as train + test, test rows only in test."""
    r2 = releases.r2["views"]["gold.rl_problems"]
    assert r2["splits"]["train"] == releases.apps_rl_rows and r2["splits"]["test"] == r2["rows"] - releases.apps_rl_rows
    ds = datasets.load_dataset(str(releases.root / "r2"), "rl_problems")
    assert set(ds) == {"train", "test"}
    assert ds["train"].num_rows == releases.apps_rl_rows and set(ds["train"]["source"]) == {"apps"}
    assert set(ds["test"]["split"]) == {"test"} and set(ds["test"]["source"]) == {"humaneval", "mbpp-sanitized"}
    card = (releases.root / "r2" / "README.md").read_text()
    assert "## What curation kept out" in card and "| apps |" in card


def test_release_is_recorded_and_read_only(releases):
    con = connect(releases.lake, read_only=True)
    rows = dict(con.execute("SELECT name, snapshot_id FROM ops.releases").fetchall())
    sha = con.execute("SELECT manifest_sha256 FROM ops.releases WHERE name = 'r1'").fetchone()[0]
    con.close()
    assert rows == {"r1": releases.r1["snapshot_id"], "r2": releases.r2["snapshot_id"]}
    assert sha == sha256_file(releases.root / "r1" / "manifest.json")
    shard = releases.root / "r1" / releases.r1["views"]["gold.rl_problems"]["files"][0]["path"]
    assert not os.stat(shard).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert not list(releases.root.glob(".r*"))  # no temp folder left behind


def test_release_loads_with_datasets(releases, tmp_path):
    path = releases.root / "r1"
    # file names carry the split, so even the plain parquet loader sees it (r1 is benchmarks only: test)
    ds = datasets.load_dataset("parquet", data_dir=str(path / "data" / "rl_problems"), split="test",
                               cache_dir=str(tmp_path / "a"))
    assert ds.num_rows == releases.r1["views"]["gold.rl_problems"]["rows"]
    assert {"problem_id", "question", "tests", "license"} <= set(ds.column_names)
    json.loads(ds[0]["tests"])
    # the dataset card's YAML configs drive the HF loader too
    pairs = datasets.load_dataset(str(path), "rm_pairs", split="train", cache_dir=str(tmp_path / "b"))
    assert sorted(pairs["pair_id"]) == sorted(releases.pair_ids)
    card = (path / "README.md").read_text()
    assert card.startswith("---\n") and "config_name: rl_problems" in card and "| humaneval | MIT |" in card


def test_verify_ok_and_cli(releases):
    assert verify_release("r1", releases_dir=releases.root)["files"] == len(releases.r1["files"])
    out = factory_cli("release", "verify", "r2", lake=releases.lake, releases=releases.root)
    assert out.returncode == 0 and "r2 OK" in out.stdout, out.stderr
    out = factory_cli("release", "list", lake=releases.lake, releases=releases.root)
    assert out.returncode == 0 and "r1" in out.stdout and "r2" in out.stdout and "lake+dir" in out.stdout
    out = factory_cli("release", "show", "r1", lake=releases.lake, releases=releases.root)
    assert f"snapshot {releases.r1['snapshot_id']}" in out.stdout and "gold.rm_pairs" in out.stdout
    assert "gold.rl_problems" in show_release("r2", releases_dir=releases.root)
    assert [r["name"] for r in list_releases(lake=releases.lake, releases_dir=releases.root)] == ["r1", "r2"]


@pytest.fixture
def r1_copy(releases, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(releases.root / "r1", root / "r1")
    return root


def _writable(path):
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o644)
    return path


def test_verify_detects_a_flipped_byte(releases, r1_copy):
    rel = releases.r1["views"]["gold.rl_problems"]["files"][1]["path"]
    shard = _writable(r1_copy / "r1" / rel)
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    with pytest.raises(FactoryError, match=rel):
        verify_release("r1", releases_dir=r1_copy)
    out = factory_cli("release", "verify", "r1", lake=releases.lake, releases=r1_copy)
    assert out.returncode == 2 and rel in out.stderr and "sha256" in out.stderr


def test_verify_detects_missing_and_extra_files(releases, r1_copy):
    rel = releases.r1["views"]["gold.rm_pairs"]["files"][0]["path"]
    _writable(r1_copy / "r1" / rel).unlink()
    (r1_copy / "r1" / "data" / "rl_problems").chmod(0o755)
    (r1_copy / "r1" / "data" / "rl_problems" / "test-00099.parquet").write_bytes(b"x")
    with pytest.raises(FactoryError) as err:
        verify_release("r1", releases_dir=r1_copy)
    assert f"{rel}: missing" in str(err.value)
    assert "test-00099.parquet: not in the manifest" in str(err.value)


def test_diff_reports_added_rows(releases):
    d = diff_releases("r1", "r2", releases_dir=releases.root)
    rl = d["gold.rl_problems"]
    assert rl["added"] == releases.apps_rl_rows > 0
    assert (rl["removed"], rl["changed"], rl["schema_changed"]) == (0, 0, False)
    assert rl["rows_b"] - rl["rows_a"] == releases.apps_rl_rows
    assert d["gold.rm_pairs"]["added"] == d["gold.rm_pairs"]["removed"] == 0
    out = factory_cli("release", "diff", "r1", "r2", lake=releases.lake, releases=releases.root)
    assert out.returncode == 0 and f"+{releases.apps_rl_rows} added" in out.stdout


def test_diff_verifies_first_and_sets_provenance_apart(releases, r1_copy, tmp_path):
    # a byte-flipped release is refused, as verify and export refuse it
    shutil.copytree(releases.root / "r2", r1_copy / "r2")
    shard = _writable(r1_copy / "r1" / releases.r1["views"]["gold.rl_problems"]["files"][0]["path"])
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(FactoryError, match="release 'r1' does not verify"):
        diff_releases("r1", "r2", releases_dir=r1_copy)
    # the same pairs written again by a later run: only run_id differs -> not "changed"
    from tests.release.conftest import add_pairs
    add_pairs(releases.lake)
    root = tmp_path / "rel"
    shutil.copytree(releases.root / "r1", root / "r1")
    create_release("r1-again", ["gold.rm_pairs"], lake=releases.lake, releases_dir=root)
    with stage_run("curate", {"test": "drop pairs again"}, lake=releases.lake) as run:
        run.delete("gold.rm_pairs", "true")
    d = diff_releases("r1", "r1-again", releases_dir=root)["gold.rm_pairs"]
    assert (d["added"], d["removed"], d["changed"]) == (0, 0, 0)
    assert d["provenance_only"] == len(releases.pair_ids) and d["provenance_columns"] == ["run_id"]
    out = factory_cli("release", "diff", "r1", "r1-again", lake=releases.lake, releases=root)
    assert out.returncode == 0 and "verified" in out.stdout and "differ only in provenance (run_id)" in out.stdout


def test_reproduce_from_snapshot_after_later_changes(releases, tmp_path):
    # the lake has moved on: apps ingested, pairs deleted; r1's snapshot still yields identical bytes
    now = lake_counts(releases.lake, None)
    assert now["gold.rm_pairs"] == 0
    assert now["gold.rl_problems"] != releases.r1["views"]["gold.rl_problems"]["rows"]
    r = reproduce_release("r1", tmp_path / "again", lake=releases.lake, releases_dir=releases.root)
    assert r["identical"], r
    assert r["files"] == sum(len(v["files"]) for v in releases.r1["views"].values())
    out = factory_cli("release", "reproduce", "r2", "--out", str(tmp_path / "again2"), lake=releases.lake,
                      releases=releases.root)
    assert out.returncode == 0 and "byte-identical" in out.stdout, out.stderr


def test_reproduce_detects_a_different_snapshot(releases, tmp_path, r1_copy):
    manifest_path = _writable(r1_copy / "r1" / "manifest.json")
    manifest = json.loads(manifest_path.read_text())
    manifest["snapshot_id"] = releases.r2["snapshot_id"]
    manifest_path.write_text(json.dumps(manifest))
    r = reproduce_release("r1", tmp_path / "other", lake=releases.lake, releases_dir=r1_copy)
    assert not r["identical"] and any(p.startswith("data/rl_problems/") for p in r["mismatches"])


def test_bad_input_is_a_factory_error(releases, tmp_path):
    with pytest.raises(FactoryError, match="already exists"):
        create_release("r1", VIEWS, lake=releases.lake, releases_dir=releases.root)
    with pytest.raises(FactoryError, match="not declared"):
        create_release("r9", ["gold.nope"], lake=releases.lake, releases_dir=releases.root)
    with pytest.raises(FactoryError, match="unknown release"):
        verify_release("nope", releases_dir=releases.root)
    with pytest.raises(FactoryError, match="bad release name"):
        create_release("../x", VIEWS, lake=releases.lake, releases_dir=releases.root)
    out = factory_cli("release", "create", "r2", "--view", "gold.rl_problems", lake=releases.lake,
                      releases=releases.root)
    assert out.returncode == 2 and "already exists" in out.stderr
    assert not (releases.root / "r9").exists()


def test_recorded_name_without_folder_is_refused(releases, tmp_path):
    # r1 is in ops.releases; a fresh releases dir must not let the name be reused
    with pytest.raises(FactoryError, match="already recorded"):
        create_release("r1", VIEWS, lake=releases.lake, releases_dir=tmp_path / "elsewhere")
    assert not (tmp_path / "elsewhere" / "r1").exists()


def test_failed_commit_leaves_no_folder(releases, tmp_path, monkeypatch):
    from contextlib import contextmanager

    import factory.release.create as create_mod

    real = create_mod.stage_run

    @contextmanager
    def commit_fails(*args, **kw):
        with real(*args, **kw) as run:
            yield run
            raise RuntimeError("simulated commit failure")

    monkeypatch.setattr(create_mod, "stage_run", commit_fails)
    root = tmp_path / "rel"
    with pytest.raises(RuntimeError, match="simulated"):
        create_release("r-fail", VIEWS, lake=releases.lake, releases_dir=root)
    assert list(root.iterdir()) == []  # neither the release nor its temp folder
    con = connect(releases.lake, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM ops.releases WHERE name = 'r-fail'").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM ops.runs WHERE stage = 'release' AND status = 'failed'"
                           ).fetchone()[0] == 0  # failed runs make no snapshot ...
        assert any(r["stage"] == "release" and "simulated" in r["message"]
                   for r in failed_runs(releases.lake))  # ... they are logged beside the catalog
    finally:
        con.close()
