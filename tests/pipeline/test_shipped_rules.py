"""The judging rules the factory ships (checkers/codecontests/) apply by default (#35): `factory ingest` attaches
them, and `execute` attaches them to a lake that has the source without them - no manual `factory checkers`."""
from __future__ import annotations

import os
import subprocess
import sys

from factory.assets import path as shipped
from factory.judging.attach import checker_files
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

FILE_RULES = "SELECT count(*) FROM silver.checkers WHERE origin = 'file'"


def _cc_file(shared_data):
    return shared_data / "codecontests_subset300" / "codecontests_subset300.jsonl"


def test_ingest_attaches_the_shipped_checkers(shared_data, tmp_path):
    files = checker_files(shipped("checkers", "codecontests"))
    assert len(files) >= 20
    lake = init_lake(tmp_path / "lake")
    out = subprocess.run([sys.executable, "-m", "factory.cli", "ingest", "codecontests", "--path",
                          str(_cc_file(shared_data)), "--lake", str(lake)], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "FACTORY_LAKE"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "judging rules shipped with the factory" in out.stdout
    assert q(lake, FILE_RULES)[0][0] == len(files)
    names = {r[0].replace("/", "__") for r in q(lake, "SELECT pb.source_id FROM silver.checkers c JOIN silver.problems pb "
                                   "USING (problem_id) WHERE c.origin = 'file'")}
    assert names == set(files)   # file name (or a name in its ALSO) = source_id with '/' written "__"
    detected = q(lake, "SELECT count(*) FROM silver.checkers WHERE origin IN ('statement', 'answers')")[0][0]
    assert detected > 0   # tolerance / any-case rules stated by the problems, detected on the way


def test_execute_attaches_them_to_a_lake_that_lacks_them(shared_data, tmp_path):
    lake = init_lake(tmp_path / "lake")
    ingest_source("codecontests", [_cc_file(shared_data)], lake=lake, source="codecontests")   # the API: no hook
    assert q(lake, FILE_RULES)[0][0] == 0
    execute(lake, selection="reference", program_ids=[], sources=["codecontests"])
    n = q(lake, FILE_RULES)[0][0]
    assert n == len(checker_files(shipped("checkers", "codecontests")))
    runs = q(lake, "SELECT count(*) FROM ops.runs WHERE stage = 'checkers'")[0][0]
    execute(lake, selection="reference", program_ids=[], sources=["codecontests"])   # present: not attached again
    assert q(lake, "SELECT count(*) FROM ops.runs WHERE stage = 'checkers'")[0][0] == runs


def test_a_slice_of_the_dataset_gets_the_rules_of_its_problems(shared_data, tmp_path):
    """The shipped folder covers all 300 problems: a 60-row slice gets the rules of its own problems, no error."""
    rows = _cc_file(shared_data).read_text().splitlines()[:60]
    (tmp_path / "cc.jsonl").write_text("\n".join(rows) + "\n")
    lake = init_lake(tmp_path / "lake")
    ingest_source("codecontests", [tmp_path / "cc.jsonl"], lake=lake, source="codecontests")
    execute(lake, selection="reference", program_ids=[], sources=["codecontests"])
    have = {r[0].replace("/", "__") for r in q(lake, "SELECT pb.source_id FROM silver.checkers c JOIN "
                                                     "silver.problems pb USING (problem_id) WHERE c.origin = 'file'")}
    ids = {r[0].replace("/", "__") for r in q(lake, "SELECT source_id FROM silver.problems")}
    expected = set(checker_files(shipped("checkers", "codecontests"))) & ids
    assert 0 < len(expected) < 24 and have == expected, len(expected)


def test_a_file_of_its_own_wins_over_another_files_also_and_a_bad_also_is_named(tmp_path):
    import pytest

    from factory.errors import InputError

    (tmp_path / "X.py").write_text("def check(i, e, a):\n    return True\n")
    (tmp_path / "Y.py").write_text("ALSO = ('X', 'Z')\n\n\ndef check(i, e, a):\n    return True\n")
    assert {k: p.name for k, p in checker_files(tmp_path).items()} == {"X": "X.py", "Y": "Y.py", "Z": "Y.py"}
    (tmp_path / "W.py").write_text("ALSO = 'X'\n")
    with pytest.raises(InputError, match="W.py.*ALSO must be a tuple"):
        checker_files(tmp_path)
