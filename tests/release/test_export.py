"""Exports from a release: each format loads back with `datasets` and matches its documented schema."""
from __future__ import annotations

import json
import subprocess
import sys

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factory.errors import FactoryError
from factory.release.export import MESSAGES, export_release, validate_export

from .conftest import factory_cli


def load(path, tmp_path):
    return datasets.load_dataset("parquet", data_files={"train": str(path)}, split="train",
                                 cache_dir=str(tmp_path / "hf"))


def test_verl(releases, tmp_path):
    out = tmp_path / "verl"
    meta = export_release("r2", "verl", out, releases_dir=releases.root)
    assert meta["validation"]["loader"] == "datasets"
    rows = releases.r2["views"]["gold.rl_problems"]["rows"]
    assert sum(meta["files"].values()) == rows and set(meta["files"]) == {"train.parquet", "test.parquet"}
    schema = pq.read_schema(out / "train.parquet")
    assert schema.field("prompt").type == MESSAGES
    assert schema.field("reward_model").type == pa.struct([("style", pa.string()), ("ground_truth", pa.string())])
    by_source, splits, apps = {}, {}, []
    for name in ("train", "test"):
        for r in load(out / f"{name}.parquet", tmp_path):
            by_source.setdefault(r["data_source"], r)
            splits.setdefault(r["data_source"], set()).add(name)
            if r["data_source"] == "apps":
                apps.append(json.loads(r["reward_model"]["ground_truth"]))
    assert set(by_source) == {"humaneval", "mbpp-sanitized", "apps"}
    assert splits["humaneval"] == {"test"}  # all of HumanEval is split 'test' -> test.parquet
    he = by_source["humaneval"]
    assert he["ability"] == "code" and he["prompt"][0]["role"] == "user"
    assert he["reward_model"]["style"] == "rule"
    gt = json.loads(he["reward_model"]["ground_truth"])
    assert gt["tests"] and gt["assert_case"][0].startswith(f"assert {he['extra_info']['entry_point']}(")
    # verl/prime APPS shape, plus the release's reward spec (a plain release: soft, hidden tests)
    assert all(g["reward"] == {"kind": "soft", "tests": "hidden"} for g in apps)
    stdio = [g for g in apps if set(g) - {"public_tests"} == {"inputs", "outputs", "reward"}]
    call = [g for g in apps if set(g) - {"public_tests"} == {"inputs", "outputs", "fn_name", "reward"}]
    assert stdio and len(stdio) + len(call) == len(apps) == releases.apps_rl_rows
    assert all(len(g["inputs"]) == len(g["outputs"]) > 0 and isinstance(g["inputs"][0], str) for g in stdio)
    assert all(isinstance(g["inputs"][0], list) for g in call)
    assert he["extra_info"]["problem_id"] and he["extra_info"]["split"] == "test"


def test_trl_pairs_and_grpo(releases, tmp_path):
    meta = export_release("r1", "trl", tmp_path / "trl", releases_dir=releases.root)
    assert meta["files"] == {"train.parquet": len(releases.pair_ids)}
    ds = load(tmp_path / "trl" / "train.parquet", tmp_path)
    row = ds[0]
    assert row["prompt"][0]["role"] == "user"
    assert row["chosen"][0]["role"] == row["rejected"][0]["role"] == "assistant"
    assert row["margin"] == 1.0 and "return None" in row["rejected"][0]["content"]

    meta = export_release("r1", "trl-grpo", tmp_path / "grpo", releases_dir=releases.root)
    # r1 holds HumanEval + sanitized MBPP: both are decontamination benchmarks, so nothing reaches a train split
    assert set(meta["files"]) == {"test.parquet"}
    ds = load(tmp_path / "grpo" / "test.parquet", tmp_path)
    assert {"prompt", "ground_truth"} <= set(ds.column_names) and ds.num_rows == meta["files"]["test.parquet"]
    assert set(ds["split"]) == {"test"}
    assert isinstance(ds[0]["prompt"], list) and json.loads(ds[0]["ground_truth"])


def test_openrlhf(releases, tmp_path):
    out = tmp_path / "orlhf"
    meta = export_release("r2", "openrlhf", out, releases_dir=releases.root)
    assert meta["files"]["rm/train.parquet"] == len(releases.pair_ids)
    rm = load(out / "rm" / "train.parquet", tmp_path)
    # chat messages, so OpenRLHF's --data.apply_chat_template works; prompt and reply stay apart
    assert {"prompt", "chosen", "rejected", "margin"} <= set(rm.column_names)
    assert rm[0]["prompt"][0]["role"] == "user" and rm[0]["chosen"][0]["role"] == "assistant"
    prompts = load(out / "prompts" / "test.parquet", tmp_path)
    assert {"input", "label", "datasource"} <= set(prompts.column_names)
    assert prompts[0]["input"][0]["role"] == "user" and json.loads(prompts[0]["label"])
    assert set(prompts["datasource"]) == {"humaneval", "mbpp-sanitized"}
    train = load(out / "prompts" / "train.parquet", tmp_path)
    assert set(train["datasource"]) == {"apps"}


