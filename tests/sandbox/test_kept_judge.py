"""The kept judge: one judge process serves a worker's function-style programs one after another (one fork
per program instead of two).  What one program's tests did must not reach the next program's verdicts, and
anything abnormal replaces the judge."""
from __future__ import annotations

import os

import pytest

from factory.sandbox import Job, SandboxPool, TestSpec

from sbx_helpers import FAST, run

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the kept judge needs a uid of its own (root)")

OK = "def f():\n    return 1\n"


def A(pid, *asserts, program=OK):
    return Job(pid, program, [TestSpec(f"t{k}", "assert", a) for k, a in enumerate(asserts)], entry_point="f")


def MARK(pid):
    """Tests that set a marker in the judge's own sys module, and report whether it was already there."""
    return A(pid, "import sys\nseen = getattr(sys, 'kept_judge_marker', 0)\nsys.kept_judge_marker = 1\n"
                  "assert seen == 0, 'same judge'")


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(FAST, workers=1) as p:
        yield p


def test_meta_says_kept(pool):
    import json
    assert json.loads(pool.meta_json)["judge_kept"] is True


def test_judge_is_reused_between_clean_programs(pool):
    first = run(pool, [MARK("m1")])[("m1", "t0")]
    second = run(pool, [MARK("m2")])[("m2", "t0")]
    assert first.status == "pass"
    assert second.status == "fail", second   # the marker the first program's tests left: same judge


@pytest.mark.parametrize("trouble, expect", [
    ("while True: pass", "timeout"),                                         # judge killed with the run
    ("import threading, time; threading.Thread(target=time.sleep, args=(60,), daemon=True).start()", "pass"),
    ("open('/tmp/judge_file', 'w').write('expected: 42')", "pass"),          # files in the judge's /tmp
])
def test_abnormal_or_dirty_program_replaces_the_judge(pool, trouble, expect):
    run(pool, [MARK("warm")])
    v = run(pool, [A("trouble", trouble)])[("trouble", "t0")]
    assert v.status == expect, v
    after = run(pool, [MARK("after")])[("after", "t0")]
    assert after.status == "pass", after    # a fresh judge: no marker from before


def test_a_process_the_tests_leave_ends_with_the_judge_and_costs_later_programs_nothing(pool):
    """Test code runs in the judge under the judge's uid, so a process it starts is out of the program-uid kill:
    the worker must end it with the judge at once, not wait out its reaping deadline (2 s) on every later program."""
    import time
    run(pool, [MARK("warm")])
    v = run(pool, [A("bg", "import subprocess; subprocess.Popen(['sleep', '777'])")])[("bg", "t0")]
    assert v.status == "pass", v
    start = time.monotonic()
    after = [run(pool, [MARK(f"after{i}")])[(f"after{i}", "t0")] for i in range(5)]
    took = time.monotonic() - start
    assert after[0].status == "pass", after[0]     # a fresh judge: no marker from before
    assert took < 5.0, f"5 programs after a leftover process took {took:.1f} s (each waited out the reaper)"


def test_program_driven_import_replaces_the_judge(pool):
    run(pool, [MARK("warm")])
    program = "import colorsys\ndef f():\n    return colorsys\n"   # a module handle: the judge imports its own
    v = run(pool, [A("imp", "m = f(); assert m.rgb_to_hsv(0, 0, 0) == (0, 0, 0)", program=program)])
    assert v[("imp", "t0")].status == "pass", v
    assert run(pool, [MARK("after")])[("after", "t0")].status == "pass"


def test_builtins_and_streams_restored_between_programs(pool):
    dirty = A("dirty", "import builtins, sys\nbuiltins.abs = lambda x: -1\nbuiltins.kept_extra = 1\n"
                       "sys.setrecursionlimit(200)\nsys.stdout = None\nassert abs(3) == -1")
    assert run(pool, [dirty])[("dirty", "t0")].status == "pass"
    clean = A("clean", "assert abs(-3) == 3",
              "import builtins, sys; assert not hasattr(builtins, 'kept_extra') and sys.stdout is not None",
              "def d(n): return 0 if n == 0 else 1 + d(n - 1)\nassert d(500) == 500")
    vs = run(pool, [clean])
    assert all(vs[("clean", f"t{k}")].status == "pass" for k in range(3)), vs


def test_program_cannot_reach_the_kept_judge(pool):
    """The program runs under another uid than the judge: it can neither signal nor inspect it."""
    program = ("import os, signal\ndef f():\n    hits = []\n    for p in range(1, 200):\n"
               "        if p == os.getpid():\n            continue\n        try:\n            os.kill(p, signal.SIGKILL)\n            hits.append(p)\n"
               "        except OSError:\n            pass\n    return hits\n")
    v = run(pool, [A("killer", "import os\nhits = f()\nassert os.getpid() not in hits", program=program),
                   MARK("m3")])
    assert v[("killer", "t0")].status == "pass", v[("killer", "t0")]


def test_many_programs_mixed_modes_keep_verdicts(pool):
    """Function-style, stdio and failing programs interleaved: every verdict as expected."""
    jobs = []
    for k in range(40):
        if k % 3 == 0:
            jobs.append(Job(f"io{k}", "print(int(input()) * 2)", [TestSpec("s", "stdio", input=f"{k}\n",
                                                                            expected=f"{2 * k}\n")]))
        elif k % 3 == 1:
            jobs.append(A(f"ok{k}", f"assert f() + {k} == {k + 1}"))
        else:
            jobs.append(A(f"bad{k}", "assert f() == 2"))
    vs = run(pool, jobs)
    for (pid, _), v in vs.items():
        assert v.status == ("fail" if pid.startswith("bad") else "pass"), v
    assert len(vs) == 40
