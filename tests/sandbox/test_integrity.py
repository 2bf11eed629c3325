"""Integrity suite: the candidate program must not decide, forge or read its own verdict.

Design held here (judge/candidate split): test code (assert/check/call/pytest) runs in a separate judge
process and reaches the program through an RPC proxy; the candidate runs alone, with a minimal root
filesystem, no expected values, no sibling state, and no channel that can carry a verdict.  Six classes:

1. the program's own process decides (rebinding builtins/modules the test uses, tracers, rigged dunders,
   loops whose assert never runs);
2. forged result channel (protocol-looking bytes on every fd, dup2, closed fds, "PASSED");
3. expected values entering the candidate (gc/frames/inspect/memory scans, disk, /proc, datasets);
4. programs reaching each other (keyring, /tmp, /dev/shm, SysV shm, sockets, memory remnants, ptrace);
5. one program cannot break the run (surrogates, invalid UTF-8, deep/huge values, interrupts);
6. benign programs must still pass (threads, subprocesses, signals, recursion, generators, LeetCode
   preamble classes, in-place mutation, pytest.raises, KodCode-style tests).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import sys
import tempfile
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

from factory.sandbox import Job, SandboxPool, TestSpec, serialize_value

from sbx_helpers import FAST, run

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("FACTORY_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data")

NOT_PASS = ("fail", "runtime_error", "timeout", "memory_limit", "output_limit")
WRONG = ("fail", "runtime_error")
PASS = ("pass",)
SAFE_ROW = ("pass", "fail", "runtime_error", "timeout", "memory_limit", "output_limit")  # never infra_error


def D(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def tagged_marker() -> tuple[str, str]:
    """(tag, marker): the program may know the format 'SBXMARK<tag>' + 24 hex, never the secret part."""
    tag = uuid.uuid4().hex[:8]
    return tag, "SBXMARK" + tag + uuid.uuid4().hex[:24]


@dataclasses.dataclass
class Case:
    job: Job
    want: tuple
    pool: str = "fast"            # 'fast' (FAST limits) or 'default' (Limits())
    extra: object = None          # callable(list[Verdict]) -> None, extra assertions


CASES: dict[str, Case] = {}
MARKERS: dict[str, str] = {}  # case name -> the secret expected value it must not find


def case(name, job, want, pool="fast", extra=None):
    assert name not in CASES
    job.program_id = name
    if any(t.kind in ("pytest", "unittest") for t in job.tests):
        pool = "default"  # importing pytest alone is ~0.5 s CPU: FAST limits would only measure that
    CASES[name] = Case(job, (want,) if isinstance(want, str) else tuple(want), pool, extra)


def A(program, *asserts, entry=None, preamble=""):
    return Job("", program, [TestSpec(f"t{k}", "assert", a) for k, a in enumerate(asserts)], entry_point=entry,
               preamble=preamble)


def CHK(program, check, entry="f", preamble=""):
    return Job("", program, [TestSpec("check", "check", check)], entry_point=entry, preamble=preamble)


def CALL(program, expected, args=(), entry="f", preamble="", raw_expected=None):
    exp = raw_expected if raw_expected is not None else (None if expected is None else serialize_value(expected))
    return Job("", program, [TestSpec("c", "call", input=serialize_value(list(args)), expected=exp)],
               entry_point=entry, preamble=preamble)


def IO(program, stdin, expected, comparison="exact"):
    return Job("", program, [TestSpec("s", "stdio", input=stdin, expected=expected, comparison=comparison)])


def PYT(program, test):
    return Job("", program, [TestSpec("py", "pytest", test)])


def UT(program, test):
    return Job("", program, [TestSpec("ut", "unittest", test)])


def _actual(vs):
    assert len(vs) == 1 and vs[0].actual is not None, [(v.status, v.error_message) for v in vs]
    return json.loads(vs[0].actual)


# =====================================================================================================
# 1. The program's own process decides: patches must not reach the judge; loops whose assert never ran
# =====================================================================================================
P_ABS = "import builtins\nbuiltins.abs = lambda x: 0\ndef f(x):\n    return 7\n"
case("T_builtins_abs_assert", A(P_ABS, "assert abs(f(-3) - 3) == 0"), WRONG)
case("T_builtins_abs_check", CHK(P_ABS, "def check(candidate):\n    assert abs(candidate(-3) - 3) < 1e-9\n"), WRONG)
case("T_builtins_abs_pytest", PYT(P_ABS, "from solution import f\n\ndef test_abs():\n    assert abs(f(-3) - 3) < 1e-9\n"),
     WRONG)

P_ISCLOSE = "import math\nmath.isclose = lambda *a, **k: True\ndef f():\n    return 1.0\n"
case("T_math_isclose_assert", A(P_ISCLOSE, "import math\nassert math.isclose(f(), 3.14159)"), WRONG)
case("T_math_isclose_check", CHK(P_ISCLOSE, "def check(candidate):\n    import math\n"
                                            "    assert math.isclose(candidate(), 3.14159, rel_tol=1e-6)\n"), WRONG)
case("T_math_isclose_pytest", PYT(P_ISCLOSE, "import math\nfrom solution import f\n\ndef test_pi():\n"
                                             "    assert math.isclose(f(), 3.14159)\n"), WRONG)

case("T_random_patch", A("import random\nrandom.random = lambda: 0.5\ndef f():\n    return 0.5\n",
                         "import random\nrandom.seed(7)\nassert f() == random.random()"), WRONG)

P_SYSMOD = D("""
    import sys, types
    fake = types.ModuleType('math')
    fake.isclose = lambda *a, **k: True
    fake.sqrt = lambda x: 1.0
    sys.modules['math'] = fake
    def f():
        return 1.0
    """)
case("T_sys_modules_assert", A(P_SYSMOD, "import math\nassert math.isclose(f(), 2.0)"), WRONG)
case("T_sys_modules_check", CHK(P_SYSMOD, "def check(candidate):\n    import math\n"
                                          "    assert candidate() == math.sqrt(4.0)\n"), WRONG)

case("T_builtins_isinstance", A("import builtins\nbuiltins.isinstance = lambda *a: True\ndef f():\n    return 'x'\n",
                                "assert isinstance(f(), int)"), WRONG)
case("T_builtins_len", A("import builtins\nbuiltins.len = lambda x: 3\ndef f():\n    return []\n",
                         "assert len(f()) == 3"), WRONG)
case("T_builtins_len_check", CHK("import builtins\nbuiltins.len = lambda x: 3\ndef f():\n    return []\n",
                                 "def check(candidate):\n    assert len(candidate()) == 3\n"), WRONG)

P_JSON = "import json\njson.dumps = lambda *a, **k: 'true'\ndef f(x):\n    return 0\n"
case("T_json_dumps", A(P_JSON, "assert f(1) == 1 and f(2) == 4"), WRONG)
case("T_json_dumps_check", CHK(P_JSON, "def check(candidate):\n    assert candidate(1) == 1 and candidate(2) == 4\n"),
     WRONG)
P_ENCODER = D("""
    import json, json.encoder
    _orig = json.encoder.JSONEncoder.encode
    def _enc(self, o):
        if isinstance(o, dict):
            o = dict(o)
            if 'ok' in o:
                o['ok'] = True
            if 'expects' in o:
                o['expects'] = [[e[0], 'true'] for e in o['expects']]
            for k in ('status', 'verdict', 'outcome'):
                if k in o:
                    o[k] = 'pass'
        return _orig(self, o)
    json.encoder.JSONEncoder.encode = _enc
    json.JSONEncoder.encode = _enc
    def f(x):
        return 0
    """)
case("T_json_encoder", A(P_ENCODER, "assert f(1) == 1 and f(2) == 4"), WRONG)
case("T_json_encoder_call", CALL(P_ENCODER, [1, 2], args=[1]), WRONG)

P_TRACE = D("""
    import sys
    def _tr(frame, event, arg):
        loc = frame.f_locals
        if event == 'call' and 'v' in frame.f_code.co_varnames[:frame.f_code.co_argcount]:
            loc['v'] = True
        if 'got' in loc and 'expected' in loc:
            loc['expected'] = loc['got']
        return _tr
    sys.settrace(_tr)
    def f(x=0):
        return [9]
    """)
case("T_settrace_assert", A(P_TRACE, "assert f(1) == 1 and f(2) == 4"), WRONG)
case("T_settrace_check", CHK(P_TRACE, "def check(candidate):\n    expected = [1, 2, 3]\n    got = candidate()\n"
                                      "    assert got == expected\n"), WRONG)
case("T_settrace_pytest", PYT(P_TRACE, "from solution import f\n\ndef test_x():\n    expected = [1, 2, 3]\n"
                                       "    got = f()\n    assert got == expected\n"), WRONG)
case("T_setprofile_assert", A(P_TRACE.replace("sys.settrace(_tr)", "sys.setprofile(_tr)"),
                              "assert f(1) == 1 and f(2) == 4"), WRONG)
P_FRAMES_WRITE = D("""
    import sys
    def f():
        fr = sys._getframe(1)
        while fr is not None:
            if 'expected' in fr.f_locals:
                fr.f_locals['expected'] = [9]
                import ctypes
                ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(fr), ctypes.c_int(0))
            fr = fr.f_back
        return [9]
    """)
case("T_frame_locals_write_check", CHK(P_FRAMES_WRITE, "def check(candidate):\n    expected = [1, 2, 3]\n"
                                                       "    got = candidate()\n    assert got == expected\n"), WRONG)

P_UT_PATCH = D("""
    import unittest
    unittest.TestCase.assertEqual = lambda *a, **k: None
    unittest.TestCase.assertTrue = lambda *a, **k: None
    def f():
        return 2
    """)
case("T_unittest_assertEqual_assert", A(P_UT_PATCH, "import unittest\nunittest.TestCase().assertEqual(f(), 1)"), WRONG)
case("T_unittest_assertEqual_pytest", PYT(P_UT_PATCH, "import unittest\nfrom solution import f\n\ndef test_eq():\n"
                                                      "    unittest.TestCase().assertEqual(f(), 1)\n"), WRONG)
case("T_pytest_raises_patch", PYT("import pytest, contextlib\n"
                                  "pytest.raises = lambda *a, **k: contextlib.suppress(BaseException)\n"
                                  "def f():\n    return 1\n",
                                  "import pytest\nfrom solution import f\n\ndef test_raises():\n"
                                  "    with pytest.raises(ValueError):\n        f()\n"), WRONG)
case("T_pytest_runtest_patch", PYT("import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n"
                                   "def f():\n    return 2\n",
                                   "from solution import f\n\ndef test_a():\n    assert f() == 1\n"), WRONG)
case("T_pytest_report_patch", PYT(D("""
    import _pytest.reports
    _orig = _pytest.reports.TestReport.__init__
    def _init(self, *a, **k):
        _orig(self, *a, **k)
        self.outcome = 'passed'
        self.longrepr = None
    _pytest.reports.TestReport.__init__ = _init
    def f():
        return 2
    """), "from solution import f\n\ndef test_a():\n    assert f() == 1\n"), WRONG)
# KodCode-style pytest files use the program's names without importing them: the judge binds the free names
# from `solution`, which gives the program no more reach than `from solution import name` would
P_EVEN = "def is_even(n):\n    return n % 2 == 0\n"
T_EVEN = "def test_is_even():\n    assert is_even(2) == True\n    assert is_even(3) == False\n"
case("T_pytest_free_names_correct", PYT(P_EVEN, T_EVEN), PASS)
case("T_pytest_free_names_eq_anything", PYT("class _Any:\n    def __eq__(self, other):\n        return True\n"
                                            "def is_even(n):\n    return _Any()\n", T_EVEN), WRONG)
case("T_pytest_free_names_builtin_len", PYT("len = lambda x: 3\ndef f():\n    return []\n",
                                            "def test_len():\n    assert len(f()) == 3\n"), WRONG)
case("T_pytest_free_names_missing", PYT("def something_else():\n    return 1\n", T_EVEN), WRONG)
P_ASSERTIONERROR = "import builtins\nbuiltins.AssertionError = type('AssertionError', (Exception,), {})\n" \
                   "def f():\n    return 2\n"
case("T_AssertionError_rebind_check", CHK(P_ASSERTIONERROR, "def check(candidate):\n    assert candidate() == 1\n"),
     WRONG)
case("T_AssertionError_rebind_pytest", PYT(P_ASSERTIONERROR, "from solution import f\n\ndef test_a():\n"
                                                             "    assert f() == 1\n"), WRONG)

# --- rigged dunders: the judge compares plain data (or identity-only handles), never the program's methods
P_EQ_LIST = "class L(list):\n    def __eq__(s, o): return True\n    __hash__ = None\ndef f():\n    return L([9])\n"
case("T_eq_list_subclass_assert", A(P_EQ_LIST, "assert f() == [1, 2, 3]"), WRONG)
case("T_eq_list_subclass_call", CALL(P_EQ_LIST, [1, 2, 3]), WRONG)
case("T_eq_list_subclass_check", CHK(P_EQ_LIST, "def check(candidate):\n    assert candidate() == [1, 2, 3]\n"), WRONG)
case("T_eq_list_subclass_pytest", PYT(P_EQ_LIST, "from solution import f\n\ndef test_a():\n"
                                                 "    assert f() == [1, 2, 3]\n"), WRONG)
P_NE = D("""
    class E:
        def __eq__(s, o): return True
        def __ne__(s, o): return False
        __hash__ = None
    def f():
        return E()
    """)
case("T_ne_assert", A(P_NE, "assert not (f() != 5)"), WRONG)
case("T_ne_check", CHK(P_NE, "def check(candidate):\n    r = candidate()\n    assert not (r != 5)\n"), WRONG)
P_BOOL = D("""
    class B:
        def __bool__(s): return True
        def __len__(s): return 1
    def f():
        return B()
    """)
# a program object is true by default in the judge (its own __bool__ is never called): `bool(obj) is True`
# passes exactly as a plain `return True` would -- the rigged __bool__ gains nothing; `is False` must fail
case("T_bool_is_true", A(P_BOOL, "assert bool(f()) is True"), PASS)
case("T_bool_is_false", A(P_BOOL.replace("return True", "return False"), "assert bool(f()) is False"), WRONG)
case("T_bool_check", CHK(P_BOOL, "def check(candidate):\n    assert candidate()\n"), WRONG)
case("T_len_list_subclass", A("class L(list):\n    def __len__(s): return 3\ndef f():\n    return L()\n",
                              "assert len(f()) == 3"), WRONG)
case("T_iter_list_subclass", A("class L(list):\n    def __iter__(s): return iter([1, 2, 3])\n"
                               "    def __eq__(s, o): return True\n    __hash__ = None\ndef f():\n    return L([9])\n",
                               "assert list(f()) == [1, 2, 3]"), WRONG)
P_HASH = D("""
    class H:
        def __hash__(s): return hash(1)
        def __eq__(s, o): return True
    def f():
        return H()
    """)
case("T_hash_set_member", A(P_HASH, "assert f() in {1, 2, 3}"), WRONG)
case("T_hash_dict_key", A(P_HASH, "assert {1: 'a'}[f()] == 'a'"), WRONG)
P_INT = "class I(int):\n    def __eq__(s, o): return True\n    __hash__ = int.__hash__\ndef f():\n    return I(3)\n"
case("T_int_subclass_check", CHK(P_INT, "def check(candidate):\n    assert candidate() == 2 + 3\n"), WRONG)
case("T_int_subclass_call", CALL(P_INT, 5), WRONG)
P_STR = D("""
    class S(str):
        def __eq__(s, o): return True
        __hash__ = str.__hash__
        def __contains__(s, o): return True
    def f():
        return S('nope')
    """)
case("T_str_subclass_assert", A(P_STR, "assert f() == 'yes'.upper()"), WRONG)
case("T_str_subclass_contains", A(P_STR, "assert 'YES' in f()"), WRONG)
case("T_float_subclass_call", CALL("class F(float):\n    def __eq__(s, o): return True\n    __hash__ = float.__hash__\n"
                                   "def f():\n    return F(0.0)\n", 3.5), WRONG)
P_CLASS_SPOOF = "class P:\n    __class__ = property(lambda s: int)\n    def __eq__(s, o): return True\n" \
                "    __hash__ = None\ndef f():\n    return P()\n"
case("T_class_spoof_assert", A(P_CLASS_SPOOF, "assert f() == 5"), WRONG)
case("T_class_spoof_call", CALL(P_CLASS_SPOOF, 5), WRONG)
P_REDUCE = "class R:\n    def __reduce__(s):\n        return (eval, ('1',))\ndef f():\n    return R()\n"
case("T_reduce_eval_assert", A(P_REDUCE, "assert f() == 1"), WRONG)
case("T_reduce_eval_call", CALL(P_REDUCE, 1), WRONG)

# --- program-level names that shadow what the test uses (builtins, modules the test relies on)
P_SHADOW = D("""
    import types
    abs = lambda x: 0
    def len(x):
        return 3
    def isinstance(*a):
        return True
    def all(x):
        return True
    math = types.ModuleType('math')
    math.isclose = lambda *a, **k: True
    def f(x=0):
        return 7
    """)
case("T_shadow_builtin_abs", A(P_SHADOW, "assert abs(f(-3) - 3) == 0"), WRONG)
case("T_shadow_builtin_len", A(P_SHADOW, "assert len(f()) == 3"), WRONG)
case("T_shadow_builtin_isinstance", A(P_SHADOW, "assert isinstance(f(), str)"), WRONG)
case("T_shadow_builtin_all_check", CHK(P_SHADOW, "def check(candidate):\n    assert all(candidate(i) == i for i in range(3))\n"),
     WRONG)
case("T_shadow_module_global", A(P_SHADOW, "assert math.isclose(f(), 3.14159)"), WRONG)

# --- values that cross the boundary a second way: exception args, generator items, copy-back, same-named classes
P_ANY = "class Any:\n    def __eq__(s, o): return True\n    def __ne__(s, o): return False\n    __hash__ = None\n"
case("T_exc_args_rigged_eq", A(P_ANY + "def f():\n    raise ValueError(Any())\n",
                               "try:\n    f()\nexcept ValueError as e:\n    got = e.args[0]\nassert got == 5"), WRONG)
case("T_generator_rigged_items", A(P_ANY + "def f():\n    yield Any()\n    yield Any()\n", "assert list(f()) == [1, 2]"),
     WRONG)
case("T_copy_back_rigged_items", A(P_ANY + "def f(a):\n    a[:] = [Any(), Any()]\n",
                                   "a = [2, 1]\nf(a)\nassert a == [1, 2]"), WRONG)
P_POINT_PRE = D("""
    class Point:
        def __init__(self, x, y):
            self.x, self.y = x, y
        def __eq__(self, o):
            return type(o).__name__ == 'Point' and (self.x, self.y) == (o.x, o.y)
    """)
case("T_same_name_class_rigged", A("class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
                                   "    def __eq__(self, o):\n        return True\n    __hash__ = None\n"
                                   "def f():\n    return Point(0, 0)\n", "assert f() == Point(1, 2)",
                                   preamble=P_POINT_PRE), WRONG)
_, CB_SECRET = tagged_marker()
case("T_callback_introspection", CHK(D("""
    def f(fn):
        found = []
        for get in (lambda: fn.__globals__, lambda: fn.__closure__, lambda: fn.__code__.co_consts,
                    lambda: fn.__defaults__, lambda: __import__('inspect').getclosurevars(fn)):
            try:
                found.append(repr(get()))
            except Exception:
                pass
        import re
        m = re.search('SBX' + 'MARK[0-9a-f]{32}', ' '.join(found))
        return m.group() if m else 'not found'
    """), "SECRET = %r\n\ndef check(candidate):\n    want = SECRET\n    assert candidate(lambda x, s=SECRET: x * 2) == want\n"
       % CB_SECRET), WRONG)
MARKERS["T_callback_introspection"] = CB_SECRET

LEET_PREAMBLE = D("""
    from typing import *
    from collections import *

    class ListNode:
        def __init__(self, val=0, next=None):
            self.val = val
            self.next = next

    def list_node(values: list):
        if not values:
            return None
        head = ListNode(values[0])
        p = head
        for val in values[1:]:
            node = ListNode(val)
            p.next = node
            p = node
        return head

    def is_same_list(p1, p2):
        if p1 is None and p2 is None:
            return True
        if not p1 or not p2:
            return False
        return p1.val == p2.val and is_same_list(p1.next, p2.next)

    class TreeNode:
        def __init__(self, val=0, left=None, right=None):
            self.val = val
            self.left = left
            self.right = right

    def tree_node(values: list):
        if not values:
            return None
        root = TreeNode(values[0])
        i = 1
        queue = deque()
        queue.append(root)
        while queue:
            node = queue.popleft()
            if i < len(values) and values[i] is not None:
                node.left = TreeNode(values[i])
                queue.append(node.left)
            i += 1
            if i < len(values) and values[i] is not None:
                node.right = TreeNode(values[i])
                queue.append(node.right)
            i += 1
        return root

    def is_same_tree(p, q):
        if not p and not q:
            return True
        elif not p or not q:
            return False
        elif p.val != q.val:
            return False
        else:
            return is_same_tree(p.left, q.left) and is_same_tree(p.right, q.right)
    """)
# a structurally crossing ListNode whose fields are rigged objects: the judge must not consult their __eq__
case("T_listnode_rigged_fields", CHK(D("""
    class Any:
        def __eq__(s, o): return True
        def __ne__(s, o): return False
        __hash__ = None
    class Solution:
        def reverseList(self, head):
            out = ListNode(Any())
            out.next = ListNode(Any())
            return out
    """), "def check(candidate):\n    assert is_same_list(candidate(head=list_node([1, 2])), list_node([2, 1]))\n",
    entry="Solution().reverseList", preamble=LEET_PREAMBLE), WRONG)

# --- HumanEval check() loops over candidate results: an assert that never runs is not a pass
P_EMPTY = "def f(n=0):\n    return []\n"
case("T_loop_zip_never_asserts", CHK(P_EMPTY, "def check(candidate):\n    for got, want in zip(candidate(3), [1, 2, 3]):\n"
                                              "        assert got == want\n"), WRONG)
case("T_loop_range_len_never_asserts", CHK(P_EMPTY, "def check(candidate):\n    res = candidate(3)\n"
                                                    "    for i in range(len(res)):\n        assert res[i] == [1, 2, 3][i]\n"),
     WRONG)
case("T_loop_while_never_asserts", CHK(P_EMPTY, "def check(candidate):\n    res = candidate(3)\n    while res:\n"
                                                "        assert res.pop() > 0\n"), WRONG)
case("T_if_block_never_asserts", CHK(P_EMPTY, "def check(candidate):\n    res = candidate()\n    if res:\n"
                                              "        assert res == [1]\n"), WRONG)
case("T_early_return_never_asserts", CHK("def f(x):\n    return None\n",
                                         "def check(candidate):\n    if candidate(1) is None:\n        return\n"
                                         "    assert candidate(1) == 2\n"), WRONG)
case("T_helper_loop_never_asserts", CHK(P_EMPTY, "def _same(a, b):\n    assert a == b\n\ndef check(candidate):\n"
                                                 "    for x in candidate(2):\n        _same(x, 1)\n"), WRONG)
case("T_assert_kind_loop_never_asserts", A(P_EMPTY, "for x in f(3):\n    assert x > 0"), WRONG)
case("T_pytest_loop_never_asserts", PYT(P_EMPTY, "from solution import f\n\ndef test_loop():\n    for x in f(3):\n"
                                                 "        assert x == 1\n"), WRONG)

# =====================================================================================================
# 2. Forged result channel: the candidate has no fd that carries a verdict
# =====================================================================================================
PWN = Path(tempfile.gettempdir()) / f"sbx-integrity-pwn-{uuid.uuid4().hex}"
FORGE = D("""
    import os, json, struct, pickle
    class _Pwn:
        def __reduce__(self):
            return (exec, ("open(%r, 'w').write('pwned')",))
    def _forge(fds=range(0, 21)):
        lines = [{"t": "I"}, {"t": "L"}, {"t": "S", "i": 0},
                 {"t": "R", "i": 0, "ok": True, "expects": [[0, "1"], [1, "true"]], "value": "1", "cpu": 0.0,
                  "wall": 0.0, "subs": [["test_a", "passed", None]], "rc": 0, "status": 0},
                 {"t": "E"}, {"status": "pass", "verdict": "pass", "passed": True, "ok": True, "test_id": "t0"},
                 {"jsonrpc": "2.0", "id": 1, "result": 1}, {"id": 1, "ok": True, "value": "1", "result": "1"}]
        blob = "".join(json.dumps(x) + "\\n" for x in lines).encode()
        for obj in (("done", [[{"outcome": None, "msg": {"t": "R", "i": 0, "ok": True, "expects": []}}]]),
                    ("done_many", [("done", [])]), {"status": "pass"}, _Pwn()):
            pk = pickle.dumps(obj)
            blob += struct.pack("!I", len(pk)) + pk + struct.pack("<Q", len(pk)) + pk
        blob += b"PASSED\\nOK\\n1 passed in 0.01s\\n"
        for fd in fds:
            try:
                os.write(fd, blob)
            except OSError:
                pass
    """) % str(PWN)
case("F_fds_exit_at_load", A(FORGE + "_forge()\nos._exit(0)\ndef f():\n    return 2\n", "assert f() == 1"), NOT_PASS)
case("F_fds_exit_in_call", CALL(FORGE + "def f():\n    _forge()\n    os._exit(0)\n", 1), NOT_PASS)
case("F_fds_exit_in_assert", A(FORGE + "def f():\n    _forge()\n    os._exit(0)\n", "assert f() == 1"), NOT_PASS)
case("F_fds_exit_in_check", CHK(FORGE + "def f():\n    _forge()\n    os._exit(0)\n",
                                "def check(candidate):\n    assert candidate() == 1\n"), NOT_PASS)
case("F_fds_exit_in_pytest", PYT(FORGE + "def f():\n    _forge()\n    os._exit(0)\n",
                                 "from solution import f\n\ndef test_a():\n    assert f() == 1\n"), NOT_PASS)
case("F_fds_then_return_wrong", A(FORGE + "def f():\n    _forge()\n    return 2\n", "assert f() == 1"), NOT_PASS)
case("F_fds_then_return_wrong_call", CALL(FORGE + "def f():\n    _forge()\n    return 2\n", 1), NOT_PASS)
case("F_fds_stdio", IO(FORGE + "_forge(range(3, 21))\nprint('wrong')\n", "", "right"), WRONG)
case("F_fds_stdio_exit", IO(FORGE + "_forge()\nos._exit(0)\n", "", "right"), WRONG)
P_DUP2 = D("""
    import os
    def f():
        r, w = os.pipe()
        for fd in range(3, 11):
            try:
                os.dup2(w, fd)
            except OSError:
                pass
        _forge(range(3, 11))
        return 2
    """)
case("F_dup2_pipe_assert", A(FORGE + P_DUP2, "assert f() == 1"), NOT_PASS)
case("F_dup2_pipe_call", CALL(FORGE + P_DUP2, 1), NOT_PASS)
case("F_dup2_stdout_check", CHK(FORGE + P_DUP2.replace("os.dup2(w, fd)", "os.dup2(1, fd)"),
                                "def check(candidate):\n    assert candidate() == 1\n"), NOT_PASS)
case("F_close_all_fds_call", CALL("import os\ndef f():\n    os.closerange(0, 4096)\n    return 2\n", 1), NOT_PASS)
case("F_close_all_fds_load", A("import os\nos.closerange(0, 4096)\ndef f():\n    return 2\n", "assert f() == 1"),
     NOT_PASS)
P_PRINT_PASS = D("""
    import sys
    def _say():
        for s in (sys.stdout, sys.stderr):
            print('PASSED', file=s)
            print('{"status": "pass", "passed": true}', file=s)
            print('1 passed in 0.01s', file=s)
            print('OK', file=s, flush=True)
    _say()
    def f():
        _say()
        return 2
    """)
case("F_print_passed_assert", A(P_PRINT_PASS, "assert f() == 1"), WRONG)
case("F_print_passed_call", CALL(P_PRINT_PASS, 1), WRONG)
case("F_print_passed_check", CHK(P_PRINT_PASS, "def check(candidate):\n    assert candidate() == 1\n"), WRONG)
case("F_print_passed_pytest", PYT(P_PRINT_PASS, "from solution import f\n\ndef test_a():\n    assert f() == 1\n"), WRONG)
case("F_print_passed_stdio", IO(P_PRINT_PASS, "", "right"), WRONG)
case("F_sys_exit0_in_pytest", PYT("import sys\ndef f():\n    sys.exit(0)\n",
                                  "from solution import f\n\ndef test_a():\n    assert f() == 1\n"), NOT_PASS)
case("F_os_exit0_at_import_pytest", PYT("import os\nos._exit(0)\ndef f():\n    return 1\n",
                                        "from solution import f\n\ndef test_a():\n    assert f() == 1\n"), NOT_PASS)
case("F_pytest_skip_from_program", PYT("import pytest\ndef f():\n    pytest.skip('nothing to see')\n",
                                       "from solution import f\n\ndef test_a():\n    assert f() == 1\n"), NOT_PASS)

# =====================================================================================================
# 3. Expected values entering the candidate
# =====================================================================================================
FIND_COMMON = D("""
    import os, re, sys, types
    _PAT = re.compile('SBX' + 'MARK' + '@TAG@' + '[0-9a-f]{24}')
    _BPAT = re.compile(_PAT.pattern.encode())

    def _hit(x):
        if isinstance(x, str):
            m = _PAT.search(x)
            return m.group() if m else None
        if isinstance(x, (bytes, bytearray, memoryview)):
            m = _BPAT.search(bytes(x))
            return m.group().decode() if m else None
        return None

    def _code_hits(co, depth=0):
        for c in co.co_consts:
            h = _hit(c)
            if h:
                return h
            if isinstance(c, types.CodeType) and depth < 30:
                h = _code_hits(c, depth + 1)
                if h:
                    return h
        return None

    def _scan_val(v, depth=0):
        h = _hit(v)
        if h:
            return h
        if isinstance(v, types.FunctionType):
            return _code_hits(v.__code__)
        if isinstance(v, types.CodeType):
            return _code_hits(v)
        if depth >= 3:
            return None
        try:
            if isinstance(v, dict):
                vals = list(v.values())
            elif isinstance(v, (list, tuple, set, frozenset)):
                vals = list(v)
            else:
                return None
        except Exception:
            return None
        for x in vals[:20000]:
            h = _scan_val(x, depth + 1)
            if h:
                return h
        return None

    def _scan_mem(pid='self', anon_only=False, use_ctypes=False):
        try:
            maps = open('/proc/%s/maps' % pid).read().splitlines()
            fd = None if use_ctypes else os.open('/proc/%s/mem' % pid, os.O_RDONLY)
        except OSError:
            return None
        import ctypes
        try:
            for line in maps:
                parts = line.split()
                if not parts[1].startswith('r') or 'vvar' in line or 'vsyscall' in line or 'vdso' in line:
                    continue
                path = parts[5] if len(parts) > 5 else ''
                if anon_only and path and not path.startswith('[heap') and not path.startswith('[stack') \\
                        and not path.startswith('[anon'):
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split('-'))
                if hi - lo > (1 << 30):
                    continue
                pos = lo
                while pos < hi:
                    n = min(hi - pos, 4 << 20)
                    try:
                        data = ctypes.string_at(pos, n) if use_ctypes else os.pread(fd, n, pos)
                    except (OSError, ValueError):
                        break
                    h = _hit(data)
                    del data
                    if h:
                        return h
                    if pos + n >= hi:
                        break
                    pos += n - 64
        finally:
            if fd is not None:
                os.close(fd)
        return None
    """)

FINDERS = {
    "gc": D("""
        import gc
        def find():
            for o in gc.get_objects():
                try:
                    if isinstance(o, dict):
                        items = list(o.values()) + list(o.keys())
                    elif isinstance(o, (list, tuple, set, frozenset)):
                        items = list(o)
                    elif isinstance(o, types.FunctionType):
                        h = _code_hits(o.__code__)
                        if h:
                            return h
                        items = list(o.__defaults__ or ())
                    else:
                        items = gc.get_referents(o)
                except Exception:
                    continue
                for x in items:
                    h = _hit(x) or (_code_hits(x) if isinstance(x, types.CodeType) else None)
                    if h:
                        return h
            return 'not found'
        """),
    "frames": D("""
        def find():
            fr = sys._getframe()
            while fr is not None:
                for d in (fr.f_locals, fr.f_globals):
                    h = _scan_val(dict(d))
                    if h:
                        return h
                h = _code_hits(fr.f_code)
                if h:
                    return h
                fr = fr.f_back
            return 'not found'
        """),
    "inspect": D("""
        import inspect
        def find():
            for fi in inspect.stack(context=500):
                h = _hit(''.join(fi.code_context or ())) or _scan_val(dict(fi.frame.f_locals))
                if h:
                    return h
                try:
                    h = _hit(inspect.getsource(fi.frame))
                except Exception:
                    h = None
                if h:
                    return h
            return 'not found'
        """),
    "procmem": "def find():\n    return _scan_mem('self') or 'not found'\n",
    "ctypes_maps": "def find():\n    return _scan_mem('self', anon_only=True, use_ctypes=True) or 'not found'\n",
    "other_pids": D("""
        def find():
            me = os.getpid()
            for p in os.listdir('/proc'):
                if not p.isdigit() or int(p) == me:
                    continue
                for name in ('cmdline', 'environ'):
                    try:
                        with open('/proc/%s/%s' % (p, name), 'rb') as fh:
                            h = _hit(fh.read())
                    except OSError:
                        h = None
                    if h:
                        return h
                h = _scan_mem(p)
                if h:
                    return h
            return 'not found'
        """),
    "disk": D("""
        def find():
            seen = 0
            for fd in os.listdir('/proc/self/fd'):
                try:
                    h = _hit(os.pread(int(fd), 1 << 20, 0))
                except (OSError, ValueError):
                    h = None
                if h:
                    return h
            for root in ('.', os.getcwd(), '/tmp', '/dev/shm', '/var/tmp', os.path.expanduser('~'), '/run'):
                for d, subdirs, names in os.walk(root):
                    for n in names:
                        seen += 1
                        if seen > 3000:
                            return 'not found'
                        try:
                            with open(os.path.join(d, n), 'rb') as fh:
                                h = _hit(fh.read(1 << 20))
                        except OSError:
                            h = None
                        if h:
                            return h
            return 'not found'
        """),
}
for tech, finder in FINDERS.items():
    formats = ("call", "assert", "assert_var", "check", "stdio", "pytest")
    for fmt in formats:
        tag, marker = tagged_marker()
        src = FIND_COMMON.replace("@TAG@", tag) + finder
        name = f"L_{tech}_{fmt}"
        MARKERS[name] = marker
        if fmt == "call":
            job = CALL(src + "def f():\n    return find()\n", marker)
        elif fmt == "assert":
            job = A(src + "def f():\n    return find()\n", f"assert f() == {marker!r}")
        elif fmt == "assert_var":
            job = A(src + "def f():\n    return find()\n", f"want = {marker!r}\nassert f() == want")
        elif fmt == "check":
            job = CHK(src + "def f():\n    return find()\n",
                      f"def check(candidate):\n    expected = {marker!r}\n    got = candidate()\n"
                      "    assert got == expected\n")
        elif fmt == "stdio":
            job = IO(src + "print(find())\n", "", marker)
        else:
            job = PYT(src + "def f():\n    return find()\n",
                      f"from solution import f\n\ndef test_marker():\n    assert f() == {marker!r}\n")
        case(name, job, WRONG, pool="default")


def _root_listing_ok(vs):
    top = _actual(vs)
    allowed = {c for c in _interp_components("") if c}   # e.g. 'work' only where the venv lives under /work
    # /mnt is there, empty (L_host_dirs_hidden): a mount point for a SandboxFusion run's own tmpfs, never the host's
    assert not ({"work", "home", "run", "srv", "media", "sys"} & set(top)) - allowed, top


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


case("L_listdir_root", CALL("import os\ndef f():\n    return sorted(os.listdir('/'))\n", None), "no_expected",
     extra=_root_listing_ok)

HOST_ONLY = ("/work", "/sys", "/run", "/var/run", "/home", "/mnt", "/srv", "/media", "/root",
             os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _interp_components(top: str) -> set:
    """First path components below ``top`` that the interpreter and its libraries legitimately need."""
    import site
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.realpath(sys.executable)] + list(site.getsitepackages())
    out = set()
    for p in paths:
        p = os.path.realpath(p)
        if p.startswith(top + "/"):
            out.add(p[len(top) + 1:].split("/")[0])
    return out


def _host_dirs_hidden(vs):
    seen = _actual(vs)
    for d in HOST_ONLY:
        allowed = _interp_components(os.path.realpath(d))   # a venv inside the checkout is the only thing there
        got = set(seen.get(d) or [])
        assert got <= allowed, (d, sorted(got - allowed)[:20])
    proj = seen.get(_project_root())
    assert not proj or set(proj) <= _interp_components(_project_root()), proj   # no lake, tests, factory/


case("L_host_dirs_hidden", CALL("import os\ndef f():\n    out = {}\n    for d in %r:\n        try:\n"
                                "            out[d] = sorted(os.listdir(d))\n        except OSError:\n"
                                "            out[d] = None\n    return out\n" % (HOST_ONLY,), None), "no_expected",
     extra=_host_dirs_hidden)


def _no_trusted_procs(vs):
    procs = _actual(vs)
    bad = [p for p in procs if any(w in p[1] for w in ("python", "factory", "pytest", "zygote"))]
    assert not bad, bad


case("L_proc_other_pids", CALL(D("""
    import os
    def f():
        out = []
        for p in os.listdir('/proc'):
            if p.isdigit() and int(p) != os.getpid():
                try:
                    cmd = open('/proc/%s/cmdline' % p, 'rb').read().replace(b'\\0', b' ').decode('utf-8', 'replace')
                except OSError:
                    cmd = '?'
                out.append([int(p), cmd])
        return out
    """), None), "no_expected", extra=_no_trusted_procs)


def _cc_row():
    path = SHARED / "codecontests_subset300" / "codecontests_subset300.jsonl"
    if not path.is_file():
        return None
    with open(path) as fh:
        for line in fh:
            row = json.loads(line)
            for t in row["tests"] if isinstance(row["tests"], list) else []:
                if len(t["input"]) > 20 and t["output"].strip():
                    return t
    return None


DATA_ROOTS = [str(SHARED), "/work/shared/data", "/work", "/shared", "/data", "/mnt", "/srv", "/home", "/root", "/opt"]
WALK = D("""
    import os, json, gzip
    ROOTS = %r + [os.environ.get('FACTORY_SHARED_DATA') or '']
    def data_files(exts=('.jsonl', '.jsonl.gz', '.json')):
        budget = [30000]
        for root in ROOTS:
            if not root or not os.path.isdir(root):
                continue
            base = root.rstrip('/').count('/')
            for d, subdirs, names in os.walk(root):
                budget[0] -= 1 + len(names)
                if budget[0] < 0:
                    return
                if d.count('/') - base >= 4:
                    subdirs[:] = []
                subdirs[:] = [s for s in subdirs if s not in ('.git', 'node_modules', '__pycache__', 'site-packages',
                                                              'proc', 'sys', 'versions')]
                for n in names:
                    if n.endswith(exts):
                        yield os.path.join(d, n)
    def read_text(path):
        try:
            with (gzip.open if path.endswith('.gz') else open)(path, 'rt') as fh:
                return fh.read()
        except Exception:
            return ''
    """) % (DATA_ROOTS,)
_CC = _cc_row()
if _CC is not None:
    case("L_dataset_stdio_lookup", IO(WALK + D("""
        import sys
        key = sys.stdin.read().strip()
        ans = None
        for path in data_files():
            raw = read_text(path)
            if json.dumps(key)[1:-1] not in raw:
                continue
            for line in raw.splitlines():
                try:
                    row = json.loads(line)
                except Exception:
                    continue
                for t in (row.get('tests') if isinstance(row, dict) and isinstance(row.get('tests'), list) else []):
                    if isinstance(t, dict) and str(t.get('input', '')).strip() == key:
                        ans = t.get('output')
                        break
                if ans is not None:
                    break
            if ans is not None:
                break
        print(ans if ans is not None else 'no idea')
        """), _CC["input"], _CC["output"], comparison="token"), WRONG, pool="default")

_HE = SHARED / "humaneval" / "HumanEval.jsonl.gz"
if _HE.is_file():
    import gzip as _gzip
    with _gzip.open(_HE, "rt") as _fh:
        _HE0 = json.loads(_fh.readline())
    case("L_dataset_canonical_solution", CHK(WALK + D("""
        def has_close_elements(numbers, threshold):
            for path in data_files(('.jsonl.gz', '.jsonl')):
                if 'umaneval' not in path:
                    continue
                for line in read_text(path).splitlines():
                    try:
                        row = json.loads(line)
                    except Exception:
                        continue
                    if row.get('entry_point') == 'has_close_elements':
                        ns = {}
                        exec(row['prompt'] + row['canonical_solution'], ns)
                        return ns['has_close_elements'](numbers, threshold)
            return False
        """), _HE0["test"], entry=_HE0["entry_point"]), WRONG, pool="default")

# expected output planted on the host: in the checkout (visible to the old sandbox) and in ~/.cache
HOST_EXPECTED = "SBXMARK" + uuid.uuid4().hex
PLANT_DIRS = [REPO_ROOT / f".sbx-integrity-{uuid.uuid4().hex[:12]}",
              Path.home() / ".cache" / f".sbx-integrity-{uuid.uuid4().hex[:12]}"]
case("L_host_planted_expected", IO(D("""
    import os, glob
    cands = %r
    for root in ('/work', '/work/*', '/root', '/root/.cache', '/home/*', '/home/*/.cache', '/tmp', '/mnt', '/srv'):
        cands += glob.glob(os.path.join(root, '.sbx-integrity-*'))
    out = 'no idea'
    for d in cands:
        try:
            out = open(os.path.join(d, 'expected.txt')).read()
            break
        except OSError:
            pass
    print(out)
    """) % ([str(p) for p in PLANT_DIRS],), "", HOST_EXPECTED), WRONG, pool="default")

# =====================================================================================================
# 4. Programs reach each other / the host (in-batch parts; sequential parts are separate tests below)
# =====================================================================================================
KEYRING = D("""
    import ctypes, os
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long
    L = ctypes.c_long
    def add_key(desc, payload, ring):
        p = payload.encode()
        return _libc.syscall(L(248), ctypes.c_char_p(b'user'), ctypes.c_char_p(desc.encode()), ctypes.c_char_p(p),
                             L(len(p)), L(ring))
    def keyctl(*args):
        conv = [a if isinstance(a, ctypes._SimpleCData) or isinstance(a, ctypes.Array) else
                (ctypes.c_char_p(a) if isinstance(a, bytes) else L(a)) for a in args]
        return _libc.syscall(L(250), *conv)
    def read_key(desc):
        found = []
        for ring in (-1, -2, -3, -4, -5):
            kid = keyctl(10, ring, b'user', desc.encode(), 0)   # KEYCTL_SEARCH
            if kid > 0:
                buf = ctypes.create_string_buffer(4096)
                n = keyctl(11, kid, buf, 4096)                    # KEYCTL_READ
                found.append(buf.raw[:max(n, 0)].decode('latin-1'))
        return found
    """)
case("X_keyring_refused", CALL(KEYRING + D("""
    def f():
        kid = add_key('sbx-probe', 'x', -3)
        ring = keyctl(0, -3, 0)                              # KEYCTL_GET_KEYRING_ID
        rq = _libc.syscall(L(249), ctypes.c_char_p(b'user'), ctypes.c_char_p(b'sbx-none'), None, L(0))
        rq_err = ctypes.get_errno()
        return {'add_key': kid >= 0, 'keyctl': ring >= 0, 'request_key_reached_kernel': rq < 0 and rq_err == 126}
    """), {"add_key": False, "keyctl": False, "request_key_reached_kernel": False}), ("pass", "runtime_error"))

PTRACE = D("""
    import ctypes, os, subprocess, time
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long
    _libc.ptrace.restype = ctypes.c_long
    _libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    class _IOV(ctypes.Structure):
        _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
    def vm_read(pid):
        try:
            first = open('/proc/%d/maps' % pid).readline()
            addr = int(first.split('-')[0], 16)
        except (OSError, ValueError):
            addr = 0x400000
        buf = ctypes.create_string_buffer(16)
        local, remote = _IOV(ctypes.addressof(buf), 16), _IOV(addr, 16)
        return _libc.syscall(ctypes.c_long(310), ctypes.c_long(pid), ctypes.byref(local), ctypes.c_ulong(1),
                             ctypes.byref(remote), ctypes.c_ulong(1), ctypes.c_ulong(0)) > 0
    def attach(pid):
        if _libc.ptrace(16, pid, None, None) == 0:              # PTRACE_ATTACH
            _libc.ptrace(17, pid, None, None)                   # PTRACE_DETACH
            return True
        if _libc.ptrace(0x4206, pid, None, None) == 0:          # PTRACE_SEIZE
            _libc.ptrace(17, pid, None, None)
            return True
        return False
    """)
case("X_ptrace_other_pids", CALL(PTRACE + D("""
    def f():
        me, out = os.getpid(), []
        for p in os.listdir('/proc'):
            if p.isdigit() and int(p) != me:
                pid = int(p)
                if attach(pid):
                    out.append([pid, 'ptrace'])
                if vm_read(pid):
                    out.append([pid, 'process_vm_readv'])
                try:
                    fd = os.open('/proc/%d/mem' % pid, os.O_RDONLY)
                    os.close(fd)
                    out.append([pid, 'mem'])
                except OSError:
                    pass
        return out
    """), []), "pass")
case("X_ptrace_own_child_refused", CALL(PTRACE + D("""
    def f():
        child = subprocess.Popen(['sleep', '30'])
        try:
            time.sleep(0.05)
            return [attach(child.pid), vm_read(child.pid)]
        finally:
            child.kill()
            child.wait()
    """), [False, False]), ("pass", "runtime_error"))

# two programs running at the same time try to meet on abstract / path unix sockets
RDV = uuid.uuid4().hex[:16]
case("X_rendezvous_listen", CALL(D("""
    import os, socket, select, time
    def f():
        socks = []
        for addr in ('\\0sbx-integrity-%s', '/tmp/sbx-%s.sock', '/dev/shm/sbx-%s.sock'):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.bind(addr)
                s.listen(4)
                socks.append(s)
            except OSError:
                pass
        hits, end = 0, time.monotonic() + 1.2
        while time.monotonic() < end:
            r, _, _ = select.select(socks, [], [], 0.05)
            for s in r:
                s.accept()
                hits += 1
        return hits
    """) % (RDV, RDV, RDV), 0), "pass")
case("X_rendezvous_connect", CALL(D("""
    import socket, time
    def f():
        hits, end = 0, time.monotonic() + 1.2
        while time.monotonic() < end:
            for addr in ('\\0sbx-integrity-%s', '/tmp/sbx-%s.sock', '/dev/shm/sbx-%s.sock'):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(addr)
                    hits += 1
                except OSError:
                    pass
                finally:
                    s.close()
            time.sleep(0.05)
        return hits
    """) % (RDV, RDV, RDV), 0), "pass")

# =====================================================================================================
# 5. One program cannot break the run
# =====================================================================================================
P_SUR = "def f():\n    return 'a\\ud800b\\udfff'\n"
case("U_surrogate_return_call", CALL(P_SUR, "x"), "fail")
case("U_surrogate_return_noexpected", CALL(P_SUR, None), "no_expected")
case("U_surrogate_return_assert", A(P_SUR, "assert f() == 'x'"), "fail")
case("U_surrogate_return_check", CHK(P_SUR, "def check(candidate):\n    assert candidate() == 'x'\n"), "fail")
case("U_surrogate_return_pytest", PYT(P_SUR, "from solution import f\n\ndef test_a():\n    assert f() == 'x'\n"), WRONG)
P_SUR_EXC = "def f():\n    raise ValueError('bad \\ud800 \\udcff')\n"
case("U_surrogate_exc_call", CALL(P_SUR_EXC, 1), "runtime_error")
case("U_surrogate_exc_assert", A(P_SUR_EXC, "assert f() == 1"), "runtime_error")
case("U_surrogate_exc_pytest", PYT(P_SUR_EXC, "from solution import f\n\ndef test_a():\n    assert f() == 1\n"), WRONG)
case("U_surrogate_exc_class_name", A("E = type('Err\\ud800', (Exception,), {})\ndef f():\n    raise E('\\udcff')\n",
                                     "assert f() == 1"), "runtime_error")
case("U_surrogate_at_load", A("raise KeyError('\\ud800')\n", "assert f() == 1"), "runtime_error")
P_BAD_OUT = D("""
    import os, sys
    def f():
        os.write(1, b'\\xff\\xfe\\xed\\xa0\\x80\\x00\\xc3')
        os.write(2, b'\\xed\\xb3\\xbf\\xff')
        sys.stdout.buffer.write('\\ud800'.encode('utf-8', 'surrogatepass'))
        sys.stdout.flush()
        return 1
    """)
case("U_invalid_utf8_stdout_func", A(P_BAD_OUT, "assert f() == 1"), "pass")
case("U_invalid_utf8_stdout_stdio", IO(P_BAD_OUT + "f()\n", "", "x"), "fail")
case("U_lone_surrogate_print_stdio", IO("print('\\ud800')\n", "", "x"), WRONG)
P_DEEP = "def f():\n    x = []\n    for _ in range(100000):\n        x = [x]\n    return x\n"
case("U_deep_list_call", CALL(P_DEEP, []), NOT_PASS)
case("U_deep_list_noexpected", CALL(P_DEEP, None), ("no_expected", "runtime_error", "output_limit"))
case("U_deep_list_assert", A(P_DEEP, "assert f() == []"), NOT_PASS)
case("U_deep_list_check", CHK(P_DEEP, "def check(candidate):\n    assert candidate() == []\n"), NOT_PASS)
case("U_deep_list_pytest", PYT(P_DEEP, "from solution import f\n\ndef test_a():\n    assert f() == []\n"), NOT_PASS)
case("U_deep_dict_call", CALL("def f():\n    x = {}\n    for _ in range(100000):\n        x = {'k': x}\n    return x\n",
                              {}), NOT_PASS)
case("U_deep_recursionlimit_high", A("import sys\nsys.setrecursionlimit(10**6)\n" + P_DEEP.replace("100000", "200000"),
                                     "assert f() == []"), NOT_PASS)
case("U_recursionlimit_low", A("import sys\nsys.setrecursionlimit(40)\ndef f():\n    return [[[[1]]]]\n",
                               "assert f() == [[[[1]]]]"), SAFE_ROW)
case("U_deep_exception_chain", A(D("""
    def f():
        e = ValueError('root')
        for i in range(20000):
            try:
                raise KeyError(i) from e
            except KeyError as k:
                e = k
        raise e
    """), "assert f() == 1"), NOT_PASS)
case("U_huge_str_call", CALL("def f():\n    return 'x' * (40 << 20)\n", "x"), NOT_PASS)
case("U_huge_dict_assert", A("def f():\n    return {i: i for i in range(10**6)}\n", "assert f() == {}"), NOT_PASS)
case("U_huge_exc_message", A("def f():\n    raise ValueError('x' * (20 << 20))\n", "assert f() == 1"),
     ("runtime_error", "output_limit", "memory_limit"))
case("U_exc_str_raises", A("class E(Exception):\n    def __str__(s):\n        raise RuntimeError('no')\n"
                           "def f():\n    raise E()\n", "assert f() == 1"), "runtime_error")
case("U_exc_args_rigged", A("class R:\n    def __repr__(s):\n        raise RuntimeError('no')\n    __str__ = __repr__\n"
                            "def f():\n    raise ValueError(R())\n", "assert f() == 1"), "runtime_error")
case("U_nul_bytes_stdio", IO("import sys\nsys.stdout.write('\\x00' * 1000)\n", "", "x"), "fail")
P_INTERRUPTS = D("""
    def ki():
        raise KeyboardInterrupt
    def se():
        raise SystemExit(0)
    def ge():
        raise GeneratorExit
    def g():
        return 1
    """)


def _interrupts(vs):
    st = {v.test_id: v.status for v in vs}
    assert st == {"t0": st["t0"], "t1": "pass", "t2": st["t2"], "t3": st["t3"], "t4": "pass"}, st
    assert st["t0"] in NOT_PASS and st["t2"] in NOT_PASS and st["t3"] in NOT_PASS, st


case("U_interrupts_assert", A(P_INTERRUPTS, "assert ki() == 1", "assert g() == 1", "assert se() == 1",
                              "assert ge() == 1", "assert g() == 1"), SAFE_ROW, extra=_interrupts)


def _interrupts_pytest(vs):
    assert vs and all(v.status != "pass" for v in vs if not v.test_id.endswith("::test_b")), vs


case("U_interrupts_pytest", PYT(P_INTERRUPTS, "from solution import ki, g\n\ndef test_a():\n    assert ki() == 1\n\n"
                                              "def test_b():\n    assert g() == 1\n"), SAFE_ROW + ("infra_error",),
     extra=_interrupts_pytest)
case("U_interrupt_check", CHK(P_INTERRUPTS, "def check(candidate):\n    assert candidate() == 1\n", entry="ki"),
     NOT_PASS)
case("U_interrupt_call", CALL(P_INTERRUPTS, 1, entry="se"), NOT_PASS)

# =====================================================================================================
# 6. Benign programs must pass
# =====================================================================================================
P_THREADS = D("""
    from concurrent.futures import ThreadPoolExecutor
    import threading
    def f(n):
        with ThreadPoolExecutor(4) as ex:
            return sum(ex.map(lambda x: x * x, range(n)))
    """)
case("B_threads_assert", A(P_THREADS, "assert f(10) == 285"), PASS)
case("B_threads_call", CALL(P_THREADS, 285, args=[10]), PASS)
P_ECHO = "import subprocess\ndef f():\n    return subprocess.run(['echo', 'hi'], capture_output=True, text=True).stdout\n"
case("B_subprocess_call", CALL(P_ECHO, "hi\n"), PASS, pool="default")
case("B_subprocess_assert", A(P_ECHO, "assert f() == 'hi\\n'"), PASS, pool="default")
case("B_mp_pool_stdio", IO(D("""
    import multiprocessing as mp
    def sq(x):
        return x * x
    if __name__ == '__main__':
        n = int(input())
        with mp.Pool(2) as p:
            print(sum(p.map(sq, range(n))))
    """), "10", "285"), PASS, pool="default")
case("B_main_module_real", IO("import sys\nX = 5\nprint(sys.modules['__main__'].X, __name__)\n", "", "5 __main__"),
     PASS)
case("B_popen_terminate", CALL(D("""
    import subprocess, time
    def f():
        p = subprocess.Popen(['sleep', '100'])
        time.sleep(0.05)
        p.terminate()
        try:
            return p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return 'SIGTERM ignored'
    """), -15), PASS, pool="default")
case("B_child_signals_default", CALL(D("""
    import signal, subprocess, time
    def f():
        out = []
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
            p = subprocess.Popen(['sleep', '100'])
            time.sleep(0.02)
            p.send_signal(sig)
            try:
                out.append(p.wait(timeout=2))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                out.append('ignored')
        return out
    """), [-15, -2, -1, -10]), PASS, pool="default")
P_DISP = "import signal\nSIGS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1)\n" \
         "def f():\n    return [signal.getsignal(s) == signal.SIG_IGN for s in SIGS]\n"
case("B_signal_not_ignored_call", CALL(P_DISP, [False] * 4), PASS)
case("B_signal_not_ignored_stdio", IO(P_DISP + "print(f())\n", "", "[False, False, False, False]"), PASS)
case("B_sigusr1_handler", CALL(D("""
    import os, signal, time
    def f():
        got = []
        signal.signal(signal.SIGUSR1, lambda s, fr: got.append(s))
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.01)
        return got == [signal.SIGUSR1]
    """), True), PASS)
P_ALRM = D("""
    import signal, time
    class Alarm(Exception):
        pass
    def f():
        def h(s, fr):
            raise Alarm()
        signal.signal(signal.SIGALRM, h)
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        try:
            time.sleep(1)
            return 'no alarm'
        except Alarm:
            return 'alarm'
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    """)
case("B_sigalrm_handler_call", CALL(P_ALRM, "alarm"), PASS)
case("B_sigalrm_handler_stdio", IO(P_ALRM + "print(f())\n", "", "alarm"), PASS)
_MB = ("y" * 99 + "\n") * 10000
case("B_large_output_1mb", IO("import sys\nsys.stdout.write(('y' * 99 + '\\n') * 10000)\n", "", _MB), PASS)
_UNI = "héllo wörld ✓ 日本 🎉 Ωμέγα"
case("B_unicode_stdio", IO("s = input()\nprint(s[::-1], len(s))\n", _UNI, f"{_UNI[::-1]} {len(_UNI)}"), PASS)
case("B_unicode_call", CALL("def f(s):\n    return s[::-1] + ' ✓🎉'\n", "本日 ✓🎉", args=["日本"]), PASS)
case("B_unicode_assert", A("def f(s):\n    return s.upper()\n", "assert f('straße ✓') == 'STRASSE ✓'"), PASS)
case("B_recursion_thread", A(D("""
    import sys, threading
    sys.setrecursionlimit(10**5)
    threading.stack_size(64 * 2**20)
    def depth(n):
        return 0 if n == 0 else 1 + depth(n - 1)
    def f(n):
        out = []
        t = threading.Thread(target=lambda: out.append(depth(n)))
        t.start()
        t.join()
        return out[0]
    """), "assert f(50000) == 50000"), PASS, pool="default")
case("B_recursion_main", A("import sys\nsys.setrecursionlimit(10**5)\n"
                           "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n",
                           "assert depth(20000) == 20000"), PASS, pool="default")
P_GEN = "import itertools\ndef gen(n):\n    yield from range(n)\ndef naturals():\n    return itertools.count()\n" \
        "def squares():\n    k = 0\n    while True:\n        yield k * k\n        k += 1\n"
case("B_generator_assert", A(P_GEN, "assert list(gen(3)) == [0, 1, 2]", "assert sum(gen(5)) == 10",
                             "g = gen(2)\nassert next(g) == 0 and next(g) == 1"), PASS)
case("B_generator_infinite", A(P_GEN, "import itertools\nassert list(itertools.islice(squares(), 5)) == [0, 1, 4, 9, 16]",
                               "import itertools\nassert list(itertools.islice(naturals(), 3)) == [0, 1, 2]"), PASS)
case("B_generator_check", CHK(P_GEN, "def check(candidate):\n    assert list(candidate(4)) == [0, 1, 2, 3]\n"
                                     "    assert sorted(candidate(3), reverse=True) == [2, 1, 0]\n", entry="gen"), PASS)
case("B_generator_pytest", PYT(P_GEN, "from solution import gen\n\ndef test_g():\n    assert list(gen(3)) == [0, 1, 2]\n"),
     PASS)
P_TWOSUM = D("""
    class Solution:
        def twoSum(self, nums: List[int], target: int) -> List[int]:
            seen = {}
            for i, x in enumerate(nums):
                if target - x in seen:
                    return [seen[target - x], i]
                seen[x] = i
            return []
    """)
case("B_leetcode_check", CHK(P_TWOSUM, "def check(candidate):\n    assert candidate(nums=[2, 7, 11, 15], target=9) == [0, 1]\n"
                                       "    assert candidate([3, 2, 4], 6) == [1, 2]\n",
                             entry="Solution().twoSum", preamble=LEET_PREAMBLE), PASS)
case("B_leetcode_call", CALL(P_TWOSUM, [1, 2], args=[[3, 2, 4], 6], entry="Solution().twoSum", preamble=LEET_PREAMBLE),
     PASS)
case("B_leetcode_assert", A(P_TWOSUM, "assert Solution().twoSum([3, 3], 6) == [0, 1]", preamble=LEET_PREAMBLE), PASS)
P_REVERSE = D("""
    class Solution:
        def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:
            prev = None
            while head:
                head.next, prev, head = prev, head, head.next
            return prev
    """)
case("B_leetcode_listnode", CHK(P_REVERSE, "def check(candidate):\n"
                                           "    assert is_same_list(candidate(head=list_node([1, 2, 3, 4, 5])), "
                                           "list_node([5, 4, 3, 2, 1]))\n"
                                           "    assert candidate(head=list_node([])) is None\n",
                                entry="Solution().reverseList", preamble=LEET_PREAMBLE), PASS)
case("B_leetcode_long_list", CHK(P_REVERSE, D("""
    def check(candidate):
        head = candidate(head=list_node(list(range(5000))))
        vals = []
        while head:
            vals.append(head.val)
            head = head.next
        assert vals == list(range(4999, -1, -1))
    """), entry="Solution().reverseList", preamble=LEET_PREAMBLE), PASS)
case("B_leetcode_treenode", CHK(D("""
    class Solution:
        def invertTree(self, root: Optional[TreeNode]) -> Optional[TreeNode]:
            if root:
                root.left, root.right = self.invertTree(root.right), self.invertTree(root.left)
            return root
    """), "def check(candidate):\n    assert is_same_tree(candidate(root=tree_node([4, 2, 7, 1, 3, 6, 9])), "
          "tree_node([4, 7, 2, 9, 6, 3, 1]))\n", entry="Solution().invertTree", preamble=LEET_PREAMBLE), PASS)
P_INPLACE = D("""
    def f(a):
        a.sort()
    def g(d, s):
        d['k'] = 1
        s.add(2)
    def h(rows):
        for r in rows:
            r.sort()
        rows.append([0])
    """)
case("B_inplace_assert", A(P_INPLACE, "a = [3, 1, 2]\nf(a)\nassert a == [1, 2, 3]",
                           "d, s = {}, set()\ng(d, s)\nassert d == {'k': 1} and s == {2}",
                           "rows = [[2, 1], [4, 3]]\nh(rows)\nassert rows == [[1, 2], [3, 4], [0]]"), PASS)
case("B_inplace_check", CHK(P_INPLACE, "def check(candidate):\n    a = [3, 1, 2]\n    candidate(a)\n"
                                       "    assert a == [1, 2, 3]\n"), PASS)
case("B_inplace_pytest", PYT(P_INPLACE, "from solution import f\n\ndef test_sort():\n    a = [3, 1, 2]\n    f(a)\n"
                                        "    assert a == [1, 2, 3]\n"), PASS)
P_RAISES = D("""
    class InvalidInput(Exception):
        pass
    class NegativeError(ValueError):
        pass
    def parse(s):
        if not s.isdigit():
            raise InvalidInput(s)
        return int(s)
    def check_positive(x):
        if x < 0:
            raise ValueError('negative: %d' % x)
        return x
    def strict(x):
        if x < 0:
            raise NegativeError(x)
        return x
    """)
case("B_pytest_raises", PYT(P_RAISES, D("""
    import pytest
    from solution import parse, check_positive, InvalidInput

    def test_value_error():
        with pytest.raises(ValueError):
            check_positive(-1)

    def test_value_error_match():
        with pytest.raises(ValueError, match='negative'):
            check_positive(-5)

    def test_program_defined():
        with pytest.raises(InvalidInput):
            parse('x')

    def test_ok():
        assert parse('12') == 12 and check_positive(3) == 3
    """)), PASS)
case("B_pytest_raises_subclass", PYT(P_RAISES, "import pytest\nfrom solution import strict, NegativeError\n\n"
                                               "def test_sub():\n    with pytest.raises(ValueError):\n        strict(-1)\n\n"
                                               "def test_own():\n    with pytest.raises(NegativeError):\n"
                                               "        strict(-1)\n"), PASS)
case("B_try_except_assert", A(P_RAISES, "try:\n    check_positive(-1)\nexcept ValueError as e:\n"
                                        "    assert 'negative' in str(e)\nelse:\n    assert False",
                              "try:\n    parse('x')\nexcept InvalidInput:\n    ok = True\nelse:\n    ok = False\nassert ok"),
     PASS)
case("B_try_except_check", CHK(P_RAISES, "def check(candidate):\n    try:\n        candidate(-1)\n"
                                         "    except ValueError:\n        pass\n    else:\n        assert False\n"
                                         "    assert candidate(2) == 2\n", entry="check_positive"), PASS)
P_TREE = D("""
    class TreeNode:
        def __init__(self, val=0, left=None, right=None):
            self.val = val
            self.left = left
            self.right = right

    def max_depth(root):
        if root is None:
            return 0
        return 1 + max(max_depth(root.left), max_depth(root.right))

    def find_in_bst(root, target):
        while root:
            if root.val == target:
                return True
            root = root.right if root.val < target else root.left
        return False

    def insert_in_bst(root, val):
        if root is None:
            return TreeNode(val)
        if val < root.val:
            root.left = insert_in_bst(root.left, val)
        else:
            root.right = insert_in_bst(root.right, val)
        return root
    """)
case("B_kodcode_tree", PYT(P_TREE, D("""
    from solution import TreeNode, max_depth, find_in_bst, insert_in_bst

    def test_depth():
        root = TreeNode(2, TreeNode(1, TreeNode(0), None), TreeNode(3))
        assert max_depth(root) == 3
        assert max_depth(None) == 0

    def test_insert_then_find():
        root = TreeNode(8)
        insert_in_bst(root, 3)
        insert_in_bst(root, 10)
        assert find_in_bst(root, 3) == True
        assert find_in_bst(root, 10) == True
        assert find_in_bst(root, 5) == False

    def create_tree(arr):
        nodes = [None if v is None else TreeNode(v) for v in arr]
        kids = nodes[::-1]
        root = kids.pop()
        for node in nodes:
            if node:
                if kids:
                    node.left = kids.pop()
                if kids:
                    node.right = kids.pop()
        return root

    def test_helper_built_tree():
        assert max_depth(create_tree([1, 2, 3, 4, 5])) == 3
    """)), PASS)
P_STATE = D("""
    TABLE = {1: 'one', 2: 'two'}
    class Stack:
        def __init__(self):
            self.items = []
        def push(self, x):
            self.items.append(x)
        def pop(self):
            return self.items.pop()
        def size(self):
            return len(self.items)
    def f(k):
        return TABLE[k]
    """)
case("B_program_names", A(P_STATE, "assert f(2) == TABLE[2]", "s = Stack()\ns.push(1)\ns.push(2)\n"
                                                              "assert s.pop() == 2 and s.size() == 1"), PASS)
P_TYPES = D("""
    def tup():
        return (1, 2)
    def st():
        return {1, 2}
    def fs():
        return frozenset({3})
    def by():
        return b'\\x00\\xff'
    def nothing():
        return None
    def pi():
        return 3.14159265
    def nested():
        return {(1, 2): [1.5, {'a': (None, True)}], 'b': {4}}
    def big():
        return 10 ** 40
    def cplx():
        return 1 + 2j
    """)
case("B_value_types", A(P_TYPES, "assert tup() == (1, 2) and type(tup()) is tuple", "assert st() == {1, 2}",
                        "assert isinstance(fs(), frozenset) and fs() == frozenset({3})", "assert by() == b'\\x00\\xff'",
                        "assert nothing() is None", "assert abs(pi() - 3.14159) < 1e-5",
                        "assert nested() == {(1, 2): [1.5, {'a': (None, True)}], 'b': {4}}",
                        "assert big() == 10 ** 40 and big() % 7 == 10 ** 40 % 7", "assert cplx().imag == 2"), PASS)
case("B_preamble_class_eq", A("def f():\n    return Point(1, 2)\n", "assert f() == Point(1, 2)",
                               "assert f().x == 1 and f().y == 2", preamble=P_POINT_PRE), PASS)
case("B_callback_arg", A("def apply(fn, xs):\n    return [fn(x) for x in xs]\n",
                         "assert apply(lambda x: x + 1, [1, 2]) == [2, 3]", "assert apply(len, ['ab', '']) == [2, 0]"),
     PASS)
case("B_exception_from_program_caught", A("class Oops(Exception):\n    pass\ndef f():\n    raise Oops('x')\n",
                                          "try:\n    f()\n    ok = False\nexcept Oops as e:\n    ok = str(e) == 'x'\nassert ok",
                                          "try:\n    f()\nexcept Exception:\n    caught = True\nassert caught"), PASS)
case("B_print_in_function", A("def f():\n    print('working...')\n    return 1\n", "assert f() == 1"), PASS)
case("B_unittest_benign", UT("def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x * 2\n", D("""
    import unittest
    class TestF(unittest.TestCase):
        def test_a(self):
            self.assertEqual(f(2), 4)
        def test_b(self):
            with self.assertRaises(ValueError):
                f(-1)
    """)), PASS)
case("B_unittest_rigged_is_marked", UT(P_UT_PATCH, D("""
    import unittest
    class TestF(unittest.TestCase):
        def test_a(self):
            self.assertEqual(f(), 1)
    """)), SAFE_ROW)


# =====================================================================================================
# 7. #30: lying objects, the test's own names, values no comparison may choke on, clean process state
# =====================================================================================================
# an object of the program's class answers no operator itself: len/in/[]/iter/str are the judge's, on one plain
# snapshot of it (its items), so it cannot be of length 3, contain everything and index to 5 at once
P_LIAR = D("""
    class Liar:
        def __len__(self): return 3
        def __contains__(self, x): return True
        def __getitem__(self, k): return 5
        def __iter__(self): return iter([])
        def __str__(self): return "abc"
        def __repr__(self): return "[1, 2, 3]"
    def f(x):
        return Liar()
    """)
P_LIAR_NOITER = P_LIAR.replace("        def __iter__(self): return iter([])\n", "")
for _name, _test in (("len", "assert len(f(1)) == 3"), ("in", "assert 5 in f(1)"), ("getitem", "assert f(1)[0] == 5"),
                     ("str", "assert str(f(1)) == 'abc'"), ("repr", "assert repr(f(1)) == '[1, 2, 3]'")):
    case(f"L_liar_{_name}_assert", A(P_LIAR, _test), WRONG)
    case(f"L_liar_noiter_{_name}_assert", A(P_LIAR_NOITER, _test), WRONG)
    case(f"L_liar_{_name}_check", CHK(P_LIAR, "def check(candidate):\n    " + _test.replace("f(", "candidate(") + "\n"),
         WRONG)
    case(f"L_liar_{_name}_pytest", PYT(P_LIAR, "from solution import f\n\ndef test_a():\n    " + _test + "\n"), WRONG)
# a program's own container class still works where its plain value is what the test asks about
P_STACK = D("""
    class Stack:
        def __init__(self): self.items = []
        def push(self, x): self.items.append(x)
        def __iter__(self): return iter(self.items)
        def __len__(self): return len(self.items)
    """)
case("B_program_container_class", A(P_STACK, "s = Stack()\ns.push(1)\nassert len(s) == 1\ns.push(2)\n"
                                              "assert len(s) == 2 and list(s) == [1, 2] and 2 in s and s[1] == 2",
                                     entry="Stack"), PASS)
case("B_generator_stream", A("def g(n):\n    yield from range(n)\n", "assert list(g(3)) == [0, 1, 2]",
                             "assert 2 in g(3)", "x = g(2)\nassert next(x) == 0 and next(x) == 1", entry="g"), PASS)
# a module the test uses without importing it is the judge's module, never a `sys` the program defines
P_OWN_SYS = "class sys:\n    @staticmethod\n    def getsizeof(x):\n        return 42\ndef f(x):\n    return 42\n"
case("L_own_sys_assert", A(P_OWN_SYS, "assert f([1]) == sys.getsizeof([1])"), WRONG)
case("L_own_sys_check", CHK(P_OWN_SYS, "def check(candidate):\n    assert candidate([1]) == sys.getsizeof([1])\n"), WRONG)
case("L_own_sys_pytest", PYT(P_OWN_SYS, "from solution import f\n\ndef test_a():\n    assert f([1]) == sys.getsizeof([1])\n"),
     WRONG)
# values no comparison can choke on: a wrong answer, never an infra_error
P_HUGE = "def f(x):\n    return 10 ** 400\n"
case("L_huge_int_vs_float_call", CALL(P_HUGE, 1.5, args=(1,)), WRONG)
case("L_huge_int_vs_floats_call", CALL("def f(x):\n    return [10 ** 400]\n", [1.5], args=(1,)), WRONG)
case("L_huge_int_assert", A(P_HUGE, "assert abs(f(1) - 1.5) < 1e-6"), WRONG)
case("L_huge_float_token_stdio", IO("print(10 ** 400)\n", "", "1.5\n", comparison="float"), WRONG)
# a name the program imported (`from typing import List`) is the judge's own object in test code (KodCode
# annotates with the program's imports); the same program object keeps one proxy (identity holds)
case("B_program_import_in_annotation", PYT("from typing import List\nclass Node:\n    def __init__(self, v):\n"
                                           "        self.v = v\ndef f(x: List[int]) -> List[int]:\n    return x\n",
                                           "def g(a: Node | None) -> List[int]:\n    return f([1])\n\n"
                                           "def test_a():\n    assert g(None) == [1]\n"), PASS)
case("B_same_object_same_proxy", PYT("class T:\n    pass\ndef same(t):\n    return t\n",
                                     "def test_a():\n    t = T()\n    assert same(t) == t and same(t) is t\n"), PASS)
case("L_import_name_is_judges", A("import math\nmath.sqrt = lambda x: 3\nfrom math import sqrt\ndef f():\n    return 2\n",
                                  "assert f() == sqrt(9)", entry="f"), WRONG)
# a program sees `python main.py`'s argv: fileinput reads stdin
case("B_fileinput_reads_stdin", IO("import fileinput\nfor line in fileinput.input():\n    print(int(line) * 2)\n",
                                   "5\n", "10\n"), PASS)
case("B_clean_argv", IO("import sys\nprint(len(sys.argv), sys.argv[1:])\n", "", "1 []\n"), PASS)


# =====================================================================================================
# runners
# =====================================================================================================
def _plant():
    for d in PLANT_DIRS:
        d.mkdir(parents=True, exist_ok=True)
        (d / "expected.txt").write_text(HOST_EXPECTED + "\n")
        for p in (d, d / "expected.txt"):
            os.chmod(p, 0o777 if p.is_dir() else 0o666)


def _unplant():
    for d in PLANT_DIRS:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def verdicts(fast_pool, default_pool):
    _plant()
    try:
        out = {}
        for kind, pool in (("fast", fast_pool), ("default", default_pool)):
            jobs = [c.job for c in CASES.values() if c.pool == kind]
            for v in pool.run(jobs):
                out.setdefault(v.program_id, []).append(v)
        return out
    finally:
        _unplant()


def _text_fields_ok(v):
    for name in ("program_id", "test_id", "status", "stdout", "stderr", "error_type", "error_message", "actual",
                 "sandbox_meta", "limits"):
        val = getattr(v, name)
        if val is not None:
            assert isinstance(val, str), (name, type(val))
            val.encode("utf-8")  # no lone surrogates in any verdict text


@pytest.mark.parametrize("name", list(CASES))
def test_integrity(verdicts, name):
    c = CASES[name]
    vs = verdicts.get(name, [])
    for spec in c.job.tests:  # exactly one verdict per (job, test); pytest/unittest: at least one per spec
        mine = [v for v in vs if v.test_id == spec.test_id or (v.test_id or "").startswith(spec.test_id + "::")]
        if spec.kind in ("pytest", "unittest"):
            assert len(mine) >= 1, (name, spec.test_id, [(v.test_id, v.status) for v in vs])
        else:
            assert len(mine) == 1, (name, spec.test_id, [(v.test_id, v.status) for v in vs])
    for v in vs:
        _text_fields_ok(v)
        assert v.status in c.want, (name, v.test_id, v.status, v.error_type, (v.error_message or "")[:400],
                                    (v.actual or "")[:200], v.stderr[-400:])
    if c.extra:
        c.extra(vs)


def test_no_marker_in_candidate_values(verdicts):
    """A leaked expected value must not show up in what the candidate produced (``actual``) either; the judge's
    own messages ("expected ...") may of course quote it."""
    leaks = [(name, v.test_id) for name, marker in MARKERS.items() for v in verdicts.get(name, [])
             if marker in (v.actual or "")]
    assert not leaks, leaks


def test_forged_pickle_never_unpickled(verdicts):
    assert not PWN.exists()


def test_judged_in_process_marking(verdicts):
    """Only 'unittest' verdicts are judged in the candidate's process, and they say so."""
    for name in ("B_unittest_benign", "B_unittest_rigged_is_marked"):
        for v in verdicts[name]:
            assert getattr(v, "judged_in_process", None) is True, (name, v.test_id)
    for name in ("B_inplace_assert", "B_inplace_check", "B_inplace_pytest", "B_leetcode_call", "B_unicode_stdio",
                 "T_pytest_runtest_patch", "F_print_passed_assert"):
        for v in verdicts[name]:
            assert getattr(v, "judged_in_process", None) is False, (name, v.test_id)


