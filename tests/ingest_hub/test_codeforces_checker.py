"""open-r1/codeforces problems with several correct outputs are judged by the dataset's own checker (#40: a correct
program printing another valid answer must not get reward 0).

The fixture is the hub tests' open-r1/codeforces layout (tests/ingest_hub/hubfixtures.py: problem 1/B "print two
positive integers whose sum is n"), with its ``generated_checker`` written as open-r1 publishes one: a Python script
run as ``python checker.py input.txt correct_output.txt solution_output.txt`` that prints 1 to accept. `factory
ingest` attaches it to silver.checkers (origin ``dataset``), curate/release/export carry it in the ground truth, and
`compute_score` runs it in the sandbox: "2 1" (not the jury's "1 2") scores 1.0, "0 3" 0.0. A problem whose
checker does not parse stays out of training (gold.training_exclusions, reason validation, needs_checker)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq

from factory.judging.file_checker import script_checker
from tests.ingest_hub import hubfixtures as fx
from tests.lakeutil import init_lake, query

# a checker in open-r1's generated_checker form: file names in argv, verdict on stdout
CF_SCRIPT = '''import sys


def main():
    input_path, answer_path, output_path = sys.argv[1:4]
    with open(input_path) as f:
        n = int(f.read().split()[0])
    with open(output_path) as f:
        tokens = f.read().split()
    if len(tokens) != 2 or not all(t.lstrip("-").isdigit() for t in tokens):
        print(0)
        return
    a, b = map(int, tokens)
    print(1 if a > 0 and b > 0 and a + b == n else 0)


if __name__ == "__main__":
    main()
'''


def _cli(env, *args):
    r = subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_generated_checker_judges_another_valid_answer(tmp_path):
    from factory.reward import compute_score

    base = fx.codeforces_rows()[1]   # 1/B Split: several correct outputs
    split = {**base, "generated_checker": CF_SCRIPT,
             "official_tests": [{"input": "3\n", "output": "1 2\n"}, {"input": "10\n", "output": "1 9\n"}],
             "official_tests_complete": True}
    broken = {**base, "id": "3/B", "contest_id": "3", "title": "Split again", "generated_checker": "def check(:\n",
              "official_tests": [{"input": "4\n", "output": "1 3\n"}], "official_tests_complete": True}
    files = {"data/test-00000-of-00001.parquet": fx.write_parquet(tmp_path / "s/test.parquet", [split, broken],
                                                                  fx.CODEFORCES_SCHEMA)}
    cache = tmp_path / "hub"
    fx.write_hub_cache(cache, "open-r1/codeforces", files)
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    lake = init_lake(tmp_path / "lake")
    _cli(env, "ingest", "hf-codeforces", "--path", "hf://datasets/open-r1/codeforces", "--lake", str(lake))

    # ingest attached the dataset's checker (wrapped into check(input, expected, actual)); the broken one stays out
    attached = query(lake, "SELECT p.source_id, c.policy, c.origin, c.code FROM silver.checkers c "
                           "JOIN silver.problems p USING (problem_id)")
    assert [(s, pol, o) for s, pol, o, _ in attached] == [("1/B", "program", "dataset")]
    assert attached[0][3] == script_checker(CF_SCRIPT)

    # the lake's verdicts are the checker's too: samples printing another valid answer pass, a wrong one fails
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "1/B", "solution": code}) + "\n" for code in (
        "n = int(input())\nprint(n - 1, 1)", "n = int(input())\nprint(0, n)")))
    _cli(env, "execute", "--samples", str(samples), "--model", "m", "--lake", str(lake))
    verdicts = query(lake, "SELECT pr.code, list(e.status ORDER BY e.test_id) FROM gold.latest_executions e "
                           "JOIN silver.programs pr USING (program_id) GROUP BY ALL ORDER BY 1")
    assert verdicts == [("n = int(input())\nprint(0, n)", ["fail", "fail"]),
                        ("n = int(input())\nprint(n - 1, 1)", ["pass", "pass"])]

    _cli(env, "curate", "--lake", str(lake))
    excluded = query(lake, "SELECT p.source_id, x.reason, x.detail, x.applied FROM gold.training_exclusions x "
                           "JOIN silver.problems p USING (problem_id)")
    assert excluded == [("3/B", "validation", "needs_checker: several correct outputs, checker not wired", True)]
    _cli(env, "release", "create", "cf", "--view", "gold.rl_problems", "--lake", str(lake))
    _cli(env, "export", "cf", "--format", "verl", "--out", str(tmp_path / "verl"), "--lake", str(lake))
    rows = pq.read_table(tmp_path / "verl" / "test.parquet").to_pylist()
    assert len(rows) == 1
    gt = rows[0]["reward_model"]["ground_truth"]
    assert json.loads(gt)["checker"] == script_checker(CF_SCRIPT)
    assert json.loads(gt)["outputs"] == ["1 2\n", "1 9\n"]

    def score(code):
        return compute_score("codeforces", f"```python\n{code}\n```", gt)

    assert score("n = int(input())\nprint(n - 1, 1)") == 1.0     # another valid answer on every test
    assert score("n = int(input())\nprint(1, n - 1)") == 1.0     # the jury's own
    assert score("n = int(input())\nprint(0, n)") == 0.0         # 0 is not positive
    assert score("n = int(input())\nprint(n - 1, 1, 0)") == 0.0  # three numbers
    assert score("print(2, 1)") == 0.5                           # right on n = 3 only (soft reward)


def test_script_checker_accepts_only_a_clean_1():
    """open-r1's rule: exit 0 and stdout exactly "1" (stripped); anything else the script does is a reject."""
    import pytest

    from factory.sandbox import Job, Limits, SandboxPool, TestSpec

    with pytest.raises(ValueError, match="does not parse"):
        script_checker("def check(:\n")
    assert script_checker(fx.CF_CHECKER) == fx.CF_CHECKER   # already check(input, expected, actual)
    scripts = {"accept": "print(1)", "reject": "print(0)", "chatty": "print('ok')\nprint(1)",
               "exit 1": "print(1)\nimport sys\nsys.exit(1)", "exit 0": "print(1)\nraise SystemExit(0)",
               "crash": "raise RuntimeError('checker bug')",
               "reads files": "import sys\nprint(int(open(sys.argv[3]).read().split()[0] == open(sys.argv[2]).read()"
                              ".split()[0] and open('input.txt').read() == '3\\n'))"}
    jobs = [Job(name, "print(1, 2)", [TestSpec("t", "stdio", input="3\n", expected="1 2\n", comparison="token",
                                               checker=script_checker(s))]) for name, s in scripts.items()]
    with SandboxPool(Limits(cpu_s=5)) as pool:
        got = {v.program_id: (v.status, v.error_type) for v in pool.run(jobs)}
    assert got == {"accept": ("pass", None), "reject": ("fail", "WrongAnswer"), "chatty": ("fail", "WrongAnswer"),
                   "exit 1": ("fail", "WrongAnswer"), "exit 0": ("pass", None), "crash": ("fail", "CheckerError"),
                   "reads files": ("pass", None)}
