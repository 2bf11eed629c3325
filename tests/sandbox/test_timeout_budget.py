"""A looping program costs one CPU budget, not one per test (#33): after its first timeout its later tests are
not run (status timeout, error_type NotRun, no CPU); references (``stop_at_timeout=False``) run every test."""
from __future__ import annotations

from factory.sandbox import Job, Limits, SandboxPool, TestSpec

LOOP = "def f(x):\n    while True:\n        pass\n"


def test_a_looping_program_stops_at_its_first_timeout():
    limits = Limits(cpu_s=0.5)
    jobs = [Job("fn", LOOP, [TestSpec(f"t{i}", "assert", f"assert f({i}) == {i}") for i in range(5)], entry_point="f"),
            Job("io", "while True:\n    pass\n", [TestSpec(f"s{i}", "stdio", input="", expected="1") for i in range(4)]),
            Job("half", "def f(x):\n    while x == 1:\n        pass\n    return x\n",
                [TestSpec(f"h{i}", "assert", f"assert f({i}) == {i}") for i in range(3)], entry_point="f"),
            Job("ref", LOOP, [TestSpec(f"r{i}", "assert", f"assert f({i}) == {i}") for i in range(3)], entry_point="f",
                stop_at_timeout=False)]
    with SandboxPool(limits, workers=2) as pool:
        got = {(v.program_id, v.test_id): v for v in pool.run(jobs)}
    for pid, first, rest in (("fn", "t0", ["t1", "t2", "t3", "t4"]), ("io", "s0", ["s1", "s2", "s3"])):
        assert (got[(pid, first)].status, got[(pid, first)].error_type) == ("timeout", "Timeout")
        for t in rest:
            v = got[(pid, t)]
            assert (v.status, v.error_type, v.cpu_ms) == ("timeout", "NotRun", 0.0), (pid, t, v.status)
    # tests before the timeout keep their verdicts; tests after it never count as passed
    assert [got[("half", f"h{i}")].status for i in range(3)] == ["pass", "timeout", "timeout"]
    assert got[("half", "h2")].error_type == "NotRun"
    # a reference runs every test under its own budget
    assert [(got[("ref", f"r{i}")].status, got[("ref", f"r{i}")].error_type) for i in range(3)] == \
        [("timeout", "Timeout")] * 3
    assert sum(got[("fn", f"t{i}")].cpu_ms for i in range(5)) < 1000 * (limits.cpu_s + 0.5)