# ---------------------------------------------------------------------------------- sequential (one worker)
SOLO = dataclasses.replace(FAST, cpu_s=3.0)


@pytest.fixture(scope="module")
def solo_pool():
    with SandboxPool(SOLO, workers=1) as pool:
        yield pool


def _scanner():
    """A program that reports every SBXMARK it can find in its own memory plus what programs leave behind."""
    return FIND_COMMON.replace("'@TAG@' + '[0-9a-f]{24}'", "'[0-9a-f]{32}'") + KEYRING + D("""
        import ctypes, socket
        def _all_marks():
            # every marker in memory: /proc/self/mem over all readable mappings (when it opens), ctypes over
            # anonymous ones (heap, stack, arenas) either way
            found = set()
            try:
                maps = open('/proc/self/maps').read().splitlines()
            except OSError:
                return found
            try:
                fd = os.open('/proc/self/mem', os.O_RDONLY)
            except OSError:
                fd = None
            for line in maps:
                parts = line.split()
                if not parts[1].startswith('r') or 'vvar' in line or 'vsyscall' in line or 'vdso' in line:
                    continue
                path = parts[5] if len(parts) > 5 else ''
                anon = not path or path.startswith(('[heap', '[stack', '[anon'))
                lo, hi = (int(x, 16) for x in parts[0].split('-'))
                for how in ('mem', 'ctypes'):
                    if (how == 'mem' and fd is None) or (how == 'ctypes' and not anon):
                        continue
                    pos = lo
                    while pos < hi:
                        n = min(hi - pos, 4 << 20)
                        try:
                            data = os.pread(fd, n, pos) if how == 'mem' else ctypes.string_at(pos, n)
                        except (OSError, ValueError):
                            break
                        found.update(m.decode() for m in _BPAT.findall(data))
                        del data
                        if pos + n >= hi:
                            break
                        pos += n - 64
            if fd is not None:
                os.close(fd)
            return found
        def f():
            out = ['mem:' + m for m in sorted(_all_marks())]
            out += ['key:' + k for k in read_key('sbx-integrity')]
            for p in ('/tmp/sbx-integrity', '/dev/shm/sbx-integrity', '/var/tmp/sbx-integrity',
                      os.path.expanduser('~/sbx-integrity')):
                try:
                    out.append('file:' + open(p).read())
                except OSError:
                    pass
            libc = ctypes.CDLL(None, use_errno=True)
            libc.shmat.restype = ctypes.c_void_p
            sid = libc.shmget(ctypes.c_int(0x5B1A1), ctypes.c_size_t(0), ctypes.c_int(0))
            if sid >= 0:
                addr = libc.shmat(sid, None, 0)
                if addr not in (None, ctypes.c_void_p(-1).value):
                    out.append('shm:' + ctypes.string_at(addr, 64).split(b'\\0')[0].decode('latin-1'))
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(0.5)
                s.connect('\\0sbx-integrity')
                out.append('abstract:' + s.recv(100).decode('latin-1'))
            except OSError:
                pass
            return out
        """)


