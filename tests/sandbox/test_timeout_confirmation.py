"""A timeout is reported only when a re-run confirms it: genuine loops stay timeouts (at the cost of one probe
re-run, not of re-running every test), tests that passed are untouched, and the pool says how it decided."""
from __future__ import annotations

from factory.sandbox import Job, Limits, SandboxPool, TestSpec

LIMITS = Limits(cpu_s=0.3, wall_min_s=2.0)
PROGRAM = "def f(x):\n    while x >= 3:\n        pass\n    return x\n"


def _job() -> Job:
    return Job("p", PROGRAM, [TestSpec(str(i), "assert", code=f"assert f({i}) == {i}") for i in range(6)],
               entry_point="f")


def test_genuine_timeouts_stand_and_passes_are_untouched():
    with SandboxPool(LIMITS, workers=1) as pool:
        confirmed = {v.test_id: v.status for v in pool.run([_job()])}
    with SandboxPool(LIMITS, workers=1, confirm_timeouts=False) as pool:
        single = {v.test_id: v.status for v in pool.run([_job()])}
    assert confirmed == single == {"0": "pass", "1": "pass", "2": "pass", "3": "timeout", "4": "timeout",
                                   "5": "timeout"}


def test_stdio_loop_is_confirmed_once():
    job = Job("s", "import sys\nn = int(sys.stdin.read())\nwhile n: pass\nprint(n)\n",
              [TestSpec("a", "stdio", input="0", expected="0"), TestSpec("b", "stdio", input="1", expected="1")])
    with SandboxPool(LIMITS, workers=1) as pool:
        got = {v.test_id: v.status for v in pool.run([job])}
    assert got == {"a": "pass", "b": "timeout"}