def test_hf_format_has_configs_and_real_splits(releases, tmp_path):
    import datasets
    out = tmp_path / "hf"
    meta = export_release("r2", "hf", out, releases_dir=releases.root)
    assert meta["configs"]["rl_problems"] == {"train": releases.apps_rl_rows,
                                              "test": releases.r2["views"]["gold.rl_problems"]["rows"]
                                              - releases.apps_rl_rows}
    ds = datasets.load_dataset(str(out), "rl_problems", cache_dir=str(tmp_path / "c"))
    assert set(ds) == {"train", "test"} and set(ds["test"]["split"]) == {"test"}
    assert ds["train"][0]["prompt"] and "Write a complete Python solution" in ds["train"][0]["prompt"]
    pairs = datasets.load_dataset(str(out), "rm_pairs", cache_dir=str(tmp_path / "c"))
    assert pairs["train"].num_rows == len(releases.pair_ids)
    assert (out / "README.md").read_text().startswith("---\n")


def test_acecode(releases, tmp_path):
    out = tmp_path / "ace"
    meta = export_release("r2", "acecode", out, releases_dir=releases.root)
    ds = load(out / "train.parquet", tmp_path)
    assert set(ds.column_names) == {"id", "source", "question", "test_cases", "inferences", "context_messages"}
    assert "apps" not in set(ds["source"])  # stdio tests are not assert-convertible
    assert ds.num_rows == meta["files"]["train.parquet"] > 500
    with_inf = [r for r in ds if r["inferences"]]
    assert len(with_inf) == len(releases.pair_ids)
    inf = with_inf[0]["inferences"]
    assert {i["pass_rate"] for i in inf} == {0.0, 1.0} and [i["completion_id"] for i in inf] == [0, 1]
    for r in ds:
        for c in r["test_cases"]:
            compile(c, "<test_case>", "exec")
            assert "assert" in c
    # the converted test cases really test: the chosen reference passes them all, the stub fails
    for r in with_inf:
        by_rate = {i["pass_rate"]: i["completion"] for i in r["inferences"]}
        script = "\n\n".join(r["test_cases"])
        ok = subprocess.run([sys.executable, "-c", by_rate[1.0] + "\n\n" + script], capture_output=True, timeout=60)
        bad = subprocess.run([sys.executable, "-c", by_rate[0.0] + "\n\n" + script], capture_output=True, timeout=60)
        assert ok.returncode == 0, ok.stderr
        assert bad.returncode != 0 and b"AssertionError" in bad.stderr


def test_validate_export_rejects_a_wrong_schema(releases, tmp_path):
    out = tmp_path / "trl"
    export_release("r1", "trl", out, releases_dir=releases.root)
    table = pq.read_table(out / "train.parquet")
    bad = table.set_column(table.schema.get_field_index("chosen"), "chosen",
                           pa.array([str(x) for x in table.column("chosen").to_pylist()]))
    pq.write_table(bad, out / "train.parquet")
    with pytest.raises(FactoryError, match="chosen"):
        validate_export(out, "trl")
    with pytest.raises(FactoryError, match="not 'verl'"):
        validate_export(out, "verl")


def test_export_errors_and_cli(releases, tmp_path):
    with pytest.raises(FactoryError, match="unknown export format"):
        export_release("r1", "nope", tmp_path / "x", releases_dir=releases.root)
    with pytest.raises(FactoryError, match="unknown release"):
        export_release("nope", "verl", tmp_path / "x", releases_dir=releases.root)
    out = factory_cli("export", "r1", "--format", "verl", "--out", str(tmp_path / "cli"), lake=releases.lake,
                      releases=releases.root)
    assert out.returncode == 0 and "validated with datasets" in out.stdout, out.stderr
    out = factory_cli("export", "r1", "--format", "verl", "--out", str(tmp_path / "cli"), lake=releases.lake,
                      releases=releases.root)
    assert out.returncode == 2 and "not empty" in out.stderr