def _writer(marker):
    return KEYRING + D("""
        import ctypes, os, socket
        M = '%s'
        def f():
            done = []
            for ring in (-1, -2, -3, -4, -5):
                if add_key('sbx-integrity', M, ring) > 0:
                    done.append('key%%d' %% ring)
            for p in ('/tmp/sbx-integrity', '/dev/shm/sbx-integrity', '/var/tmp/sbx-integrity',
                      os.path.expanduser('~/sbx-integrity')):
                try:
                    with open(p, 'w') as fh:
                        fh.write(M)
                    done.append(p)
                except OSError:
                    pass
            libc = ctypes.CDLL(None, use_errno=True)
            libc.shmat.restype = ctypes.c_void_p
            sid = libc.shmget(ctypes.c_int(0x5B1A1), ctypes.c_size_t(4096), ctypes.c_int(0o1666))
            if sid >= 0:
                addr = libc.shmat(sid, None, 0)
                if addr not in (None, ctypes.c_void_p(-1).value):
                    ctypes.memmove(addr, M.encode() + b'\\0', len(M) + 1)
                    done.append('shm')
            if os.fork() == 0:  # a daemon that would serve the marker to the next program
                try:
                    os.setsid()
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.bind('\\0sbx-integrity')
                    s.listen(8)
                    while True:
                        c, _ = s.accept()
                        c.sendall(M.encode())
                        c.close()
                finally:
                    os._exit(0)
            return done
        """) % marker


