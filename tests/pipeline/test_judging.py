"""Per-problem judging on real CodeContests problems: rules detected from statements (tolerance, YES/NO case),
checker programs from files, calibrated CPU limits; `factory execute` re-judges exactly the affected problems."""
from __future__ import annotations

import json

import pytest

from factory.errors import InputError
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from factory.judging.rules import detect_rule, load_judging
from factory.lake import connect
from factory.stages.checkers import calibrated_limit, run_calibrate, run_checkers
from factory.sandbox import Job, Limits, SandboxPool, TestSpec

from tests.lakeutil import factory_cli, init_lake, query

# real problems whose references fail under the default token comparison only because of the comparison
TOLERANCE = "CodeContests/1461_c_random_events_9295"     # prints 0.72 where the jury wrote 0.720000 ... (1e-6)
YES_NO = "CodeContests/791_b_bear_and_friendship_condition_8388"   # jury answers "No", the reference "NO"
ANY_ORDER = "CodeContests/27_b_tournament_1914"           # "print any of them": needs a checker program
PLAIN = "CodeContests/1003_f_abbreviation_11357"
LIMITS = Limits(cpu_s=2.0)


def _references(lake, source_ids):
    return [r[0] for r in query(lake, """SELECT p.program_id FROM silver.programs p JOIN silver.problems pb
        USING (problem_id) WHERE p.origin = 'reference' AND list_contains(?, pb.source_id)""", [source_ids])]


def _passed(lake, source_id) -> tuple[int, int]:
    return query(lake, """SELECT count(*) FILTER (WHERE e.status = 'pass'), count(*) FROM gold.latest_executions e
        JOIN silver.programs p USING (program_id) JOIN silver.problems pb USING (problem_id)
        WHERE p.origin = 'reference' AND pb.source_id = ?""", [source_id])[0]


@pytest.fixture(scope="module")
def cc_lake(tmp_path_factory, shared_data):
    tmp = tmp_path_factory.mktemp("judging")
    lake = init_lake(tmp / "lake")
    ingest_source("codecontests", [shared_data / "codecontests_subset300" / "codecontests_subset300.jsonl"],
                  lake=lake)
    chosen = [TOLERANCE, YES_NO, ANY_ORDER, PLAIN]
    ids = _references(lake, chosen)
    assert len(ids) == 4
    # the judging before any rule (execute attaches the shipped ones by default: tests/pipeline/test_shipped_rules)
    execute(lake, program_ids=ids, limits=LIMITS, shipped_rules=False)
    return lake, ids, chosen, tmp


def test_statement_rules(cc_lake):
    lake, ids, chosen, _ = cc_lake
    assert _passed(lake, TOLERANCE)[0] == 0 and _passed(lake, YES_NO)[0] == 0
    report = run_checkers(lake, ["codecontests"])
    rules = dict(query(lake, """SELECT pb.source_id, c.policy || ':' || c.origin || ':' || coalesce(c.atol, 0)
        FROM silver.checkers c JOIN silver.problems pb USING (problem_id)"""))
    assert rules[TOLERANCE] == "float:statement:1e-06"
    assert rules[YES_NO] == "casefold:answers:0.0"
    assert ANY_ORDER not in rules and PLAIN not in rules
    assert report["rules"] >= 30           # 24 tolerances + 15 case rules among the 300 (measured: 39)
    assert run_checkers(lake, ["codecontests"])["changed"] == 0     # idempotent: no new snapshot
    before = query(lake, "SELECT count(*) FROM silver.executions")[0][0]
    rep = execute(lake, program_ids=ids, limits=LIMITS, shipped_rules=False)
    assert rep.programs == 2                # only the two problems whose rule changed are re-judged
    assert _passed(lake, TOLERANCE) == (10, 10) and _passed(lake, YES_NO) == (10, 10)
    assert query(lake, "SELECT count(*) FROM silver.executions")[0][0] == before + 20
    assert execute(lake, program_ids=ids, limits=LIMITS, shipped_rules=False).programs == 0


