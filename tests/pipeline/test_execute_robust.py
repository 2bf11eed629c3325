"""`factory execute` on hostile text, and in-process-judged verdicts end to end (real lake, real sandbox).

Programs here return strings with lone surrogates, raise with surrogate messages and print invalid UTF-8: the
run must still commit one verdict per (program, test). Unittest-kind tests run inside the candidate's process,
so their verdicts carry judged_in_process = true, which curation (`exclude_in_process_judged`) and the reward
(`exclude_in_process`) can leave out.
"""
from __future__ import annotations

import json

import pytest

from factory.stages.curate import curate
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from factory.lake import connect, existing_columns
from factory.sandbox import Limits
from factory.lake.commit import stage_run
from tests.lakeutil import factory_cli, init_lake
from tests.lakeutil import query as q

LIMITS = Limits(cpu_s=2.0, wall_min_s=6.0)
STATUSES = {"pass", "fail", "timeout", "runtime_error", "memory_limit", "output_limit", "infra_error"}

# programs are source text: "\ud800" below is an escape in the program, a lone surrogate only at run time
ASSERT_PROBLEMS = [
    {"id": "ret_surrogate", "q": "Return a string.", "sol": 'def f(x):\n    return "a\\ud800b"\n',
     "tests": ['assert f(1) == "ab"', "assert len(f(1)) == 3"]},
    {"id": "raise_surrogate", "q": "Raise.", "sol": 'def f(x):\n    raise ValueError("bad \\ud800 message " + chr(0xdcff))\n',
     "tests": ["assert f(1) == 1"]},
    {"id": "raise_unprintable", "q": "Raise an exception whose str() fails.",
     "sol": 'class E(Exception):\n    def __str__(self):\n        return "\\udcff" + 1\n\n'
            'def f(x):\n    raise E()\n',
     "tests": ["assert f(1) == 1"]},
    {"id": "print_invalid_utf8", "q": "Print junk.",
     "sol": 'import sys\n\ndef f(x):\n    sys.stdout.buffer.write(b"\\xff\\xfe\\xfd not utf-8 \\x00\\n")\n'
            '    sys.stdout.flush()\n    print("lone \\udcff", flush=True)\n    sys.stderr.write("err \\ud800\\n")\n'
            '    return x\n',
     "tests": ["assert f(2) == 2"]},
    {"id": "plain_ok", "q": "Add one.", "sol": "def f(x):\n    return x + 1\n", "tests": ["assert f(1) == 2"]},
]
CALL_PROBLEMS = [  # second test has no expected output: filled from the reference's own (surrogate) return value
    {"id": "call_surrogate", "q": "Return a string.", "entry": "f", "sol": 'def f(x):\n    return "x\\ud800" * x\n',
     "tests": [{"input": [1], "output": "x"}, {"input": [2]}]},
]
STDIO_PROBLEMS = [
    {"id": "stdio_junk", "q": "Print x.",
     "sol": 'import sys\nsys.stdout.buffer.write(b"\\xff\\xfe\\n")\nsys.stdout.flush()\nprint("x\\ud800")\n',
     "tests": [{"input": "", "output": "x"}]},
]
UNITTEST_OK = ("import unittest\n\nclass TestF(unittest.TestCase):\n    def test_one(self):\n"
               "        self.assertEqual(f(1), 1)\n\n    def test_two(self):\n        self.assertEqual(f(2), 2)\n")
UNITTEST_BAD = ("import unittest\n\nclass TestG(unittest.TestCase):\n    def test_ok(self):\n"
                "        self.assertEqual(f(1), 1)\n\n    def test_bad(self):\n        self.fail('broken \\ud800 text')\n")
UNITTEST_PROBLEMS = [
    {"id": "ut_ok", "q": "Identity.", "sol": "def f(x):\n    return x\n", "tests": [UNITTEST_OK]},
    {"id": "ut_surrogate_fail", "q": "Identity.", "sol": "def f(x):\n    return x\n", "tests": [UNITTEST_BAD]},
]


def _ingest(lake, tmp_path, source: str, problems: list[dict], test_format: str) -> None:
    path = tmp_path / f"{source}.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in problems))
    mapping = {"id": "id", "question": "q", "tests": "tests", "solution": "sol"}
    if any("entry" in p for p in problems):
        mapping["entry_point"] = "entry"
    ingest_source("jsonl", [path], lake=lake, source=source, mapping=mapping, test_format=test_format)