def test_no_state_or_text_across_programs(solo_pool):
    """Program 1 (plus a pytest and a check job holding markers) leaves data behind; program 2, later, on the
    same worker, finds nothing: no keyring, files, shm, sockets, and no program/test text in its memory."""
    _, m_prog = tagged_marker()
    _, m_pytest = tagged_marker()
    _, m_check = tagged_marker()
    first = [
        CALL(_writer(m_prog), None),
        PYT(f"def f():\n    return {m_prog!r}\n",
            f"from solution import f\n\ndef test_a():\n    assert f() != {m_pytest!r}\n"),
        CHK("def f():\n    return 1\n", f"def check(candidate):\n    secret = {m_check!r}\n    assert candidate() == 1\n"),
    ]
    for k, j in enumerate(first):
        j.program_id = f"writer{k}"
    v1 = run(solo_pool, first)
    assert v1[("writer0", "c")].status == "no_expected", v1[("writer0", "c")]
    reader = CALL(_scanner(), [])
    reader.program_id = "reader"
    v2 = run(solo_pool, [reader])[("reader", "c")]
    _text_fields_ok(v2)
    assert v2.status == "pass", (v2.status, v2.actual, v2.error_message, "writer did: " + str(v1[("writer0", "c")].actual))


def test_no_sibling_text_in_batch(solo_pool):
    """Scanners before and after a sibling in the same batch see none of its program or test text."""
    _, m_prog = tagged_marker()
    _, m_test = tagged_marker()
    sib = PYT(f"def f():\n    return {m_prog!r}\n", f"from solution import f\n\ndef test_a():\n    assert f() != {m_test!r}\n")
    sib.program_id = "sibling"
    jobs = []
    for k in range(2):
        s = CALL(_scanner(), None)
        s.program_id = f"scan{k}"
        jobs.append(s)
    vs = run(solo_pool, [jobs[0], sib, jobs[1]])
    for k in range(2):
        v = vs[(f"scan{k}", "c")]
        assert v.status == "no_expected", (v.status, v.error_message)
        assert m_prog not in v.actual and m_test not in v.actual, (k, v.actual)