def test_checker_program_from_file(cc_lake, tmp_path):
    lake, ids, _, _ = cc_lake
    folder = tmp_path / "checkers"
    folder.mkdir()
    # 27B: n players, all games but one given as "winner loser"; any missing game consistent with a strict
    # ranking (the winner sleeps less) is accepted.
    (folder / "CodeContests__27_b_tournament_1914.py").write_text('''
def check(input, expected, actual):
    data = input.split()
    n = int(data[0])
    games = [(int(data[i]), int(data[i + 1])) for i in range(1, len(data) - 1, 2)]
    out = actual.split()
    if len(out) != 2:
        return False
    x, y = int(out[0]), int(out[1])
    played = {frozenset(g) for g in games}
    pairs = {frozenset((a, b)) for a in range(1, n + 1) for b in range(a + 1, n + 1)}
    if x == y or frozenset((x, y)) not in pairs - played:
        return False
    wins = [0] * (n + 1)
    for w, _ in games + [(x, y)]:
        wins[w] += 1
    beats = set(games + [(x, y)])
    order = sorted(range(1, n + 1), key=lambda p: -wins[p])
    return all((order[i], order[j]) in beats for i in range(n) for j in range(i + 1, n))
''')
    assert _passed(lake, ANY_ORDER)[0] < 10
    run_checkers(lake, ["codecontests"], folder)
    execute(lake, program_ids=ids, limits=LIMITS, shipped_rules=False)
    assert _passed(lake, ANY_ORDER) == (10, 10)
    # wrong answers are still wrong under the checker: a self-game, a game already played
    rule = next(j for j in load_judging_of(lake).values() if j.policy == "program")
    tests = query(lake, "SELECT t.test_id, t.input, t.expected FROM silver.tests t JOIN silver.problems pb "
                        "USING (problem_id) WHERE pb.source_id = ?", [ANY_ORDER])
    programs = {"self": "print(1, 1)", "played": "import sys\nd = sys.stdin.read().split()\nprint(d[1], d[2])"}
    jobs = [Job(name, code, [rule.apply(TestSpec(t, "stdio", input=i, expected=e)) for t, i, e in tests])
            for name, code in programs.items()]
    with SandboxPool(LIMITS, workers=2) as pool:
        statuses = {(v.program_id, v.status) for v in pool.run(jobs)}
    assert statuses == {("self", "fail"), ("played", "fail")}


def load_judging_of(lake):
    con = connect(lake, read_only=True)
    try:
        return load_judging(con)
    finally:
        con.close()


def test_bad_checker_files_are_named(cc_lake, tmp_path):
    lake = cc_lake[0]
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "CodeContests__27_b_tournament_1914.py").write_text("def judge(a, b, c):\n    return True\n")
    with pytest.raises(InputError, match="check\\(input, expected, actual\\)"):
        run_checkers(lake, ["codecontests"], folder)
    (folder / "CodeContests__27_b_tournament_1914.py").unlink()
    (folder / "CodeContests__no_such_problem.py").write_text("def check(i, e, a):\n    return True\n")
    with pytest.raises(InputError, match="no_such_problem"):
        run_checkers(lake, ["codecontests"], folder)


def test_calibrated_limits(cc_lake):
    lake, ids, chosen, _ = cc_lake
    # only the chosen problems (a source filter would run all 300 references)
    report = run_calibrate(lake, ["codecontests"], factor=4.0, floor_s=0.5, cap_s=6.0, repeats=2,
                           problem_ids=[r[0] for r in query(lake, "SELECT problem_id FROM silver.problems "
                                                                  "WHERE list_contains(?, source_id)", [chosen])])
    assert report["problems"] == len(chosen) and report.get("calibrated") == len(chosen)
    rows = query(lake, "SELECT reference_cpu_ms, cpu_s, status FROM silver.time_limits")
    for ms, cpu_s, status in rows:
        assert status == "calibrated" and cpu_s == calibrated_limit(ms / 1000, 4.0, 0.5, 6.0)
    before = query(lake, "SELECT count(*) FROM silver.executions")[0][0]
    execute(lake, program_ids=ids, limits=LIMITS, shipped_rules=False)
    limits = query(lake, """SELECT DISTINCT e.limits::JSON->>'cpu_s', t.cpu_s FROM silver.executions e
        JOIN silver.programs p USING (program_id) JOIN silver.time_limits t USING (problem_id)
        WHERE e.executed_at = (SELECT max(executed_at) FROM silver.executions)""")
    assert limits and all(float(a) == b for a, b in limits)
    assert query(lake, "SELECT count(*) FROM silver.executions")[0][0] == before + 10 * len(ids)
    # --time-limits fixed reads the verdicts already stored under the run's own limit: nothing to do
    assert execute(lake, program_ids=ids, limits=LIMITS, time_limits="fixed", shipped_rules=False).programs == 0


