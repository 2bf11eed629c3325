"""`factory ingest SOURCE --path FOLDER` on the real dataset folders, and multi-file ingests that keep each file's
split and benchmark role.

Before: `--path` on the sanitized-MBPP folder read CodeT's HumanEval-style copy as sanitized-MBPP records and failed,
the CodeContests folder failed on verify_reference_solutions.json (a list of lists), and one `ingest leetcode` of the
three LeetCodeDataset files made one source `leetcode`, so the v0.3.1 test file was no decontamination benchmark.
"""
from __future__ import annotations

import gzip

import pytest

from factory.errors import FactoryError, InputError
from factory.ingest.adapters import KNOWN_DATASETS
from factory.lake.templating import DEFAULT_BENCHMARKS
from factory.stages.ingest import ingest_paths, ingest_source, resolve_paths
from tests.lakeutil import factory_cli, init_lake
from tests.lakeutil import query as q

from .conftest import EXPECTED_PROBLEMS

LC = "leetcodedataset"
LC_FILES = ("LeetCodeDataset-v0.2.0-train.jsonl.gz", "LeetCodeDataset-v0.2.0-test.jsonl.gz",
            "LeetCodeDataset-v0.3.1-test.jsonl.gz")


@pytest.mark.parametrize("folder,adapter", sorted({(k.folder, k.adapter) for k in KNOWN_DATASETS}))
def test_every_dataset_folder_resolves_to_its_own_files(shared_data, folder, adapter):
    """Each shared folder, given as --path to its adapter, yields exactly the dataset's files (those `ingest --all`
    reads); every other data file in it is skipped with a reason."""
    files, skipped = resolve_paths(adapter, [shared_data / folder])
    want = sorted({f for k in KNOWN_DATASETS if k.folder == folder for g in k.files
                   for f in (shared_data / folder).glob(g)})
    assert files == want and files
    data = {p.name for p in (shared_data / folder).iterdir() if p.name.endswith((".json", ".jsonl", ".jsonl.gz"))}
    assert {name for name, _ in skipped} == data - {f.name for f in files}
    assert all(why for _, why in skipped)


def test_sanitized_mbpp_and_codecontests_folders_ingest(shared_data, empty_lake):
    r, = ingest_paths("mbpp-sanitized", [shared_data / "mbpp_sanitized"], lake=empty_lake)
    assert (r.source, r.problems) == ("mbpp-sanitized", EXPECTED_PROBLEMS["mbpp-sanitized"])
    assert [name for name, _ in r.skipped] == ["mbpp_sanitized_for_code_generation.jsonl"]
    assert "humaneval adapter" in r.skipped[0][1]
    r, = ingest_paths("codecontests", [shared_data / "codecontests_subset300"], lake=empty_lake)
    assert (r.source, r.problems) == ("codecontests", EXPECTED_PROBLEMS["codecontests"])
    assert r.skipped == [("verify_reference_solutions.json", "read beside the data by the codecontests adapter")]
    # the file beside the data is still read: the verification results reach the problems' metadata
    assert q(empty_lake, "SELECT count(*) FROM silver.problems WHERE source = 'codecontests' AND "
                         "json_extract(metadata, '$.reference_tests_passed') IS NOT NULL") == [(300,)]


def test_leetcode_folder_gives_one_source_per_file(shared_data, empty_lake):
    """The LeetCodeDataset folder (train + two test files) ingests as three sources, each with its split, the v0.3.1
    test file a default decontamination benchmark; the output says what each file became."""
    done = factory_cli("ingest", "leetcode", "--path", str(shared_data / LC), lake=empty_lake)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert q(empty_lake, "SELECT source, split, count(*) FROM silver.problems GROUP BY ALL ORDER BY ALL") == [
        ("leetcode-v0.2.0-test", "test", 200), ("leetcode-v0.2.0-train", "train", 1890),
        ("leetcode-v0.3.1-test", "test", 228)]
    assert "leetcode-v0.3.1-test" in DEFAULT_BENCHMARKS
    lines = [line.strip() for line in out.splitlines()]
    assert ("LeetCodeDataset-v0.3.1-test.jsonl.gz -> leetcode-v0.3.1-test: 228 problems (test=228); "
            "benchmark: yes (a default decontamination benchmark)") in lines
    assert "LeetCodeDataset-v0.2.0-train.jsonl.gz -> leetcode-v0.2.0-train: 1890 problems (train=1890); " \
           "benchmark: no" in lines
    assert any(line.startswith("LeetCodeDataset-v0.2.0-test.jsonl.gz -> leetcode-v0.2.0-test: 200 problems "
                               "(test=200); benchmark: test split") for line in lines)


