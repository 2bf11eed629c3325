"""Sampling prompt layout and code extraction/sanitizing on realistic completions."""
from __future__ import annotations

import ast

import pytest

from factory.generation.sample import SAMPLE_INSTRUCTION, SAMPLE_PREFIX, build_sample_messages, extract_code
from factory.generation.sanitize import sanitize

SOL = "def add(a, b):\n    return a + b"


def test_build_sample_messages_layout():
    msgs = build_sample_messages("Add two numbers.", tests=["assert add(1, 2) == 3", "assert add(0, 0) == 0",
                                                            "assert add(-1, 1) == 0"])
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert msgs[0]["content"] == (f'{SAMPLE_INSTRUCTION}\n```\n"""\nAdd two numbers.\nassert add(1, 2) == 3\n'
                                  'assert add(0, 0) == 0\n"""\n```')
    assert msgs[1]["content"] == f"{SAMPLE_PREFIX}\n```python\n"
    m2 = build_sample_messages("Q", starter_code="def f(x):\n    pass", assistant_prefix=False, system="S")
    assert [m["role"] for m in m2] == ["system", "user"] and "```python\ndef f(x):\n    pass\n```" in m2[1]["content"]


CASES = {
    # name: (completion, entry_point, finish_reason, expected status, expected code or None to skip)
    "plain_fence": (f"Here you go:\n```python\n{SOL}\n```\nThis adds.", "add", None, "ok", SOL + "\n"),
    "prefix_continuation": (f"{SOL}\n```\n\nThe function returns the sum.", "add", None, "ok", SOL + "\n"),
    "last_block_wins": (f"```python\ndef add(a, b):\n    return 0\n```\nFixed:\n```python\n{SOL}\n```",
                        "add", None, "ok", SOL + "\n"),
    "usage_block_after_solution": (f"```python\n{SOL}\n```\nUsage:\n```python\nprint(add(1, 2))\n```",
                                   "add", None, "ok", SOL + "\n"),
    "think_dropped": (f"<think>maybe ```python\ndef add(a, b): return 1\n```</think>\n```python\n{SOL}\n```",
                      "add", None, "ok", SOL + "\n"),
    "unclosed_think": ("<think>I need to add two numbers, so", "add", "length", "truncated", None),
    "unfenced": (f"Sure, the solution is:\n\n{SOL}\n\nIt simply adds them.", "add", None, "ok", SOL + "\n"),
    "tests_and_main_removed": (
        f"```python\nimport math\n\n{SOL}\n\nassert add(1, 2) == 3\nprint(add(2, 2))\n"
        "if __name__ == '__main__':\n    print(add(int(input()), 1))\n```", "add", None, "ok",
        "import math\n\n\n" + SOL + "\n"),
    "dependencies_kept": (
        "```python\nfrom typing import List\nSCALE = 2\n\ndef helper(x):\n    return x * SCALE\n\n"
        "def unused():\n    return 1\n\ndef total(xs: List[int]) -> int:\n    return sum(helper(x) for x in xs)\n\n"
        "print(total([1]))\n```", "total", None, "ok",
        "from typing import List\nSCALE = 2\n\n\ndef helper(x):\n    return x * SCALE\n\n\n"
        "def total(xs: List[int]) -> int:\n    return sum(helper(x) for x in xs)\n"),
    "truncated_in_fence": ("```python\ndef add(a, b):\n    return (a +", "add", "length", "truncated", None),
    "truncated_but_parseable": ("```python\ndef add(a, b):\n    return a + b\n\ndef sub(", "add", "length",
                                "truncated", None),
    "syntax_error": ("```python\ndef add(a, b)\n    return a + b\n```", "add", None, "syntax_error", None),
    "no_code": ("I cannot solve this problem.", "add", None, "no_code", None),
    "unfenced_prefix_continuation_cut": ("def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a -", "add",
                                         "length", "truncated", None),
    "unfenced_garbage_def": ("def add(a, b) return a + b, obviously", "add", None, "syntax_error", None),
    "empty": ("", None, None, "no_code", None),
    "wrong_name": (f"```python\n{SOL}\n```", "plus", None, "missing_entry_point", None),
    "leetcode_class": ("```python\nclass Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n"
                       "\nprint(Solution().twoSum([1], 1))\n```", "twoSum", None, "ok",
                       "class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n"),
    # no entry point: a stdin/stdout script, kept whole (its module-level code is the program)
    "no_entry_point_keeps_script": (f"```py\n{SOL}\nprint(add(1, 2))\n```", None, None, "ok",
                                    f"{SOL}\nprint(add(1, 2))"),
    "other_language_ignored": ("```cpp\nint add(int a, int b) { return a + b; }\n```", "add", None, "no_code", None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_extract_code(name):
    completion, ep, finish, status, code = CASES[name]
    got, st = extract_code(completion, ep, finish_reason=finish)
    assert st == status, (st, got)
    if code is not None:
        assert got == code
    if st == "ok":
        ast.parse(got)


def test_sanitize_keeps_decorators_and_classes():
    src = ("import functools\n\n@functools.lru_cache(None)\ndef fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n"
           "\nclass Unused:\n    pass\n\nfor i in range(3):\n    print(fib(i))\n")
    out, found = sanitize(src, "fib")
    assert found and out.startswith("import functools\n\n\n@functools.lru_cache(None)\ndef fib")
    assert "Unused" not in out and "print" not in out
