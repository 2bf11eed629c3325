"""Judge fidelity: a value keeps the type a test relies on across the judge/program boundary, rebuilt by trusted
code from plain data; no program-defined object gets back in; imported names never break pytest collection.

Before: a numpy array crossed as a list (KodCode's activation_function reference failed on ``vector >= 0``, the
array the test passed in), and pytest collected a test file's ``from heapq import merge as test_merge`` as a test
(the whole file failed at collection): 107 of 109 KodCode references passed in the sandbox.
"""
from __future__ import annotations

import json
import textwrap

import pytest

from factory.ingest.adapters import kodcode
from factory.sandbox import Job, Limits, SandboxPool, TestSpec
from sbx_helpers import run

KODCODE_FILES = ("Verified_KodCode_algorithm_100_1741212598_Complete.json",
                 "Verified_KodCode_prefill_200_1741214325_Complete.json",
                 "Verified_KodCode_leetcode_100_1741214688_Complete.json")


@pytest.fixture(scope="module")
def pool():
    # numpy is imported by the program and (to rebuild the values it returns) by the judge: default CPU budget
    with SandboxPool(Limits(), workers=1) as p:
        yield p


def _kodcode_rows(shared_data):
    rows = []
    for name in KODCODE_FILES:
        path = shared_data / "kodcode_demo" / name
        rows += [kodcode(r, (str(path), i), {}) for i, r in enumerate(json.loads(path.read_text()), start=1)]
    return rows


def _job(norm):
    return Job(norm.source_id, norm.programs[0].code,
               [TestSpec(f"t{k}", t.kind, t.code) for k, t in enumerate(norm.tests)], entry_point=norm.entry_point)


def _failures(verdicts):
    return sorted((k, v.status, (v.error_message or "")[:300]) for k, v in verdicts.items() if v.status != "pass")


def test_kodcode_numpy_and_imported_test_name_references_pass(pool, shared_data):
    """The two KodCode references that failed only in the sandbox pass: numpy arrays in and out of the program
    (algorithm-00000068) and a test file importing ``heapq.merge as test_merge`` (prefill-00000003)."""
    rows = {n.source_id: n for n in _kodcode_rows(shared_data)}
    jobs = [_job(rows[sid]) for sid in ("algorithm-00000068-68", "prefill-00000003-3")]
    verdicts = run(pool, jobs)
    assert {k[0] for k in verdicts} == {"algorithm-00000068-68", "prefill-00000003-3"}
    assert _failures(verdicts) == []
    # prefill-00000003 has six test functions of its own: all ran, the imported test_merge is none of them
    merge_cases = sorted(k[1].split("::", 1)[1] for k in verdicts if k[0] == "prefill-00000003-3")
    assert len(merge_cases) == 6 and not any("test_merge[" in c or c.endswith("::test_merge") or c == "test_merge"
                                             for c in merge_cases), merge_cases


@pytest.mark.slow
def test_every_kodcode_reference_passes_in_the_sandbox(shared_data):
    """KodCode's dataset says every row is verified: all 109 references pass their own tests here too."""
    rows = _kodcode_rows(shared_data)
    assert len(rows) == 109
    with SandboxPool(Limits(), workers=2) as p:
        verdicts = run(p, [_job(n) for n in rows])
    assert {k[0] for k in verdicts} == {n.source_id for n in rows}
    assert _failures(verdicts) == []


NUMPY_PROGRAM = textwrap.dedent("""
    import numpy as np

    def double(a):
        return a * 2

    def kinds(a):
        return a.dtype.str, a.shape, type(a).__name__

    def stats(a):
        return np.float32(a.mean()), np.int64(a.sum()), np.bool_(a.any())

    def grid():
        return np.arange(6, dtype=np.int16).reshape(2, 3)

    def clip_in_place(a):
        a[a < 0] = 0
""")

NUMPY_TESTS = textwrap.dedent("""
    import numpy as np
    from solution import double, kinds, stats, grid

    def test_array_in_and_out():
        v = np.array([-1.5, 0.0, 2.0])
        out = double(v)
        assert type(out) is np.ndarray and out.dtype == np.float64
        assert (out >= 0).tolist() == [False, True, True]
        assert np.array_equal(out, [-3.0, 0.0, 4.0])

    def test_the_program_sees_an_array():
        assert kinds(np.zeros((2, 3), dtype=np.float32)) == ("<f4", (2, 3), "ndarray")

    def test_scalars_keep_their_dtype():
        mean, total, anything = stats(np.array([1, 2, 3, 4]))
        assert type(mean) is np.float32 and mean == np.float32(2.5)
        assert type(total) is np.int64 and total == 10
        assert type(anything) is np.bool_ and anything

    def test_shape_and_dtype_survive():
        g = grid()
        assert g.shape == (2, 3) and g.dtype == np.int16 and g[1, 2] == 5
""")