def test_test_split_only_release_exports_no_empty_file_and_failures_leave_nothing(tmp_path):
    """HumanEval alone is all split 'test': verl/trl-grpo/openrlhf write only the splits that have rows (a
    zero-row parquet does not load with `datasets`); a format with no rows at all is an error and leaves no
    file, no export.json and no staging folder behind."""
    from factory.stages.ingest import ingest_source
    from factory.release import create_release

    from .conftest import VIEWS, init_lake
    lake = init_lake(tmp_path / "lake")
    ingest_source("humaneval", None, lake=lake)
    from factory.stages.curate import curate
    curate(lake, {})   # gold.rl_problems is a table curate writes (#40)
    create_release("he", VIEWS, lake=lake, releases_dir=tmp_path / "rel")
    expected = {"verl": {"test.parquet"}, "trl-grpo": {"test.parquet"}, "openrlhf": {"prompts/test.parquet"}}
    for fmt, files in expected.items():
        out = tmp_path / "out" / fmt
        meta = export_release("he", fmt, out, releases_dir=tmp_path / "rel")
        # 164: a benchmark (test split) row is scored on every test, HumanEval/34's public one included (#40)
        assert set(meta["files"]) == files and sum(meta["files"].values()) == 164, meta
        assert meta["validation"]["loader"] == "datasets"
        assert not (out / "train.parquet").exists()
        assert load(out / next(iter(files)), tmp_path).num_rows == 164
    with pytest.raises(FactoryError, match="no rows for the trl format"):
        export_release("he", "trl", tmp_path / "out" / "trl", releases_dir=tmp_path / "rel")  # no preference pairs
    assert not (tmp_path / "out" / "trl").exists()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(expected)   # no .partial folder left
    from factory.stages.train.rl import handoff
    for launcher in ("verl", "trl"):
        with pytest.raises(FactoryError, match="no train-split problems"):
            handoff("he", launcher, tmp_path / f"run-{launcher}", releases_dir=tmp_path / "rel")
        assert list((tmp_path / f"run-{launcher}").iterdir()) == []


def test_verl_export_round_trips_through_ingest(releases, tmp_path):
    """`factory ingest verl` reads every verl export we write: assert (sanitized MBPP), check (HumanEval) and
    call/stdio (APPS) problems come back with the same question, tests, entry point and preamble."""
    from factory.stages.ingest import ingest_source
    from tests.lakeutil import init_lake
    from tests.lakeutil import query as q

    out = tmp_path / "verl"
    export_release("r2", "verl", out, releases_dir=releases.root)
    lake = init_lake(tmp_path / "lake")
    got = ingest_source("verl", [out / "train.parquet", out / "test.parquet"], lake=lake, source="roundtrip")
    assert got.problems == releases.r2["views"]["gold.rl_problems"]["rows"]

    def suites(db, where):
        rows = q(db, f"""SELECT trim(p.question, chr(32) || chr(9) || chr(10) || chr(13)), p.entry_point, coalesce(p.test_preamble, ''), p.test_format,
                         list({{'kind': t.kind, 'code': t.code, 'input': t.input, 'expected': t.expected,
                               'comparison': t.comparison}} ORDER BY t.ordinal)::VARCHAR
                         FROM silver.problems p JOIN silver.tests t USING (problem_id) WHERE {where}
                         GROUP BY ALL""")
        return sorted(rows)
    # the export carries the reward (hidden) tests; public ones ride apart in `public_tests` (#31)
    original = suites(releases.lake, "p.problem_id IN (SELECT problem_id FROM gold.rl_problems) AND "
                                     "t.test_id IN (SELECT json_extract_string(x, '$.test_id') FROM gold.rl_problems, "
                                     "unnest(json_extract(tests, '$[*]')) AS u(x))")
    again = suites(lake, "true")
    assert len(again) == len(original)
    diff = [(a, b) for a, b in zip(original, again) if a != b]
    assert not diff, [[x[:2] + tuple(str(v)[:300] for v in x[2:]) for x in pair] for pair in diff[:2]]


@pytest.mark.parametrize("where, fmt", [("middle", "verl"), ("footer", "verl"), ("footer", "acecode")])
def test_an_export_of_a_damaged_release_fails_its_check_and_leaves_nothing(releases, tmp_path, where, fmt):
    """The release's sha256 check runs beside the writing: a flipped byte (inside a page, or in the footer, where
    reading the file fails first; streamed verl, and acecode, built in memory) ends the export with the check's
    error naming the file, and no output."""
    import os
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(releases.root / "r2", root / "r2")
    rel = releases.r2["views"]["gold.rl_problems"]["files"][0]["path"]
    shard = root / "r2" / rel
    os.chmod(shard.parent, 0o755)
    os.chmod(shard, 0o644)
    data = bytearray(shard.read_bytes())
    data[len(data) // 2 if where == "middle" else len(data) - 12] ^= 0x01
    shard.write_bytes(bytes(data))
    out = tmp_path / "out" / fmt
    with pytest.raises(FactoryError, match="failed verification") as err:
        export_release("r2", fmt, out, releases_dir=root)
    assert rel in str(err.value)
    assert not out.exists() and not any((tmp_path / "out").iterdir())   # no staging folder left either