def _build(lake, tmp_path, sets=("asserts", "calls", "stdio", "unittests")) -> None:
    specs = {"asserts": (ASSERT_PROBLEMS, "assert"), "calls": (CALL_PROBLEMS, "call"),
             "stdio": (STDIO_PROBLEMS, "stdio"), "unittests": (UNITTEST_PROBLEMS, "unittest")}
    for source in sets:
        _ingest(lake, tmp_path, source, *specs[source])


def _expected_pairs(lake) -> int:
    return q(lake, """SELECT count(*) FROM silver.programs p JOIN silver.tests t USING (problem_id)
                      WHERE NOT (t.kind IN ('call', 'stdio') AND t.expected IS NULL)""")[0][0]


def _verdicts(lake) -> dict[str, list[tuple]]:
    """source_id -> [(ordinal, status, error_message, judged_in_process)] of the reference program."""
    out: dict[str, list[tuple]] = {}
    for sid, ordinal, status, msg, in_process in q(lake, """
            SELECT pb.source_id, t.ordinal, e.status, e.error_message, e.judged_in_process
            FROM silver.executions e JOIN silver.tests t USING (test_id) JOIN silver.problems pb USING (problem_id)
            ORDER BY 1, 2"""):
        out.setdefault(sid, []).append((ordinal, status, msg, in_process))
    return out