def test_numpy_values_cross_as_numpy(pool):
    verdicts = run(pool, [Job("np", NUMPY_PROGRAM, [TestSpec("t", "pytest", NUMPY_TESTS)])])
    assert len(verdicts) == 4
    assert _failures(verdicts) == []
    # the assert-style path: the judge reports the computed value, the parent compares it with the literal
    asserts = [TestSpec("a0", "assert", "import numpy as np\nassert double(np.array([1, 2])).tolist() == [2, 4]"),
               TestSpec("a1", "assert", "import numpy as np\nassert double(np.array([1, 2])).dtype == np.int64"),
               TestSpec("a2", "assert", "import numpy as np\nassert double(np.array([1, 2])).tolist() == [2, 5]")]
    verdicts = run(pool, [Job("npa", NUMPY_PROGRAM, asserts, entry_point="double")])
    assert {k[1]: v.status for k, v in verdicts.items()} == {"a0": "pass", "a1": "pass", "a2": "fail"}


LIBRARY_PROGRAM = textwrap.dedent("""
    import collections, datetime, decimal, fractions

    def values():
        return {"dec": decimal.Decimal("1.10"), "frac": fractions.Fraction(1, 3),
                "when": datetime.datetime(2024, 2, 29, 12, 30), "day": datetime.date(2024, 1, 1),
                "span": datetime.timedelta(hours=36), "counts": collections.Counter("abracadabra"),
                "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
                "groups": collections.defaultdict(list, {"x": [1]}), "queue": collections.deque([1, 2, 3], maxlen=5),
                "tup": (1, 2), "lst": [1, 2], "st": {1, 2}, "fst": frozenset({3}), "raw": b"\\x00",
                "cpx": 1 + 2j, "nan": float("nan"), "inf": float("-inf"), "r": range(0, 10, 3)}

    def next_day(d):
        return type(d).__name__, d + datetime.timedelta(days=1)

    def add(a, b):
        return a + b
""")

LIBRARY_TESTS = textwrap.dedent("""
    import collections, datetime, decimal, fractions, math
    from solution import values, next_day, add

    def test_library_types_arrive_as_themselves():
        v = values()
        assert type(v["dec"]) is decimal.Decimal and str(v["dec"]) == "1.10"
        assert v["frac"] == fractions.Fraction(1, 3) and type(v["frac"]) is fractions.Fraction
        assert v["when"] == datetime.datetime(2024, 2, 29, 12, 30) and v["day"].weekday() == 0
        assert v["span"].total_seconds() == 36 * 3600
        assert type(v["counts"]) is collections.Counter and v["counts"].most_common(1) == [("a", 5)]
        assert list(v["ordered"]) == ["b", "a"] and v["ordered"] != collections.OrderedDict([("a", 2), ("b", 1)])
        g = v["groups"]
        g["new"].append(2)
        assert g == {"x": [1], "new": [2]}
        assert type(v["queue"]) is collections.deque and v["queue"].maxlen == 5 and v["queue"] != [1, 2, 3]
        assert type(v["tup"]) is tuple and type(v["lst"]) is list and v["tup"] != v["lst"]
        assert type(v["st"]) is set and type(v["fst"]) is frozenset and v["raw"] == b"\\x00"
        assert v["cpx"].imag == 2 and math.isnan(v["nan"]) and v["inf"] == -math.inf
        assert list(v["r"]) == [0, 3, 6, 9]

    def test_library_values_reach_the_program_as_themselves():
        name, after = next_day(datetime.date(2024, 2, 28))
        assert name == "date" and after == datetime.date(2024, 2, 29)
        assert add(decimal.Decimal("0.1"), decimal.Decimal("0.2")) == decimal.Decimal("0.3")
        assert add(fractions.Fraction(1, 3), fractions.Fraction(1, 6)) == fractions.Fraction(1, 2)
        assert add(collections.Counter("ab"), collections.Counter("b")) == collections.Counter({"b": 2, "a": 1})
""")


def test_library_values_keep_their_types_both_ways(pool):
    verdicts = run(pool, [Job("lib", LIBRARY_PROGRAM, [TestSpec("t", "pytest", LIBRARY_TESTS)])])
    assert len(verdicts) == 2
    assert _failures(verdicts) == []


RIGGED_PROGRAM = textwrap.dedent("""
    import numpy as np

    class Always:
        def __eq__(self, other):
            return True
        def __ne__(self, other):
            return False
        def __bool__(self):
            return True

    class Agreeable(np.ndarray):
        def __eq__(self, other):
            return np.ones(np.shape(other), dtype=bool)
        def __array_finalize__(self, obj):
            pass

    class Sure(np.float64):
        def __eq__(self, other):
            return True
        def __hash__(self):
            return 0

    def answer():
        return Always()

    def vector():
        return np.array([9, 9, 9]).view(Agreeable)

    def mean():
        return Sure(0.0)

    def kind():
        return type(vector()).__name__
""")

