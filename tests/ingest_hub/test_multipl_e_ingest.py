"""`factory ingest multipl-e`: MultiPL-E's published layouts -- the Hub's parquet (``<config>/test-00000-of-00001.parquet``
with the dataset card's features) through an offline huggingface_hub cache and as a folder, and the JSONL rows the
MultiPL-E repository writes (``prompts/humaneval-<lang>-keep.jsonl``) -- become harness problems in their language;
`factory execute --samples` judges completions on them and the pass rates come out per language. The rows are this
project's own problem (tests/sandbox/test_harness_languages.py) written in the published schema."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from factory.errors import InputError
from factory.sandbox import languages
from tests.ingest_hub import hubfixtures as fx
from tests.lakeutil import init_lake, query
from tests.sandbox.test_harness_languages import CHAT, EXIT_FIRST, RIGHT, ROWS, WRONG

REPO = "nuprl/MultiPL-E"
S = pa.string()
# the dataset card's dataset_info features, in its order
MULTIPL_E_SCHEMA = pa.schema([("name", S), ("language", S), ("prompt", S), ("doctests", S), ("original", S),
                              ("prompt_terminology", S), ("tests", S), ("stop_tokens", pa.list_(S))])
EXT = {"cpp": "cpp", "java": "java", "javascript": "js", "rust": "rs"}
# MultiPL-E's Python layout (humaneval-py): the harness is a check(candidate) called at the end
PY = {"name": "odd_squares", "language": "py", "stop_tokens": ["\ndef", "\n#", "\nif", "\nclass"],
      "prompt": "from typing import List\n\ndef odd_squares(xs: List[int]) -> int:\n"
                "    \"\"\"Sum of the squares of the odd numbers.\"\"\"\n",
      "tests": "def check(candidate):\n    assert candidate([1, 2, 3]) == 10\n    assert candidate([]) == 0\n\n"
               "def test_check():\n    check(odd_squares)\n\ntest_check()\n"}
PY_RIGHT = "    return sum(x * x for x in xs if x % 2)\n\ndef junk(:"
PY_WRONG = "    return sum(x * x for x in xs)\n"


def published(lang: str, name: str = "HumanEval_900_odd_squares") -> dict:
    """A row as MultiPL-E publishes it (every field of the card; language as its file extension)."""
    row = PY if lang == "python" else ROWS[lang]
    return {"name": name, "language": row["language"], "prompt": row["prompt"], "doctests": "transform",
            "original": f"/datasets/originals-with-cleaned-doctests/{name}.py", "prompt_terminology": "reworded",
            "tests": row["tests"], "stop_tokens": list(row["stop_tokens"])}


def _cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture
def hub(tmp_path):
    """nuprl/MultiPL-E as published on the Hub (one folder per config) inside a huggingface_hub cache."""
    files = {f"humaneval-{EXT[lang]}/test-00000-of-00001.parquet":
             fx.write_parquet(tmp_path / "src" / f"{lang}.parquet", [published(lang)], MULTIPL_E_SCHEMA)
             for lang in EXT}
    files["humaneval-go/test-00000-of-00001.parquet"] = fx.write_parquet(
        tmp_path / "src" / "go.parquet", [{**published("cpp"), "language": "go"}], MULTIPL_E_SCHEMA)
    cache = tmp_path / "hub"
    return cache, fx.write_hub_cache(cache, REPO, files)


def test_hub_parquet_and_repo_jsonl_layouts(tmp_path, hub):
    cache, commit = hub
    lake = init_lake(tmp_path / "lake")
    env = fx.hub_env(cache)
    r = _cli("ingest", "multipl-e", "--path", f"hf://datasets/{REPO}/humaneval-cpp", "--lake", str(lake), env=env)
    assert r.returncode == 0, r.stderr
    r = _cli("ingest", "multipl-e", "--path", f"hf://datasets/{REPO}", "--lake", str(lake), env=env)   # 4 languages
    assert r.returncode == 0, r.stderr
    rows = query(lake, "SELECT source, source_id, language, test_format, split, starter_code, metadata "
                       "FROM silver.problems ORDER BY source, language")
    assert [(s, lang) for s, _, lang, *_ in rows] == [
        ("multipl-e", "cpp"), ("multipl-e", "java"), ("multipl-e", "javascript"), ("multipl-e", "rust"),
        ("multipl-e-humaneval-cpp", "cpp")]
    for source, sid, lang, fmt, split, starter, meta in rows:
        meta = json.loads(meta)
        assert (sid, fmt, split) == ("HumanEval_900_odd_squares", "harness", "test")
        assert starter == ROWS[lang]["prompt"]
        assert meta["multipl_e"]["stop_tokens"] == ROWS[lang]["stop_tokens"]
        assert meta["multipl_e"]["language"] == EXT[lang] and meta["lineage"] == "humaneval:900"
        assert meta["hub_revision"] == commit
    tests = query(lake, "SELECT p.language, t.kind, t.code FROM silver.tests t JOIN silver.problems p "
                        "USING (problem_id) WHERE p.source = 'multipl-e' ORDER BY 1")
    assert [(lang, kind, code) for lang, kind, code in tests] == [
        (lang, "harness", ROWS[lang]["tests"]) for lang in sorted(EXT)]

    # a language the sandbox does not run: an error naming file, row and field; nothing is written
    before = query(lake, "SELECT count(*) FROM silver.problems")
    r = _cli("ingest", "multipl-e", "--path", f"hf://datasets/{REPO}/humaneval-go", "--lake", str(lake), env=env)
    assert r.returncode != 0 and "humaneval-go/test-00000-of-00001.parquet" in r.stderr
    assert "'go' has no runtime" in r.stderr and "language" in r.stderr
    assert query(lake, "SELECT count(*) FROM silver.problems") == before

    # the repository's JSONL (prompts/humaneval-js-keep.jsonl), read from a file
    jsonl = fx.write_jsonl(tmp_path / "prompts" / "humaneval-js-keep.jsonl",
                           [published("javascript"), published("javascript", "mbpp_3_is_odd_squares")])
    r = _cli("ingest", "multipl-e", "--path", str(jsonl), "--name", "mple-js", "--lake", str(lake))
    assert r.returncode == 0, r.stderr
    got = query(lake, "SELECT source_id, language, metadata FROM silver.problems WHERE source = 'mple-js' ORDER BY 1")
    assert [(s, lang, json.loads(m)["lineage"]) for s, lang, m in got] == [
        ("HumanEval_900_odd_squares", "javascript", "humaneval:900"), ("mbpp_3_is_odd_squares", "javascript", "mbpp:3")]


def test_malformed_rows_name_file_row_and_field(tmp_path):
    from factory.ingest.multipl_e import convert

    ctx = ("humaneval-cpp-keep.jsonl", 7)
    with pytest.raises(InputError, match="stop_tokens") as e:
        convert({**published("cpp"), "stop_tokens": "\n}"}, ctx, {})
    assert "humaneval-cpp-keep.jsonl" in str(e.value) and "7" in str(e.value)
    with pytest.raises(InputError, match="tests"):
        convert({**published("cpp"), "tests": None}, ctx, {})
    with pytest.raises(InputError, match="'go' has no runtime"):
        convert({**published("cpp"), "language": "go"}, ctx, {})


RUNNABLE = [lang for lang in EXT if languages.toolchain(lang) is not None] + ["python"]


def test_ingest_execute_pass_rates_per_language(tmp_path):
    """The lake path end to end: the Hub layout as a folder -> `ingest multipl-e` -> `execute --samples` (a base
    model's continuation, a chat answer, a wrong program and an exit(0)-first one per language, in MultiPL-E's
    completion records: name + language) -> verdicts and pass rates per language."""
    t0 = time.monotonic()
    lake = init_lake(tmp_path / "lake")
    for lang in RUNNABLE:
        fx.write_parquet(tmp_path / "MultiPL-E" / f"humaneval-{published(lang)['language']}" / "test-00000-of-00001.parquet",
                         [published(lang)], MULTIPL_E_SCHEMA)
    r = _cli("ingest", "hf-multipl-e", "--path", str(tmp_path / "MultiPL-E"), "--lake", str(lake))   # 4 languages
    assert r.returncode == 0, r.stderr
    r = _cli("ingest", "multipl-e", "--path", str(tmp_path / "MultiPL-E" / "humaneval-py" / "test-00000-of-00001.parquet"),
             "--name", "multipl-e-py", "--lake", str(lake))   # one config's file: a source of its own
    assert r.returncode == 0, r.stderr
    assert sorted(query(lake, "SELECT source, language FROM silver.problems")) == sorted(
        [("multipl-e", lang) for lang in RUNNABLE if lang != "python"] + [("multipl-e-py", "python")])
    samples, expect = [], {}
    for lang in RUNNABLE:
        kinds = ({"right": PY_RIGHT, "wrong": PY_WRONG, "exit0": "    import os; os._exit(0)\n"} if lang == "python"
                 else {"right": RIGHT[lang], "wrong": WRONG[lang], "exit0": EXIT_FIRST[lang]})
        if lang in CHAT:
            kinds["chat"] = CHAT[lang]
        for kind, text in kinds.items():
            samples.append({"task_id": "HumanEval_900_odd_squares", "language": published(lang)["language"],
                            "completion": text})
            expect[(lang, text)] = "fail" if kind == "wrong" else "pass"
    path = fx.write_jsonl(tmp_path / "samples.jsonl", samples)
    r = _cli("execute", "--samples", str(path), "--model", "known", "--workers", "2", "--lake", str(lake))
    assert r.returncode == 0, r.stderr
    got = query(lake, "SELECT p.language, p.raw_completion, e.status, e.judged_in_process FROM silver.programs p "
                      "JOIN gold.latest_executions e USING (program_id) WHERE p.origin = 'sample'")
    assert {(lang, text): status for lang, text, status, _ in got} == expect
    assert all(flag for *_, flag in got)   # every harness verdict: judged in the program's own process
    per_language = dict(query(lake, """
        SELECT p.language, round(avg((e.status = 'pass')::INT), 3) FROM silver.programs p
        JOIN gold.latest_executions e USING (program_id) WHERE p.origin = 'sample' GROUP BY 1"""))
    for lang in RUNNABLE:
        n = 3 + (lang in CHAT)
        assert per_language[lang] == round((n - 1) / n, 3)
    # by the documented rule the in-process verdicts stay out of the lake's pass rates (exclude_in_process_judged)
    assert query(lake, "SELECT count(*) FROM gold.program_pass_rates") == [(0,)]
    assert time.monotonic() - t0 < 60 * 3   # < 60 s idle; the bound leaves room for a loaded 2-core box