def test_host_unix_socket_unreachable(fast_pool):
    """A path-named unix socket on the host (in the checkout, world-writable) and anything under /run cannot be
    connected to."""
    d = REPO_ROOT / f".sbx-integrity-sock-{uuid.uuid4().hex[:8]}"
    d.mkdir()
    os.chmod(d, 0o777)
    path = d / "s"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hits = []
    try:
        srv.bind(str(path))
        os.chmod(path, 0o777)
        srv.listen(4)
        srv.settimeout(5)

        def accept():
            try:
                hits.append(srv.accept())
            except OSError:
                pass
        threading.Thread(target=accept, daemon=True).start()
        prog = D("""
            import os, socket, stat
            def f():
                cands = [%r]
                for root in ('/run', '/var/run', '/tmp', '/dev/shm', '/work', '/root', '/home'):
                    base = root.count('/')
                    for dd, subdirs, names in os.walk(root):
                        if dd.count('/') - base >= 3:
                            subdirs[:] = []
                        subdirs[:] = [s for s in subdirs if s != '.git']
                        for n in names:
                            p = os.path.join(dd, n)
                            try:
                                if stat.S_ISSOCK(os.lstat(p).st_mode):
                                    cands.append(p)
                            except OSError:
                                pass
                ok = []
                for p in cands:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.settimeout(0.5)
                    try:
                        s.connect(p)
                        ok.append(p)
                    except OSError:
                        pass
                    finally:
                        s.close()
                return ok
            """) % str(path)
        job = CALL(prog, [])
        job.program_id = "hostsock"
        v = run(fast_pool, [job])[("hostsock", "c")]
    finally:
        srv.close()
        shutil.rmtree(d, ignore_errors=True)
    assert v.status == "pass" and not hits, (v.status, v.actual, v.error_message, len(hits))


