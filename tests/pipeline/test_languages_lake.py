"""Programs in other languages through the lake: CodeContests `solutions` kept per language and the `ingest jsonl`
mapping's language column reach silver.programs.language; `factory execute` judges each program in its language
on the problem's real tests; the language reaches gold.latest_executions and the pass-rate views, so pass rates
(and the references' validation of the tests) read per language."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.errors import FactoryError
from factory.sandbox import languages
from factory.stages.curate import curate
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake, query

PORTS = Path(__file__).resolve().parents[2] / "bench" / "languages"
TASKS = ["177_b1_rectangular_game_2533", "1141_a_game_23_2618"]
pytestmark = pytest.mark.skipif(languages.toolchain("cpp") is None or languages.toolchain("java") is None,
                                reason="needs g++ and a JDK")


def _records(shared_data) -> list[dict]:
    rows = {json.loads(x)["task_id"]: json.loads(x)
            for x in (shared_data / "codecontests_subset300" / "codecontests_subset300.jsonl").open()}
    return [rows["CodeContests/" + t] for t in TASKS]


def test_codecontests_solutions_and_jsonl_language_reach_the_pass_rates(tmp_path, shared_data):
    lake = init_lake(tmp_path / "lake")
    recs = _records(shared_data)
    cc = tmp_path / "cc.jsonl"
    with cc.open("w") as f:
        for r, t in zip(recs, TASKS):   # the Hub's layout: solutions.language is DeepMind's enum (2 C++, 4 Java)
            f.write(json.dumps({**r, "solutions": {"language": [2, 4, 1],
                                                   "solution": [(PORTS / f"{t}.cpp").read_text(),
                                                                (PORTS / f"{t}.java").read_text(),
                                                                "print 1  # python 2: not run"]}}) + "\n")
    ingest_source("codecontests", [cc], lake=lake, source="cc-langs")
    got = dict(query(lake, "SELECT language, count(*) FROM silver.programs GROUP BY 1"))
    assert got == {"python": 2, "cpp": 2, "java": 2}
    # the jsonl mapping: a language column names the solution's language
    js = tmp_path / "js.jsonl"
    with js.open("w") as f:
        for r, t in zip(recs, TASKS):
            f.write(json.dumps({"id": r["task_id"], "q": r["description"], "tests": r["tests"], "lang": "nodejs",
                                "sol": (PORTS / f"{t}.js").read_text()}) + "\n")
    ingest_source("jsonl", [js], lake=lake, source="cc-js", test_format="stdio",
                  mapping={"id": "id", "question": "q", "tests": "tests", "solution": "sol", "language": "lang"})
    assert query(lake, "SELECT DISTINCT p.language FROM silver.programs p JOIN silver.problems pb USING "
                       "(problem_id) WHERE pb.source = 'cc-js'") == [("javascript",)]
    report = execute(lake, workers=2)
    assert report is not None
    rows = dict((lang, (n, passed)) for lang, n, passed in query(lake, """
        SELECT coalesce(p.language, 'python'), count(*), count(*) FILTER (WHERE e.status = 'pass')
        FROM silver.executions e JOIN silver.programs p USING (program_id) GROUP BY 1"""))
    n_tests = sum(len(r["tests"]) for r in recs)
    assert rows["cpp"] == (n_tests, n_tests)     # judged as C++ (as Python source they would all fail)
    assert rows["java"] == (n_tests, n_tests) and rows["python"] == (n_tests, n_tests)
    assert rows["javascript"] == (n_tests, n_tests)
    curate(lake, allow_unhealthy=True)
    per_lang = query(lake, "SELECT language, sum(programs), sum(all_passed) FROM gold.language_pass_rates "
                           "GROUP BY 1 ORDER BY 1")
    assert [r[0] for r in per_lang] == ["cpp", "java", "javascript", "python"]
    assert all(r[1] == r[2] == 2 for r in per_lang)   # every language's references pass every kept test
    assert query(lake, "SELECT count(DISTINCT language) FROM gold.latest_executions") == [(4,)]


def test_jsonl_unknown_language_names_the_row_and_field(tmp_path, shared_data):
    lake = init_lake(tmp_path / "lake")
    rec = _records(shared_data)[0]
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps({"id": 1, "q": "x", "tests": rec["tests"], "lang": "fortran", "sol": "x"}) + "\n")
    with pytest.raises(FactoryError) as err:
        ingest_source("jsonl", [f], lake=lake, test_format="stdio",
                      mapping={"id": "id", "question": "q", "tests": "tests", "solution": "sol", "language": "lang"})
    assert "fortran" in str(err.value) and "lang" in str(err.value) and "cpp" in str(err.value)
