"""Releases and exports stream their rows (#41 goal 3): memory holds a row group, not the view.

`factory release create` used to hold a whole shard (50,000 rows: every row of gold.rl_problems at DeepCoder's
size, 6.5 GB peak at 1/32) before writing it, and `factory export` read every released row into a list of dicts,
built the output rows as another list and wrote one table (7.7 GB at 1/32). Now the release writes byte-bounded
row groups as they fill (factory.release.files.ShardWriter) and the verl / trl-grpo / openrlhf / trl exports
read the release a batch at a time in primary-key order (a merge of the sorted train and test shards) and write
a row group at a time (factory.release.export_stream), with the same rows in the same order.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factory.release import create_release
from factory.release.locate import load_manifest
from factory.release.export import _schema_for, build_export
from factory.release.export_stream import streamable, write_streamed
from factory.release.files import ROW_GROUP_BYTES
from tests.lakeutil import cli_peak_mb, init_lake

BIG = 4 << 20
ROWS = 24


def test_streamed_export_equals_the_in_memory_build(releases, tmp_path):
    """r2 (HumanEval + MBPP + APPS, shards of 200 rows, train and test splits): every streamed format gives the
    rows build_export gives, file for file, in order (extra_info.index included)."""
    path, manifest = load_manifest("r2", releases.root)
    assert len(manifest["views"]["gold.rl_problems"]["files"]) > 2   # several shards and both splits to merge
    for fmt in ("verl", "trl-grpo", "openrlhf", "trl"):
        assert streamable(manifest, fmt)
        built = {rel: rows for rel, rows in build_export(path, manifest, fmt).items() if rows}
        out = tmp_path / fmt
        counts = write_streamed(path, manifest, fmt, out, _schema_for)
        assert counts == {rel: len(rows) for rel, rows in built.items()}, fmt
        for rel, rows in built.items():
            want = pa.Table.from_pylist(rows, schema=_schema_for(fmt, rel)).to_pylist()
            assert pq.read_table(out / rel).to_pylist() == want, (fmt, rel)


def _big_problem(k: int) -> dict:
    big = " ".join(str(10 ** 8 + k * 7 + i) for i in range(BIG // 10))
    tests = json.dumps([{"test_id": f"t{k}", "kind": "stdio", "code": None, "input": big, "expected": f"{k}\n",
                         "comparison": "token", "atol": None, "rtol": None}])
    return {"problem_id": f"p{k:04d}", "source": "bigsource", "source_id": str(k), "question": f"Sum {k}.",
            "starter_code": None, "entry_point": None, "test_preamble": None, "test_format": "stdio",
            "difficulty_label": None, "license": "mit", "split": "test" if k % 3 == 0 else "train",
            "prompt": f"Read the numbers and print their sum ({k}).", "tests": tests, "n_tests": 1,
            "public_tests": None, "n_public_tests": 0, "pass_rate": 0.5, "potential": 1.0, "curriculum_stage": 1,
            "checker": None, "cpu_s": None}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_export_of_mb_rows_holds_a_batch_not_the_release(tmp_path):
    """24 gold.rl_problems rows with a 4 MB test each (96 MB of tests): the verl export peaks far below the
    release's size over a process that exports a 1-row release."""
    from factory.lake.commit import stage_run

    sizes = {}
    for name, n in (("one", 1), ("big", ROWS)):
        lake = init_lake(tmp_path / f"lake-{name}")
        with stage_run("curate", {"test": "big rows"}, lake=lake) as run:
            for k in range(n):   # a row at a time: the fixture itself stays small
                run.write("gold.rl_problems", [_big_problem(k)])
        root = tmp_path / f"rel-{name}"
        manifest = create_release(name, ["gold.rl_problems"], lake=lake, releases_dir=root)
        files = manifest["views"]["gold.rl_problems"]["files"]
        if n == ROWS:   # row groups bounded by bytes: the release's 96 MB are not one row group
            meta = [pq.ParquetFile(root / name / f["path"]).metadata for f in files]
            assert max(m.row_group(i).total_byte_size for m in meta for i in range(m.num_row_groups)) \
                < 2 * ROW_GROUP_BYTES
        sizes[name] = cli_peak_mb("export", name, "--format", "verl", "--out", str(tmp_path / f"verl-{name}"),
                               "--lake", str(lake), "--releases-dir", str(root))
    got = pq.read_table(tmp_path / "verl-big" / "train.parquet")
    assert got.num_rows == ROWS - ROWS // 3
    truth = json.loads(got.column("reward_model")[0].as_py()["ground_truth"])
    assert len(truth["inputs"][0]) >= BIG - 16
    # measured: +132 MB over the 1-row export (the in-memory export: +537 MB, the rows held ~5 times)
    assert sizes["big"] - sizes["one"] < 260, sizes


def test_a_big_export_is_loaded_by_datasets_on_its_first_row_groups(tmp_path, monkeypatch):
    """`datasets` holds about the bytes it converts (a 3 GB verl file at 1/4 of DeepCoder: 3.5 GB), so a file
    past $FACTORY_EXPORT_DATASETS_CHECK_MB is checked on its first row groups; smaller files stay loaded whole."""
    from factory.lake.commit import stage_run
    from factory.release.export import validate_export

    lake = init_lake(tmp_path / "lake")
    with stage_run("curate", {"test": "big rows"}, lake=lake) as run:
        for k in range(9):
            run.write("gold.rl_problems", [_big_problem(k)])
    create_release("big", ["gold.rl_problems"], lake=lake, releases_dir=tmp_path / "rel")
    out = tmp_path / "verl"
    r = subprocess.run([sys.executable, "-m", "factory.cli", "export", "big", "--format", "verl", "--out", str(out),
                        "--lake", str(lake), "--releases-dir", str(tmp_path / "rel")], capture_output=True,
                       text=True, timeout=600, env={**os.environ, "FACTORY_EXPORT_DATASETS_CHECK_MB": "6"})
    assert r.returncode == 0, r.stderr[-2000:]
    train = pq.ParquetFile(out / "train.parquet").metadata
    assert train.num_rows == 6 and train.num_row_groups > 1   # 4 MB rows: several 16 MB-bounded row groups
    import re
    checked = int(re.search(r"(\d+) rows of train\.parquet", r.stdout.split("datasets loaded the first ", 1)[1])[1])
    assert 1 <= checked < 6, r.stdout   # a prefix of whole row groups (at least one)
    assert "pyarrow checked every row" in r.stdout
    monkeypatch.setenv("FACTORY_EXPORT_DATASETS_CHECK_MB", "1024")
    whole = validate_export(out, "verl")
    assert whole["loader"] == "datasets" and "datasets_checked_rows" not in whole
    monkeypatch.setenv("FACTORY_EXPORT_DATASETS_CHECK_MB", "lots")
    with pytest.raises(Exception, match="FACTORY_EXPORT_DATASETS_CHECK_MB"):
        validate_export(out, "verl")