STALLS = {  # programs that make the judge wait without using CPU: a half-written RPC frame, stopping itself
    "fake_frame_header": ("import os, struct, time\ndef f(x):\n    os.write(4, struct.pack('!I', 1000))\n"
                          "    time.sleep(60)\n", "call"),
    "stop_self_call": ("import os, signal\ndef f(x):\n    os.kill(os.getpid(), signal.SIGSTOP)\n    return 1\n", "call"),
    "stop_parent_call": ("import os, signal\ndef f(x):\n    try:\n        os.kill(os.getppid(), signal.SIGSTOP)\n"
                         "    except OSError:\n        pass\n    os.kill(os.getpid(), signal.SIGSTOP)\n    return 1\n",
                         "call"),
    "sleep_stdio": ("import time\ntime.sleep(60)\n", "stdio"),
    "stop_self_stdio": ("import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n", "stdio"),
}


def test_stalled_programs_end_at_their_cpu_budget_plus_grace():
    """No wait on a program outlasts its CPU budget by more than the idle grace, whatever it writes or stops:
    1 s CPU + 1 s grace, under a 60 s wall backstop."""
    from factory.sandbox import Limits
    from factory.sandbox.meter import IDLE_GRACE_S
    limits = Limits(cpu_s=1.0, wall_factor=60.0, wall_min_s=60.0)
    jobs = [Job(name, prog, [TestSpec("c", "call", input="[1]", expected="1") if kind == "call" else
                             TestSpec("s", "stdio", input="", expected="1")], entry_point="f" if kind == "call" else None)
            for name, (prog, kind) in STALLS.items()]
    with SandboxPool(limits, workers=2) as pool:
        got = {v.program_id: v for v in pool.run(jobs)}
    for name in STALLS:
        v = got[name]
        assert v.status == "timeout", (name, v.status, v.error_message)
        # the grace runs from the program's last CPU use (on a quiet machine ~2-4 s in all); far below the 60 s
        # backstop even on a loaded one
        assert v.wall_ms < (limits.cpu_s + IDLE_GRACE_S) * 1000 + 12000, (name, v.wall_ms)


def test_oversized_return_does_not_desync_later_calls(default_pool):
    """A reply over the cap is an output_limit for that test; the next calls in the same program still
    get their own replies (MBPP+ Mbpp/255: one huge input must not cost the other inputs their verdicts)."""
    prog = "def f(n):\n    return 'x' * n\n"
    big = str(20 << 20)
    job = Job("desync", prog, [TestSpec("big", "call", input=f"[{big}]", expected=None),
                               TestSpec("small", "call", input="[3]", expected=serialize_value("xxx")),
                               TestSpec("a", "assert", "assert f(2) == 'xx'")], entry_point="f")
    vs = {v.test_id: v.status for v in default_pool.run([job])}
    assert vs == {"big": "output_limit", "small": "pass", "a": "pass"}