@pytest.fixture
def lc_heads(shared_data, tmp_path):
    """The first 20 records of each LeetCodeDataset file, under the files' own names."""
    out = []
    for name in LC_FILES:
        with gzip.open(shared_data / LC / name, "rt") as f:
            head = [line for _, line in zip(range(20), f)]
        with gzip.open(tmp_path / name, "wt") as g:
            g.writelines(head)
        out.append(tmp_path / name)
    return out


def test_repeated_path_flags_are_all_read(lc_heads, empty_lake):
    """`--path a --path b` reads both files (argparse kept only the last one), one source per file."""
    done = factory_cli("ingest", "leetcode", "--path", str(lc_heads[0]), "--path", str(lc_heads[2]), lake=empty_lake)
    assert done.returncode == 0, done.stderr
    assert q(empty_lake, "SELECT source, split, count(*) FROM silver.problems GROUP BY ALL ORDER BY ALL") == [
        ("leetcode-v0.2.0-train", "train", 20), ("leetcode-v0.3.1-test", "test", 20)]
    out = done.stdout
    assert "LeetCodeDataset-v0.2.0-train.jsonl.gz -> leetcode-v0.2.0-train: 20 problems (train=20)" in out
    assert "LeetCodeDataset-v0.3.1-test.jsonl.gz -> leetcode-v0.3.1-test: 20 problems (test=20); benchmark: yes" in out


def test_files_of_several_sources_need_a_name_to_be_folded(lc_heads, empty_lake):
    """The library call refuses to fold files of different sources silently; naming one source keeps every file's
    split (the test files' rows stay test rows)."""
    with pytest.raises(FactoryError, match=r"3 sources \(leetcode-v0.2.0-train: .*leetcode-v0.3.1-test: "):
        ingest_source("leetcode", lc_heads, lake=empty_lake)
    assert q(empty_lake, "SELECT count(*) FROM silver.problems") == [(0,)]
    r = ingest_source("leetcode", lc_heads, lake=empty_lake, source="lc-all")
    assert r.file_splits == {LC_FILES[0]: {"train": 20}, LC_FILES[1]: {"test": 20}, LC_FILES[2]: {"test": 20}}
    assert [line.split("benchmark: ")[-1][:10] for line in r.file_lines()] == ["no", "test split", "test split"]


def test_an_unknown_folder_takes_the_files_the_adapter_reads(shared_data, tmp_path):
    """A folder of no known layout: every file whose records the adapter reads, the others skipped with the reason;
    a folder with none is an error naming each file. (The folder links to the shared files, nothing is copied.)"""
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name in ("sanitized-mbpp.json", "mbpp_sanitized_for_code_generation.jsonl"):
        (folder / name).symlink_to(shared_data / "mbpp_sanitized" / name)
    files, skipped = resolve_paths("humaneval", [folder])
    assert [f.name for f in files] == ["mbpp_sanitized_for_code_generation.jsonl"]
    assert skipped[0][0] == "sanitized-mbpp.json" and "entry_point" in skipped[0][1]
    only = tmp_path / "only"
    only.mkdir()
    (only / "verify.json").symlink_to(shared_data / "codecontests_subset300" / "verify_reference_solutions.json")
    with pytest.raises(InputError, match=r"no file in the folder holds kodcode records: verify.json: .*list"):
        resolve_paths("kodcode", [only])
