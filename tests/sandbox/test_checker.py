"""Checker programs and per-job CPU limits in the real sandbox: only an explicit accept passes, a checker runs
sandboxed (never in the parent), and a calibrated limit replaces the pool's for that job only."""
from __future__ import annotations

import json

from factory.sandbox import Job, TestSpec

from sbx_helpers import run

PERMUTATION = '''
def check(input, expected, actual):
    n = int(input.split()[0])
    tokens = actual.split()
    if len(tokens) != n:
        return False, f"expected {n} numbers, got {len(tokens)}"
    return sorted(map(int, tokens)) == list(range(1, n + 1))
'''
ASCENDING = "n = int(input())\nprint(*range(1, n + 1))\n"
DESCENDING = "n = int(input())\nprint(*range(n, 0, -1))\n"


def _stdio(checker, stdin="4\n", expected="1 2 3 4\n"):
    return [TestSpec("t", "stdio", input=stdin, expected=expected, checker=checker)]


def _one(pool, job):
    (v,) = run(pool, [job]).values()
    return v


def test_checker_accepts_any_valid_answer_and_rejects_wrong(fast_pool):
    assert _one(fast_pool, Job("asc", ASCENDING, _stdio(PERMUTATION))).status == "pass"
    other = _one(fast_pool, Job("desc", DESCENDING, _stdio(PERMUTATION)))
    assert other.status == "pass"          # a different valid answer: exact comparison would fail it
    assert _one(fast_pool, Job("plain", DESCENDING, [TestSpec("t", "stdio", input="4\n", expected="1 2 3 4\n")]
                               )).status == "fail"
    wrong = _one(fast_pool, Job("wrong", "print(1, 1, 2, 3)", _stdio(PERMUTATION)))
    assert wrong.status == "fail" and wrong.error_type == "WrongAnswer"
    short = _one(fast_pool, Job("short", "print(1, 2)", _stdio(PERMUTATION)))
    assert short.status == "fail" and "got 2" in short.error_message
    assert json.loads(short.sandbox_meta)["checker"]["score"] == 0.0


def test_only_an_explicit_accept_passes(fast_pool):
    cases = {
        "crash on garbage": (PERMUTATION, "print('a b c d')", "CheckerError"),
        "checker loops": ("def check(i, e, a):\n    while True:\n        pass\n", ASCENDING, "CheckerError"),
        "partial score": ("def check(i, e, a):\n    return 0.5\n", ASCENDING, "PartialScore"),
        "truthy non-verdict": ("def check(i, e, a):\n    return 'yes'\n", ASCENDING, "CheckerError"),
        "no check function": ("def judge(i, e, a):\n    return True\n", ASCENDING, "CheckerError"),
        "nan score": ("def check(i, e, a):\n    return float('nan')\n", ASCENDING, "CheckerError"),
    }
    for name, (checker, program, error_type) in cases.items():
        v = _one(fast_pool, Job(name, program, _stdio(checker)))
        assert (v.status, v.error_type) == ("fail", error_type), (name, v.status, v.error_type, v.error_message)


def test_candidate_failures_are_not_sent_to_the_checker(fast_pool):
    accept_all = "def check(i, e, a):\n    return True\n"
    crash = _one(fast_pool, Job("crash", "raise SystemExit(3)", _stdio(accept_all)))
    assert crash.status == "runtime_error" and crash.exit_code == 3
    slow = _one(fast_pool, Job("slow", "while True:\n    pass\n", _stdio(accept_all)))
    assert slow.status == "timeout"


def test_checker_runs_sandboxed_not_in_the_parent(fast_pool, tmp_path):
    marker = tmp_path / "written-by-checker"
    checker = (f"def check(i, e, a):\n    open({str(marker)!r}, 'w').write('x')\n    return True\n")
    v = _one(fast_pool, Job("p", ASCENDING, _stdio(checker)))
    assert v.status == "fail" and v.error_type == "CheckerError"
    assert not marker.exists()


def test_checker_of_call_tests_sees_serialized_values(fast_pool):
    unordered = "import json\ndef check(i, e, a):\n    return sorted(json.loads(a)) == sorted(json.loads(e))\n"
    spec = TestSpec("c", "call", input="[[3, 1, 2]]", expected="[1, 2, 3]", checker=unordered)
    job = Job("rev", "def f(xs):\n    return sorted(xs, reverse=True)\n", [spec], entry_point="f")
    assert _one(fast_pool, job).status == "pass"
    job = Job("bad", "def f(xs):\n    return xs[:2]\n", [spec], entry_point="f")
    assert _one(fast_pool, job).status == "fail"


def test_checker_only_on_stdio_or_call_tests(fast_pool):
    job = Job("a", "def f():\n    return 1\n", [TestSpec("t", "assert", code="assert f() == 1", checker="x")],
              entry_point="f")
    v = _one(fast_pool, job)
    assert v.status == "infra_error" and v.error_type == "InvalidTest"


SPIN = "import time\ndef spin(s):\n    t = time.process_time()\n    while time.process_time() - t < s:\n" \
       "        pass\n    return 1\n"


def test_per_job_cpu_limit(fast_pool):
    """FAST allows 0.5 s per test: a job calibrated to 2 s completes a 0.8 s test, the same test times out
    without it, and a job calibrated below the pool's limit times out sooner."""
    test = [TestSpec("t", "call", input="[0.8]", expected="1")]
    default = _one(fast_pool, Job("default", SPIN, test, entry_point="spin"))
    assert default.status == "timeout" and json.loads(default.limits)["cpu_s"] == 0.5
    longer = _one(fast_pool, Job("longer", SPIN, test, entry_point="spin", cpu_s=2.0))
    assert longer.status == "pass" and json.loads(longer.limits)["cpu_s"] == 2.0
    stdin_test = [TestSpec("s", "stdio", input="", expected="1\n")]
    script = SPIN + "print(spin(0.3))\n"
    shorter = _one(fast_pool, Job("shorter", script, stdin_test, cpu_s=0.1))
    assert shorter.status == "timeout" and shorter.cpu_ms < 400
    assert _one(fast_pool, Job("ok", script, stdin_test)).status == "pass"
