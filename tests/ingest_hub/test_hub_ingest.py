"""hf:// ingest through a huggingface_hub cache (offline), Hub-layout folders, and every hf-* adapter on fixtures in
the exact published layouts (tests/ingest_hub/hubfixtures.py)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from factory.errors import FactoryError, InputError
from factory.ingest.hub.adapters import lcb_private_tests
from factory.ingest.hub.resolve import parse_url
from tests.ingest_hub import hubfixtures as fx
from tests.lakeutil import init_lake, query

CC = "deepmind/code_contests"


def _cli(lake, env, *args):
    return subprocess.run([sys.executable, "-m", "factory.cli", "ingest", *args, "--lake", str(lake)],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def cc_cache(tmp_path):
    """CodeContests as published (data/{train,test}-*.parquet) inside a huggingface_hub cache."""
    src = tmp_path / "src"
    rows = fx.code_contests_rows()
    files = {"data/train-00000-of-00001.parquet": fx.write_parquet(src / "train.parquet", rows[:2] + rows[2:],
                                                                   fx.CODE_CONTESTS_SCHEMA),
             "data/test-00000-of-00001.parquet": fx.write_parquet(src / "test.parquet",
                                                                  [{**rows[1], "name": "2_A. Max"}],
                                                                  fx.CODE_CONTESTS_SCHEMA),
             "README.md": src / "README.md"}
    (src / "README.md").write_text("---\ndataset_info: {}\n---\n")
    cache = tmp_path / "hub"
    commit = fx.write_hub_cache(cache, CC, files)
    return cache, commit


def test_parse_url():
    ref = parse_url("hf://datasets/agentica-org/DeepCoder-Preview-Dataset@abc/taco")
    assert (ref.repo_id, ref.revision, ref.subdir) == ("agentica-org/DeepCoder-Preview-Dataset", "abc", "taco")
    assert parse_url("hf://datasets/deepmind/code_contests").revision is None
    with pytest.raises(InputError):
        parse_url("hf://nothing")


def test_code_contests_offline_from_cache(tmp_path, cc_cache):
    cache, commit = cc_cache
    lake = init_lake(tmp_path / "lake")
    env = fx.hub_env(cache)
    r = _cli(lake, env, "hf-code-contests", "--path", f"hf://datasets/{CC}")
    assert r.returncode == 0, r.stderr
    # 2 train problems + 1 test problem; the problem without tests stays in bronze only, counted in the summary
    problems = dict(query(lake, "SELECT source_id || '/' || split, test_format FROM silver.problems "
                                "WHERE source = 'code_contests'"))
    assert problems == {"1_A. Sum/train": "stdio", "1_B. Max/train": "stdio", "2_A. Max/test": "stdio"}
    subsets = dict(query(lake, "SELECT subset, count(*) FROM silver.tests t JOIN silver.problems p USING "
                               "(problem_id) WHERE p.source_id = '1_A. Sum' GROUP BY ALL"))
    assert subsets == {"public": 1, "private": 2, "generated": 2}
    progs = query(lake, "SELECT p.source_id, g.origin, g.language, json_extract_string(g.metadata, "
                        "'$.solution_language') FROM silver.programs g JOIN silver.problems p USING (problem_id) "
                        "WHERE p.split = 'train' ORDER BY ALL")
    assert progs == [("1_A. Sum", "incorrect", "python", "PYTHON3"), ("1_A. Sum", "incorrect", "python", "PYTHON3"),
                     ("1_A. Sum", "reference", "cpp", "CPP"), ("1_A. Sum", "reference", "python", "PYTHON3"),
                     ("1_B. Max", "incorrect", "python", "PYTHON3"), ("1_B. Max", "reference", "python", "PYTHON3")]
    meta = json.loads(query(lake, "SELECT metadata FROM silver.problems WHERE source_id = '1_A. Sum'")[0][0])
    assert meta["time_limit_s"] == 1.5 and meta["cf_rating"] == 800 and meta["memory_limit_bytes"] == 256 << 20
    assert meta["programs_not_runnable"] == {"solutions:PYTHON": 1}
    assert meta["hub_revision"] == commit
    assert query(lake, "SELECT difficulty_label FROM silver.problems WHERE source_id = '1_A. Sum'") == [("800",)]
    # the exact revision on every bronze row, files named as in the repo
    bronze = query(lake, "SELECT file, source_revision, count(*) FROM bronze.raw_records WHERE source = "
                         "'code_contests' GROUP BY ALL ORDER BY ALL")
    assert bronze == [("data/test-00000-of-00001.parquet", commit, 1), ("data/train-00000-of-00001.parquet", commit, 3)]
    summary = query(lake, "SELECT message FROM ops.runs WHERE stage = 'ingest' ORDER BY finished_at DESC LIMIT 1")
    assert "no public/private/generated tests: 1" in summary[0][0] and commit in summary[0][0]
    # same revision again: a no-op
    again = _cli(lake, env, "hf-code-contests", "--path", f"hf://datasets/{CC}")
    assert again.returncode == 0 and "unchanged" in again.stdout, again.stderr


def test_offline_missing_repo_names_the_cache(tmp_path, cc_cache):
    cache, _ = cc_cache
    lake = init_lake(tmp_path / "lake")
    r = _cli(lake, fx.hub_env(cache), "hf-taco", "--path", "hf://datasets/BAAI/TACO")
    assert r.returncode != 0
    assert "HF_HUB_OFFLINE=1" in r.stderr and "datasets--BAAI--TACO" in r.stderr
    wrong = _cli(lake, fx.hub_env(cache), "hf-taco", "--path", f"hf://datasets/{CC}")
    assert wrong.returncode != 0 and "use hf-code-contests" in wrong.stderr


def test_revision_pinning_and_update(tmp_path, monkeypatch):
    from factory.stages.ingest import ingest_source

    src, cache = tmp_path / "src", tmp_path / "hub"
    rows = fx.code_contests_rows()
    old = fx.write_hub_cache(cache, CC, {"data/train-00000-of-00001.parquet": fx.write_parquet(
        src / "old.parquet", rows[:1], fx.CODE_CONTESTS_SCHEMA)}, commit="a" * 40)
    new = fx.write_hub_cache(cache, CC, {"data/train-00000-of-00001.parquet": fx.write_parquet(
        src / "new.parquet", rows[:2], fx.CODE_CONTESTS_SCHEMA)}, commit="b" * 40)   # refs/main -> new
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lake = init_lake(tmp_path / "lake")
    r = ingest_source("hf-code-contests", [f"hf://datasets/{CC}@{old}"], lake=lake)
    assert (r.problems, r.revision) == (1, old)
    assert query(lake, "SELECT DISTINCT source_revision FROM bronze.raw_records") == [(old,)]
    r = ingest_source("hf-code-contests", [f"hf://datasets/{CC}"], lake=lake)   # main moved on: an update
    assert (r.status, r.problems, r.revision) == ("replaced", 2, new)
    assert query(lake, "SELECT DISTINCT source_revision FROM bronze.raw_records") == [(new,)]
    runs = query(lake, "SELECT json_extract_string(config, '$.revision') FROM ops.runs WHERE stage = 'ingest' "
                       "ORDER BY finished_at")
    assert runs == [(old,), (new,)]


def test_hub_layout_folder_works_the_same(tmp_path, cc_cache, monkeypatch):
    from factory.stages.ingest import ingest_source

    cache, commit = cc_cache
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    a, b, c = (init_lake(tmp_path / n) for n in ("a", "b", "c"))
    ingest_source("hf-code-contests", [f"hf://datasets/{CC}"], lake=a)
    snapshot = cache / "datasets--deepmind--code_contests" / "snapshots" / commit
    r = ingest_source("hf-code-contests", [snapshot], lake=b)
    assert r.revision == commit   # a folder inside the cache keeps the snapshot's commit
    plain = tmp_path / "code_contests"
    shutil.copytree(snapshot, plain, symlinks=False)   # a downloaded copy outside any cache
    r = ingest_source("hf-code-contests", [plain], lake=c)
    assert r.revision.startswith("local:") and len(r.revision) == 6 + 64
    ids = [query(x, "SELECT problem_id, split FROM silver.problems ORDER BY ALL") for x in (a, b, c)]
    assert ids[0] == ids[1] == ids[2] and len(ids[0]) == 3
    tests = [query(x, "SELECT test_id, input, expected, subset FROM silver.tests ORDER BY ALL") for x in (a, c)]
    assert tests[0] == tests[1]
    with pytest.raises(InputError, match="no file matching"):
        ingest_source("hf-code-contests", [tmp_path / "src"], lake=c, replace=True)


def _ingest(tmp_path, adapter, repo, files, url_tail="", monkeypatch=None, **kw):
    from factory.stages.ingest import ingest_source

    cache = tmp_path / "hub"
    commit = fx.write_hub_cache(cache, repo, files)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lake = init_lake(tmp_path / "lake")
    return lake, commit, ingest_source(adapter, [f"hf://datasets/{repo}{url_tail}"], lake=lake, **kw)


def _tests(lake, source_id=None):
    where = "WHERE p.source_id = ?" if source_id else ""
    return query(lake, f"SELECT p.source_id, t.kind, t.input, t.expected, t.subset FROM silver.tests t JOIN "
                       f"silver.problems p USING (problem_id) {where} ORDER BY p.source_id, t.ordinal",
                 [source_id] if source_id else [])


def test_apps_jsonl_layout(tmp_path, monkeypatch):
    files = {"train.jsonl": fx.write_jsonl(tmp_path / "s/train.jsonl", fx.apps_rows()),
             "test.jsonl": fx.write_jsonl(tmp_path / "s/test.jsonl", fx.apps_rows()[:1])}
    lake, commit, r = _ingest(tmp_path, "hf-apps", "codeparrot/apps", files, "/train", monkeypatch)
    assert (r.source, r.problems, r.records_skipped) == ("apps-train", 2, {"empty input_output": 1})
    rows = dict(query(lake, "SELECT source_id, test_format || ':' || coalesce(entry_point, '') || ':' || split "
                            "FROM silver.problems"))
    assert rows == {"0": "stdio::train", "1": "call:total:train"}
    assert _tests(lake, "1") == [("1", "call", "[[1, 2, 3]]", "6", None), ("1", "call", "[[]]", "0", None)]
    assert query(lake, "SELECT count(*) FROM silver.programs WHERE origin = 'reference'") == [(2,)]


def test_taco_parquet_layout(tmp_path, monkeypatch):
    files = {"ALL/train-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/t.parquet", fx.taco_rows(),
                                                                  fx.TACO_SCHEMA)}
    lake, _, r = _ingest(tmp_path, "hf-taco", "BAAI/TACO", files, "", monkeypatch)
    assert r.problems == 2
    assert _tests(lake, "sum-ab") == [("sum-ab", "stdio", "1 2", "3", None), ("sum-ab", "stdio", "3 4\n", "7\n", None)]
    assert query(lake, "SELECT entry_point, split FROM silver.problems WHERE source_id = 'dbl'") == [
        ("Solution().double", "train")]
    meta = json.loads(query(lake, "SELECT metadata FROM silver.problems WHERE source_id = 'sum-ab'")[0][0])
    assert meta["time_limit"] == "1 seconds" and meta["skill_types"] == "['Implementation']"


@pytest.mark.parametrize("subset,kinds", [("taco", {"stdio"}), ("primeintellect", {"stdio", "call"}),
                                          ("codeforces", {"stdio", "call"}), ("lcbv5", {"stdio", "call"})])
def test_deepcoder_subsets(tmp_path, monkeypatch, subset, kinds):
    files = {f"{subset}/train-00000-of-00001.parquet": fx.write_parquet(
        tmp_path / "s/x.parquet", fx.deepcoder_rows(subset), fx.DEEPCODER_SCHEMA),
        "other/train-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/y.parquet", fx.deepcoder_rows("taco"),
                                                               fx.DEEPCODER_SCHEMA)}
    lake, _, r = _ingest(tmp_path, "hf-deepcoder", "agentica-org/DeepCoder-Preview-Dataset", files, f"/{subset}",
                         monkeypatch)
    assert r.source == f"deepcoder-{subset}" and r.problems == len(fx.deepcoder_rows(subset))
    assert {k for (k,) in query(lake, "SELECT DISTINCT kind FROM silver.tests")} == kinds
    assert query(lake, "SELECT DISTINCT file FROM bronze.raw_records") == [(f"{subset}/train-00000-of-00001.parquet",)]
    if subset == "lcbv5":
        assert query(lake, "SELECT entry_point FROM silver.problems WHERE test_format = 'call'") == [
            ("Solution().total",)]
        assert [t[2:4] for t in _tests(lake) if t[1] == "call"] == [("[[1, 2, 3]]", "6")]
    if subset == "primeintellect":
        assert [t[2:4] for t in _tests(lake) if t[1] == "call"] == [("[2, 3]", "6"), ("[4, 0]", "0")]


def test_acecode_kodcode_skywork_layouts(tmp_path, monkeypatch):
    from factory.stages.ingest import ingest_source

    cache = tmp_path / "hub"
    fx.write_hub_cache(cache, "TIGER-Lab/AceCode-87K", {"data/train-00000-of-00001.parquet": fx.write_parquet(
        tmp_path / "s/a.parquet", fx.acecode_rows(), fx.ACECODE_SCHEMA)})
    fx.write_hub_cache(cache, "KodCode/KodCode-V1", {
        "data/train-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/k.parquet", fx.kodcode_rows(),
                                                              fx.KODCODE_SCHEMA),
        "data/use_with_caution-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/k2.parquet", [
            {**fx.kodcode_rows()[0], "question_id": "caution_1", "filter_reason": "similar"}], fx.KODCODE_SCHEMA)})
    fx.write_hub_cache(cache, "Skywork/Skywork-OR1-RL-Data", {
        "data/code-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/c.parquet", fx.skywork_rows(),
                                                             fx.SKYWORK_SCHEMA)})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lake = init_lake(tmp_path / "lake")
    r = ingest_source("hf-acecode", ["hf://datasets/TIGER-Lab/AceCode-87K"], lake=lake)
    assert (r.problems, r.tests, r.programs) == (1, 2, 2)
    assert query(lake, "SELECT origin, model, reported_pass_rate FROM silver.programs ORDER BY sample_index") == [
        ("sample", "qwen", 1.0), ("sample", "qwen", 0.0)]
    r = ingest_source("hf-kodcode", ["hf://datasets/KodCode/KodCode-V1"], lake=lake)
    assert (r.source, r.problems, r.tests, r.programs) == ("kodcode-v1", 1, 2, 1)   # use_with_caution not read
    assert query(lake, "SELECT entry_point, difficulty_label, test_format FROM silver.problems WHERE source = "
                       "'kodcode-v1'") == [("is_even", "easy", "pytest")]
    r = ingest_source("hf-skywork-or1", ["hf://datasets/Skywork/Skywork-OR1-RL-Data"], lake=lake)
    assert (r.source, r.problems) == ("skywork-or1-code", 1)
    meta = json.loads(query(lake, "SELECT metadata FROM silver.problems WHERE source = 'skywork-or1-code'")[0][0])
    assert meta["model_difficulty"]["DeepSeek-R1-Distill-Qwen-32B"] == 3 and meta["data_source"].startswith("train")
    revs = query(lake, "SELECT source, count(DISTINCT source_revision) FROM bronze.raw_records GROUP BY ALL")
    assert all(n == 1 for _, n in revs) and len(revs) == 3


def test_livecodebench_releases_and_private_tests(tmp_path, monkeypatch):
    rows = fx.lcb_rows()
    files = {"test.jsonl": fx.write_jsonl(tmp_path / "s/test.jsonl", rows[:1]),
             "test2.jsonl": fx.write_jsonl(tmp_path / "s/test2.jsonl", rows[1:]),
             "test6.jsonl": fx.write_jsonl(tmp_path / "s/test6.jsonl", [{**rows[0], "question_id": "later"}])}
    lake, _, r = _ingest(tmp_path, "hf-livecodebench", "livecodebench/code_generation_lite", files, "/release_v2",
                         monkeypatch)
    assert (r.source, r.problems) == ("livecodebench-release_v2", 2)   # test6.jsonl is not in release_v2
    assert _tests(lake) == [("3000", "call", "[[1, 2]]", "3", "public"), ("3000", "call", "[[5, 5, 5]]", "15", "private"),
                            ("abc001_a", "stdio", "1 2\n", "3\n", "public"),
                            ("abc001_a", "stdio", "10 20\n", "30\n", "private")]
    assert {s for (s,) in query(lake, "SELECT DISTINCT split FROM silver.problems")} == {"test"}
    meta = json.loads(query(lake, "SELECT metadata FROM silver.problems WHERE source_id = '3000'")[0][0])
    assert meta["contest_date"] == "2024-09-01T00:00:00" and meta["platform"] == "leetcode"


def test_lcb_private_tests_refuse_pickled_code():
    import base64
    import pickle
    import zlib

    evil = base64.b64encode(zlib.compress(pickle.dumps(FactoryError("x")))).decode()
    with pytest.raises(InputError, match="private_test_cases"):
        lcb_private_tests(evil, ("f", 1))
    assert lcb_private_tests(fx.lcb_private([{"input": "1", "output": "2"}]), ("f", 1)) == [
        {"input": "1", "output": "2"}]


def test_malformed_json_names_file_row_field(tmp_path, monkeypatch):
    bad = [{**fx.deepcoder_rows("taco")[0]}, {**fx.deepcoder_rows("taco")[0], "tests": "{not json"}]
    files = {"taco/train-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/x.parquet", bad,
                                                                   fx.DEEPCODER_SCHEMA)}
    with pytest.raises(InputError) as err:
        _ingest(tmp_path, "hf-deepcoder", "agentica-org/DeepCoder-Preview-Dataset", files, "/taco", monkeypatch)
    text = str(err.value)
    assert "taco/train-00000-of-00001.parquet" in text and "2" in text and "tests" in text
    # nothing half-written
    assert query(tmp_path / "lake", "SELECT count(*) FROM bronze.raw_records") == [(0,)]
    assert query(tmp_path / "lake", "SELECT count(*) FROM silver.tests") == [(0,)]


def test_release_card_names_the_revision(tmp_path, cc_cache, monkeypatch):
    from factory.release.create import create_release
    from factory.stages.ingest import ingest_source

    cache, commit = cc_cache
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lake = init_lake(tmp_path / "lake")
    ingest_source("hf-code-contests", [f"hf://datasets/{CC}"], lake=lake)
    manifest = create_release("cc", ["silver.problems"], lake=lake, releases_dir=tmp_path / "rel")
    assert manifest["source_revisions"] == {"code_contests": [commit]}
    card = (tmp_path / "rel" / "cc" / "README.md").read_text()
    assert "## Hub revisions" in card and f"| code_contests | `{commit}` |" in card


def test_codeforces_configs_and_skipped_problems(tmp_path, monkeypatch):
    """open-r1/codeforces in its published layout: data/{train,test}-*.parquet (config default) and
    verifiable-prompts/ (one row per problem and prompt language)."""
    rows = fx.codeforces_rows()
    later = {**rows[0], "id": "2/A", "contest_id": "2", "title": "Sum again"}
    prompts = [{**rows[0], "language": lang, "prompt": f"Solve it in {lang}."} for lang in ("python", "cpp")]
    files = {"data/train-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/train.parquet", rows,
                                                                   fx.CODEFORCES_SCHEMA),
             "data/test-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/test.parquet", [later],
                                                                  fx.CODEFORCES_SCHEMA),
             "verifiable-prompts/train-00000-of-00001.parquet": fx.write_parquet(
                 tmp_path / "s/prompts.parquet", prompts, fx.CODEFORCES_PROMPTS_SCHEMA)}
    lake, commit, r = _ingest(tmp_path, "hf-codeforces", "open-r1/codeforces", files, monkeypatch=monkeypatch)
    assert (r.source, r.problems, r.tests, r.revision) == ("codeforces", 3, 3 + 1 + 3, commit)
    assert r.records_skipped == {"interactive problem (interaction_format): no stdin/stdout test can judge it": 1,
                                 "input_mode file: the program reads/writes files, not stdin/stdout": 1}
    # the examples are Codeforces' first official tests: stored once, public (they are in the statement)
    assert query(lake, "SELECT t.input, t.expected, t.subset, t.visibility, t.comparison FROM silver.tests t JOIN "
                       "silver.problems p USING (problem_id) WHERE p.source_id = '1/A' ORDER BY t.ordinal") == [
        ("1 2\n", "3\n", "official", "public", "token"), ("10 20\n", "30\n", "official", "hidden", "token"),
        ("-5 5\n", "0\n", "official", "hidden", "token")]
    assert _tests(lake, "1/B") == [("1/B", "stdio", "3\n", "1 2\n", "examples")]   # no official tests: the example
    got = {sid: (split, diff, json.loads(meta)) for sid, split, diff, meta in query(
        lake, "SELECT source_id, split, difficulty_label, metadata FROM silver.problems")}
    assert {sid: (split, diff) for sid, (split, diff, _) in got.items()} == {
        "1/A": ("train", "800"), "1/B": ("train", "1200"), "2/A": ("test", "800")}
    meta = got["1/B"][2]
    assert meta["needs_checker"] is True and meta["generated_checker"] == fx.CF_CHECKER
    assert (meta["time_limit_s"], meta["memory_limit_mb"], meta["official_tests_complete"]) == (2.0, 256.0, False)
    assert got["1/A"][2]["generated_tests"] == 12 and got["1/A"][2]["tags"] == ["math"]
    question = query(lake, "SELECT question FROM silver.problems WHERE source_id = '1/A'")[0][0]
    assert question.startswith("Sum\n\nGiven two integers") and "Input\nTwo integers a and b." in question
    assert query(lake, "SELECT count(*), count(DISTINCT source_revision) FROM bronze.raw_records") == [(5, 1)]

    from factory.stages.ingest import ingest_source
    r = ingest_source("hf-codeforces", ["hf://datasets/open-r1/codeforces/verifiable-prompts"], lake=lake)
    assert (r.source, r.problems, r.duplicates) == ("codeforces-verifiable-prompts", 1, 1)   # python + cpp rows
    meta = json.loads(query(lake, "SELECT metadata FROM silver.problems WHERE source = "
                                  "'codeforces-verifiable-prompts'")[0][0])
    assert (meta["prompt_language"], meta["config"]) == ("python", "verifiable-prompts")


def test_codeforces_malformed_tests_name_file_row_field(tmp_path, monkeypatch):
    rows = fx.codeforces_rows()[:1]
    rows[0]["official_tests"] = [{"input": "1 2\n", "output": "3\n"}, {"input": "4 5\n", "output": None}]
    files = {"data/train-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/bad.parquet", rows,
                                                                   fx.CODEFORCES_SCHEMA)}
    with pytest.raises(InputError) as err:
        _ingest(tmp_path, "hf-codeforces", "open-r1/codeforces", files, monkeypatch=monkeypatch)
    msg = str(err.value)
    assert "official_tests[1]" in msg and "train-00000-of-00001.parquet" in msg and "official_tests" in msg