@pytest.fixture(scope="module")
def hostile_lake(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    lake = init_lake(tmp / "lake")
    _build(lake, tmp)
    report = execute(lake, selection="reference", limits=LIMITS)
    return lake, report


def test_bad_text_never_aborts_execute(hostile_lake):
    lake, report = hostile_lake
    n = _expected_pairs(lake)
    assert n == 11  # 6 assert + 2 call (one expected filled from the reference) + 1 stdio + 2 unittest
    assert report.verdicts == n
    rows = q(lake, "SELECT program_id, test_id, limits_hash, status FROM silver.executions")
    assert len(rows) == n == len({r[:3] for r in rows})
    assert {r[3] for r in rows} <= STATUSES - {"infra_error"}
    v = _verdicts(lake)
    assert [s for _, s, _, _ in v["ret_surrogate"]] == ["fail", "pass"]
    assert v["raise_surrogate"][0][1] == "runtime_error"
    assert "\\ud800" in v["raise_surrogate"][0][2] or "\\udcff" in v["raise_surrogate"][0][2]  # escaped, not lost
    assert v["raise_unprintable"][0][1] == "runtime_error"
    assert v["print_invalid_utf8"][0][1] in ("pass", "runtime_error")
    assert v["plain_ok"][0][1] == "pass"
    assert v["stdio_junk"][0][1] == "fail"
    assert [s for _, s, _, _ in v["ut_ok"]] == ["pass"]
    assert [s for _, s, _, _ in v["ut_surrogate_fail"]] == ["fail"]
    # every stored text is valid UTF-8 (the Parquet files were written, and they read back)
    for row in q(lake, "SELECT stdout, stderr, error_type, error_message FROM silver.executions"):
        for text in row:
            assert text is None or isinstance(text.encode("utf-8"), bytes)


def test_expected_from_surrogate_returning_reference_is_exact(hostile_lake):
    """A reference returning a lone surrogate: its expected value is stored escaped as JSON and still equals it."""
    lake, _ = hostile_lake
    expected = q(lake, """SELECT t.ordinal, t.expected FROM silver.tests t JOIN silver.problems pb USING (problem_id)
                          WHERE pb.source_id = 'call_surrogate' ORDER BY 1""")
    assert expected[1][1] is not None and json.loads(expected[1][1]) == "x\ud800x\ud800"
    assert [s for _, s, _, _ in _verdicts(lake)["call_surrogate"]] == ["fail", "pass"]


def test_rerun_is_a_noop(hostile_lake):
    lake, _ = hostile_lake
    before = q(lake, "SELECT count(*), max(executed_at) FROM silver.executions")[0]
    snapshots = q(lake, "SELECT count(*) FROM ducklake_snapshots('lake')")[0][0]
    report = execute(lake, selection="reference", limits=LIMITS)
    assert (report.programs, report.verdicts) == (0, 0)
    assert q(lake, "SELECT count(*), max(executed_at) FROM silver.executions")[0] == before
    assert q(lake, "SELECT count(*) FROM ducklake_snapshots('lake')")[0][0] == snapshots
    assert q(lake, "SELECT count(*) FROM (SELECT program_id, test_id, limits_hash FROM silver.executions "
                   "GROUP BY ALL HAVING count(*) > 1)")[0][0] == 0


def test_judged_in_process_is_false_for_out_of_process_kinds(hostile_lake):
    lake, _ = hostile_lake
    rows = q(lake, "SELECT t.kind, bool_or(e.judged_in_process), count(*) FILTER (WHERE e.judged_in_process IS NULL) "
                   "FROM silver.executions e JOIN silver.tests t USING (test_id) GROUP BY 1 ORDER BY 1")
    flags = {kind: (anytrue, nulls) for kind, anytrue, nulls in rows}
    for kind in ("assert", "call", "stdio"):
        assert flags[kind] == (False, 0), kind
    assert flags["unittest"][1] == 0


def test_judged_in_process_is_true_for_unittest(hostile_lake):
    """Needs the sandbox rewrite that sets Verdict.judged_in_process for kind 'unittest'."""
    lake, _ = hostile_lake
    rows = q(lake, "SELECT bool_and(e.judged_in_process) FROM silver.executions e JOIN silver.tests t USING (test_id) "
                   "WHERE t.kind = 'unittest'")
    assert rows == [(True,)]
    assert q(lake, "SELECT count(*) FROM gold.latest_executions WHERE judged_in_process")[0][0] == 2


def _pass_rates(lake) -> dict[str, float]:
    return dict(q(lake, "SELECT pb.source_id, r.pass_rate FROM gold.program_pass_rates r "
                        "JOIN silver.problems pb USING (problem_id)"))


def test_curation_knob_drops_in_process_verdicts(hostile_lake):
    """In-process (forgeable) verdicts are out of pass rates by default, and their unittest-only problems out of
    the training views with reason 'forgeable'; `--set exclude_in_process_judged=false` opts back in."""
    lake, _ = hostile_lake
    curate(lake)
    rates = _pass_rates(lake)
    assert "ut_ok" not in rates and "ut_surrogate_fail" not in rates
    assert rates["plain_ok"] == 1.0
    forgeable = q(lake, "SELECT p.source_id FROM gold.training_exclusions x JOIN silver.problems p USING (problem_id) "
                        "WHERE x.reason = 'forgeable' AND x.applied ORDER BY 1")
    assert [r[0] for r in forgeable] == ["ut_ok", "ut_surrogate_fail"]
    result = factory_cli("curate", "--set", "exclude_in_process_judged=false", lake=lake)
    assert result.returncode == 0, result.stderr
    rates = _pass_rates(lake)
    assert rates["ut_ok"] == 1.0 and rates["ut_surrogate_fail"] == 0.0 and rates["plain_ok"] == 1.0
    config = q(lake, "SELECT config FROM ops.runs WHERE stage = 'curate' ORDER BY started_at DESC LIMIT 1")[0][0]
    assert json.loads(config)["params"]["exclude_in_process_judged"] is False
    curate(lake)
    assert "ut_ok" not in _pass_rates(lake)


def test_curation_knob_sql_on_flagged_verdicts(tmp_path):
    """The knob's SQL on verdicts flagged in the lake itself (does not depend on which kinds the sandbox flags)."""
    lake = init_lake(tmp_path / "lake")
    _build(lake, tmp_path, sets=("asserts", "unittests"))
    execute(lake, selection="reference", limits=LIMITS)
    with stage_run("flag", {}, lake=lake) as run:
        run.con.execute("UPDATE silver.executions SET judged_in_process = (test_id IN "
                        "(SELECT test_id FROM silver.tests WHERE kind = 'unittest'))")
    curate(lake, {"exclude_in_process_judged": False})
    before = _pass_rates(lake)
    assert before["ut_ok"] == 1.0 and before["ut_surrogate_fail"] == 0.0 and before["plain_ok"] == 1.0
    curate(lake, {"exclude_in_process_judged": True})
    after = _pass_rates(lake)
    assert set(before) - set(after) == {"ut_ok", "ut_surrogate_fail"}
    assert {k: before[k] for k in after} == after
    with pytest.raises(Exception, match="true or false"):
        curate(lake, {"exclude_in_process_judged": "maybe"})


OLD_LATEST_EXECUTIONS = """SELECT program_id, test_id, status, cpu_ms, wall_ms, executed_at FROM silver.executions
WHERE status <> 'infra_error'
QUALIFY row_number() OVER (PARTITION BY program_id, test_id ORDER BY executed_at DESC, limits_hash) = 1"""


def test_lake_from_before_the_column_keeps_working(tmp_path):
    """A lake whose silver.executions predates judged_in_process gets the column on the next stage run."""
    lake = init_lake(tmp_path / "lake")
    _build(lake, tmp_path, sets=("asserts",))
    execute(lake, selection="reference", limits=LIMITS)
    n = q(lake, "SELECT count(*) FROM silver.executions")[0][0]
    con = connect(lake)  # turn it into the lake as the previous version left it
    con.execute("ALTER TABLE silver.executions DROP COLUMN judged_in_process")
    con.execute(f"CREATE OR REPLACE VIEW gold.latest_executions AS {OLD_LATEST_EXECUTIONS}")
    assert "judged_in_process" not in existing_columns(con)["silver.executions"]
    con.close()

    curate(lake)  # re-creates the views, which read the new column
    assert q(lake, "SELECT count(*), count(*) FILTER (WHERE judged_in_process = false) FROM silver.executions")[0] == (n, n)
    message = q(lake, "SELECT message FROM ops.runs WHERE stage = 'curate'")[0][0]
    assert "added silver.executions.judged_in_process" in message
    assert _pass_rates(lake)["plain_ok"] == 1.0
    report = execute(lake, selection="reference", limits=Limits(cpu_s=3.0, wall_min_s=6.0))  # new limits: new rows
    assert report.verdicts == n
    assert q(lake, "SELECT count(*) FROM silver.executions WHERE judged_in_process IS NOT NULL")[0][0] == 2 * n


# -- reward ---------------------------------------------------------------------------------------------------
def _fenced(code: str) -> str:
    return f"```python\n{code}```"


def test_reward_never_raises_on_candidate_failures():
    from factory.reward import score_completions

    gt = {"tests": [{"kind": "assert", "code": 'assert f(1) == "ab"'}, {"kind": "assert", "code": "assert f(2)"}],
          "entry_point": "f"}
    completions = [
        _fenced('def f(x):\n    return "a\\ud800b"\n'),
        _fenced('def f(x):\n    raise ValueError("bad \\ud800")\n'),
        _fenced('import sys\ndef f(x):\n    sys.stdout.buffer.write(b"\\xff\\xfe")\n    print("\\udcff")\n    return "ab"\n'),
        _fenced('def f(x):\n    return "\ud800"\n'),  # a raw lone surrogate in the completion text itself
        [{"role": "assistant", "content": None}],
        None,
        "no code at all",
        _fenced("def f(x):\n    return 'ab'\n"),
    ]
    rewards = score_completions(completions, [gt] * len(completions))
    # 'a\ud800b' is truthy: passes the second test only
    assert rewards == [0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def test_reward_excludes_in_process_tests_by_default():
    """Needs the sandbox rewrite (judged_in_process set for unittest verdicts)."""
    from factory.reward import compute_score, score_completions

    gt = json.dumps({"tests": [{"test_id": "a", "kind": "assert", "code": "assert f(1) == 1"},
                               {"test_id": "u", "kind": "unittest", "code": UNITTEST_BAD}], "entry_point": "f"})
    completion = _fenced("def f(x):\n    return x\n")
    assert score_completions([completion], [gt], exclude_in_process=False) == [0.5]
    assert compute_score("t", completion, gt, exclude_in_process=False) == 0.5
    assert compute_score("t", completion, gt) == 1.0  # the forgeable unittest verdict does not count
    only_unittest = json.dumps({"tests": [{"test_id": "u", "kind": "unittest", "code": UNITTEST_OK}], "entry_point": "f"})
    assert score_completions([completion], [only_unittest], exclude_in_process=False) == [1.0]
    assert score_completions([completion], [only_unittest]) == [0.0]