def test_cli(cc_lake):
    lake = cc_lake[0]
    out = factory_cli("checkers", "--source", "codecontests", lake=lake)
    assert out.returncode == 0, out.stderr
    assert "changed: 0" in out.stdout
    out = factory_cli("execute", "--time-limits", "sometimes", lake=lake)
    assert out.returncode != 0 and "sometimes" in out.stderr


@pytest.mark.parametrize("text, policy, atol", [
    ("if its absolute or relative error does not exceed 10^{-6}.", "float", 1e-6),
    ("The answer is correct if the relative or absolute error doesn't exceed 10 - 9.", "float", 1e-9),
    ("absolute or relative measure of the inaccuracy of your answer should not exceed 10 - 6", "float", 1e-6),
    ("print the point with five digits after the decimal point", "float", 1e-5),
    ("You can print each letter in any case (upper or lower).", "casefold", None),
    ("Print the number of ways modulo 10^9+7.", None, None),
    ("error 404 occurs when 10 - 6 people come", None, None),
])
def test_detect_rule(text, policy, atol):
    rule = detect_rule(text, ["1\n"])
    assert (rule.policy if rule else None) == policy
    if atol is not None:
        assert rule.atol == pytest.approx(atol)


def test_yes_no_answers_rule():
    assert detect_rule("Print YES or NO.", ["YES\n", "No\nYES"]).policy == "casefold"
    assert detect_rule("Print YES and the tree.", ["YES\n1 2\n", "NO\n"]) is None
    assert detect_rule("", []) is None
    assert json.dumps(detect_rule("", ["no"]).__dict__)


def test_exported_ground_truth_carries_the_judging_rules(cc_lake, tmp_path):
    """gold.rl_problems -> the export's ground truth carries the tolerance / case rule, the checker and the
    calibrated limit; factory.reward then scores the references 1.0 (and < 1 without those keys)."""
    from factory.stages.curate import curate
    from factory.release.prompts import ground_truth
    from factory.reward import score_completions

    lake, _, chosen, _ = cc_lake
    folder = tmp_path / "chk"
    folder.mkdir()
    (folder / "CodeContests__27_b_tournament_1914.py").write_text(
        "def check(input, expected, actual):\n"
        "    d = list(map(int, input.split())); n = d[0]; seen = set()\n"
        "    for i in range(1, len(d) - 1, 2): seen.add(frozenset(d[i:i + 2]))\n"
        "    x, y = map(int, actual.split())\n"
        "    return x != y and frozenset((x, y)) not in seen and max(x, y) <= n\n")
    run_checkers(lake, ["codecontests"], folder)
    curate(lake)
    con = connect(lake, read_only=True)
    rows = con.execute("SELECT * FROM gold.rl_problems WHERE list_contains(?, source_id) ORDER BY source_id",
                       [chosen]).to_arrow_table().to_pylist()
    refs = dict(con.execute("""SELECT pb.source_id, p.code FROM silver.programs p JOIN silver.problems pb
        USING (problem_id) WHERE p.origin = 'reference' AND list_contains(?, pb.source_id)""", [chosen]).fetchall())
    con.close()
    truths = {r["source_id"]: ground_truth(r) for r in rows}
    assert truths[TOLERANCE]["comparison"] == "float" and truths[TOLERANCE]["atol"] == pytest.approx(1e-6)
    assert truths[YES_NO]["comparison"] == "casefold"
    assert "def check" in truths[ANY_ORDER]["checker"]
    assert all(t.get("cpu_s") for t in truths.values())        # calibrated by test_calibrated_limits
    assert "comparison" not in truths[PLAIN] and "checker" not in truths[PLAIN]
    ids = sorted(truths)
    completions = [f"```python\n{refs[s]}\n```" for s in ids]
    assert score_completions(completions, [truths[s] for s in ids], binary=True) == [1.0] * len(ids)
    bare = [{k: v for k, v in truths[s].items() if k in ("inputs", "outputs")} for s in ids]
    rewards = dict(zip(ids, score_completions(completions, bare, binary=True)))
    assert rewards[PLAIN] == 1.0 and rewards[TOLERANCE] == rewards[YES_NO] == 0.0
