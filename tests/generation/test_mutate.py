"""AST mutants: operators, dedupe, determinism, and counts on real HumanEval / MBPP references."""
from __future__ import annotations

import ast
import gzip
import json
import statistics
from collections import Counter

from factory.testgen.mutants import OPERATORS, mutants

SRC = '''def f(xs, k):
    """Sum of doubled items above k, skipping 3."""
    total = 0
    for x in xs:
        if x > k and not x == 3:
            total += x * 2
    return total
'''


def _run(code: str, *args):
    ns: dict = {}
    exec(code, ns)
    return ns["f"](*args)


def test_operators_and_descriptions():
    ms = mutants(SRC, max_mutants=None)
    assert {m.operator for m in ms} == set(OPERATORS)
    descs = {m.description for m in ms}
    for d in ("line 5: > -> >=", "line 5: and -> or", "line 5: drop not", "line 5: == -> !=",
              "line 6: + -> -", "line 6: * -> //", "line 3: 0 -> 1", "line 7: return value -> None",
              "line 6: drop augassign statement"):
        assert d in descs, d
    for m in ms:   # docstrings are never dropped (nor mutated): every mutant keeps the function's docstring
        assert ast.get_docstring(ast.parse(m.code).body[0]) == "Sum of doubled items above k, skipping 3.", m
    original = ast.unparse(ast.parse(SRC))
    codes = [m.code for m in ms]
    assert original not in codes and len(set(codes)) == len(codes)
    for m in ms:
        ast.parse(m.code)
    assert _run(SRC, [1, 3, 5], 0) == 12
    killed = sum(_safe(m.code) != 12 for m in ms)
    assert killed >= len(ms) - 3  # nearly all mutants change behaviour on this input


def _safe(code):
    try:
        return _run(code, [1, 3, 5], 0)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__


def test_empty_block_gets_pass_and_bool_returns():
    src = "def g(x):\n    if x:\n        return True\n    return False\n"
    ms = mutants(src, max_mutants=None)
    codes = [m.code for m in ms]
    assert "def g(x):\n    if x:\n        pass\n    return False" in codes
    assert "def g(x):\n    if x:\n        return False\n    return False" in codes
    assert "def g(x):\n    if x:\n        return True\n    return True" in codes


def test_identical_and_duplicate_mutants_skipped():
    # dropping either of two identical statements gives the same program: only one mutant
    src = "def h(a):\n    a.append(1)\n    a.append(1)\n    return a\n"
    drops = [m for m in mutants(src, max_mutants=None) if m.operator == "drop_stmt"]
    assert len([m for m in drops if "append" in m.description or "expr" in m.description]) == 1
    assert mutants("import os\n", max_mutants=None) == []
    assert [m.code for m in mutants("x = 'a'\n", max_mutants=None)] == ["pass"]


def test_determinism_and_sampling():
    a = mutants(SRC, max_mutants=5, seed=1)
    assert a == mutants(SRC, max_mutants=5, seed=1) and len(a) == 5
    assert a != mutants(SRC, max_mutants=5, seed=2)
    full = mutants(SRC, max_mutants=None)
    assert [m for m in full if m in a] == a  # subset kept in site order
    assert mutants(SRC, operators=("compare",), max_mutants=None) == [m for m in full if m.operator == "compare"]


def _stats(progs):
    counts, ops = [], Counter()
    for code in progs:
        ms = mutants(code, max_mutants=None)
        counts.append(len(ms))
        ops.update(m.operator for m in ms)
    return counts, ops


def test_real_humaneval_and_mbpp_counts(shared_data, capsys):
    he = [json.loads(x) for x in gzip.open(shared_data / "humaneval" / "HumanEval.jsonl.gz", "rt")]
    mb = [json.loads(x) for x in open(shared_data / "mbpp" / "mbpp.jsonl", encoding="utf-8")]
    for name, progs, lo in (("humaneval", [p["prompt"] + p["canonical_solution"] for p in he], 15),
                            ("mbpp", [p["code"] for p in mb], 12)):
        counts, ops = _stats(progs)
        with capsys.disabled():
            print(f"\n[mutants] {name}: {len(progs)} programs, total {sum(counts)}, mean "
                  f"{statistics.mean(counts):.1f}, median {statistics.median(counts)}, min {min(counts)}, "
                  f"max {max(counts)}; by operator {dict(ops)}")
        assert min(counts) >= 1 and statistics.mean(counts) >= lo
        assert set(ops) == set(OPERATORS)
    # determinism on real data
    sample = [p["prompt"] + p["canonical_solution"] for p in he[:20]]
    assert [mutants(c, max_mutants=10, seed=3) for c in sample] == [mutants(c, max_mutants=10, seed=3) for c in sample]