RIGGED_PYTEST = textwrap.dedent("""
    import numpy as np
    from solution import answer, vector, mean

    def test_eq_always_true():
        assert answer() == 42

    def test_array_subclass_eq():
        assert (vector() == np.array([1, 2, 3])).all()

    def test_scalar_subclass_eq():
        assert mean() == 2.5

    def test_what_arrives():
        v, m = vector(), mean()
        assert type(v) is np.ndarray and v.tolist() == [9, 9, 9]
        assert type(m) is np.float64 and m == 0.0
""")


def test_program_defined_objects_never_get_back_in(pool):
    """An object whose __eq__ always says True, an ndarray subclass and a numpy-scalar subclass that agree with
    everything: each arrives as its data (a program handle, a plain ndarray, a plain float64) and fails."""
    verdicts = run(pool, [Job("rig", RIGGED_PROGRAM, [TestSpec("t", "pytest", RIGGED_PYTEST)])])
    status = {k[1].split("::")[-1]: v.status for k, v in verdicts.items()}
    assert status == {"test_eq_always_true": "fail", "test_array_subclass_eq": "fail",
                      "test_scalar_subclass_eq": "fail", "test_what_arrives": "pass"}, _failures(verdicts)
    asserts = [TestSpec("eq", "assert", "assert answer() == 42"),
               TestSpec("arr", "assert", "assert (vector() == [1, 2, 3]).all()"),
               TestSpec("lit", "assert", "assert vector().tolist() == [1, 2, 3]"),
               TestSpec("sc", "assert", "assert mean() == 2.5"),
               TestSpec("kind", "assert", "assert kind() == 'Agreeable'")]   # inside the program it is its own class
    verdicts = run(pool, [Job("rig-a", RIGGED_PROGRAM, asserts, entry_point="answer")])
    assert {k[1]: v.status for k, v in verdicts.items()} == {"eq": "fail", "arr": "fail", "lit": "fail", "sc": "fail",
                                                             "kind": "pass"}


def test_call_tests_compare_numpy_results_as_data(pool):
    """A call test's returned array reaches the parent as plain data (nested lists): equal to the expected list."""
    from factory.sandbox import serialize_value
    tests = [TestSpec("c0", "call", input=json.dumps([[[1, 2], [3, 4]]]), expected=serialize_value([[2, 4], [6, 8]])),
             TestSpec("c1", "call", input=json.dumps([[[1, 2], [3, 4]]]), expected=serialize_value([[2, 4], [6, 9]]))]
    program = "import numpy as np\ndef double(a):\n    return np.array(a) * 2\n"
    verdicts = run(pool, [Job("call", program, tests, entry_point="double")])
    assert {k[1]: v.status for k, v in verdicts.items()} == {"c0": "pass", "c1": "fail"}


IMPORTED_NAMES = textwrap.dedent("""
    import unittest
    from heapq import merge as test_merge
    from itertools import count as test_count
    from math import sqrt as test_sqrt
    from unittest import TestCase as TestImported
    from solution import half, test_helper, TestFromProgram

    def test_half():
        assert half(4) == 2
        assert list(test_merge([1], [0])) == [0, 1]

    class TestLocal:
        def test_method(self):
            assert half(2) == 1
""")


def test_only_what_the_test_file_defines_is_collected(pool):
    """Functions and classes a test file imports -- from the standard library or from the program, generator
    functions and TestCase classes included -- are not collected; the file's own tests run."""
    program = ("def half(x):\n    return x // 2\n\ndef test_helper():\n    raise SystemExit(3)\n\n"
               "class TestFromProgram:\n    def test_x(self):\n        assert False\n")
    verdicts = run(pool, [Job("imp", program, [TestSpec("t", "pytest", IMPORTED_NAMES)])])
    assert sorted(k[1] for k in verdicts) == ["t::TestLocal::test_method", "t::test_half"]
    assert _failures(verdicts) == []


def test_in_place_changes_to_library_values_reach_the_test(pool):
    """A program that sorts a numpy array or appends to a deque in place: the test sees the change, as it would
    without a sandbox (a view writes through to its base)."""
    program = ("def sort_in_place(a):\n    a.sort()\n\ndef push(q, x):\n    q.append(x)\n\n"
               "def bump(c, key):\n    c[key] += 1\n")
    tests = textwrap.dedent("""
        import collections
        import numpy as np
        from solution import sort_in_place, push, bump

        def test_array_sorted_in_place():
            a = np.array([3, 1, 2])
            sort_in_place(a)
            assert a.tolist() == [1, 2, 3] and a.dtype == np.int64
            base = np.array([9, 5, 4, 0])
            sort_in_place(base[1:3])
            assert base.tolist() == [9, 4, 5, 0]

        def test_collections_changed_in_place():
            q = collections.deque([1], maxlen=2)
            push(q, 2)
            push(q, 3)
            assert q == collections.deque([2, 3]) and q.maxlen == 2
            c = collections.Counter("aab")
            bump(c, "b")
            assert c == collections.Counter({"a": 2, "b": 2}) and type(c) is collections.Counter
    """)
    verdicts = run(pool, [Job("inplace", program, [TestSpec("t", "pytest", tests)])])
    assert len(verdicts) == 2
    assert _failures(verdicts) == []
