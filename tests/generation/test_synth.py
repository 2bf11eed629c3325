"""AceCoder-style synthesis prompt and parser, on hand-written outputs that mimic small models."""
from __future__ import annotations

import json

import pytest

from factory.generation.synth import build_synth_messages, check_test, parse_synth_output

Q = "Write a function `count_vowels(s)` that returns the number of vowels (a, e, i, o, u) in the string s."
GOOD = ['assert count_vowels("hello") == 2', 'assert count_vowels("") == 0', 'assert count_vowels("xyz") == 0',
        'assert count_vowels("aeiou") == 5', 'assert count_vowels("Programming") == 3',
        'assert count_vowels("banana") == 3']


def _json(q=Q, tests=GOOD, **kw):
    return json.dumps({"question": q, "tests": tests}, **kw)


FIXTURES = {
    # name: (model output, expected status, expected number of kept tests, expected parser path)
    "clean_json": (_json(), "ok", 6, "json"),
    "fenced_json_with_chatter": ("Sure! Here is the JSON you asked for:\n```json\n" + _json(indent=2)
                                 + "\n```\nLet me know if you need anything else.", "ok", 6, "json"),
    "think_then_json": ("<think>The code counts vowels. I should write tests.</think>\n" + _json(), "ok", 6, "json"),
    "truncated_json_many_tests": (_json(indent=2)[:-40], "ok", 5, "json_repaired"),
    "truncated_json_two_tests": (_json(indent=2)[:_json(indent=2).index("xyz")], "truncated", 2, "json_repaired"),
    "unescaped_quotes": ('{"question": "' + Q + '",\n "tests": [\n'
                         + ",\n".join(f'  "{t}"' for t in GOOD) + "\n]}", "ok", 6, "jsonish"),
    "python_dict_single_quotes": (repr({"question": Q, "tests": GOOD}), "ok", 6, "json"),
    "markdown_sections": ("**Question:**\n" + Q + "\n\n**Tests:**\n```python\n" + "\n".join(GOOD) + "\n```",
                          "ok", 6, "sections"),
    "prose_plus_fenced_solution_and_asserts": (
        Q + "\n\n```python\ndef count_vowels(s):\n    return sum(c in 'aeiou' for c in s.lower())\n\n"
        + "\n".join(GOOD) + "\nprint(count_vowels('hi'))\n```", "ok", 6, "fenced"),
    "loose_assert_lines": (Q + "\n\nTest cases:\n" + "\n".join(GOOD), "ok", 6, "loose"),
    "helper_variables": (_json(tests=['s = "hello"\nassert count_vowels(s) == 2', 'assert count_vowels(word) == 1',
                                      'assert count_vowels("a") == 1', 'x = count_vowels("e"); assert x == 1']),
                         "too_few_tests", 1, "json"),
    "duplicates": (_json(tests=GOOD[:2] * 4 + ['assert  count_vowels( "hello" )==2']), "duplicate_tests", 2, "json"),
    "empty": ("   \n  ", "empty", 0, ""),
    "unclosed_think": ("<think>Let me think about what this code does. It seems to", "empty", 0, ""),
    "refusal": ("I'm sorry, but I can't help with turning this code into a question.", "no_tests", 0, "loose"),
    "question_is_code": (_json(q="def count_vowels(s):\n    return 0"), "bad_question", 6, "json"),
    "non_assert_tests": (_json(tests=['print(count_vowels("hi"))', 'count_vowels("a") == 1',
                                      'assertEqual(count_vowels("a"), 1)']), "invalid_tests", 0, "json"),
    "tests_as_one_string": (_json(tests="\n".join(GOOD)), "ok", 6, "json"),
    "undefined_module_and_open": (_json(tests=GOOD[:4] + ['assert count_vowels(math.pi) == 0',
                                                          'assert count_vowels(open("f").read()) == 1']),
                                  "too_few_tests", 4, "json"),
    "trailing_commas": ('{"question": "' + Q + '", "tests": [' + ", ".join(json.dumps(t) for t in GOOD) + ",],}",
                        "ok", 6, "json"),
    "alternate_keys": (json.dumps({"Problem": Q, "test_cases": GOOD}), "ok", 6, "json"),
    "numbered_markdown_list": ("### Problem\n" + Q + "\n\n### Tests\n" + "\n".join(
        f"{i + 1}. `{t}`" for i, t in enumerate(GOOD)), "ok", 6, "sections"),
    "float_and_multiline_asserts": (_json(q="Write `mean(xs)` returning the arithmetic mean of a list of floats.",
                                          tests=["assert abs(mean([1.0, 2.0]) - 1.5) < 1e-9",
                                                 "assert mean(\n    [1, 2, 3]\n) == 2",
                                                 "assert mean([0] * 10) == 0", "assert mean([-1, 1]) == 0",
                                                 "assert mean([2.5]) == 2.5",
                                                 "assert all(mean([x]) == x for x in (1, 2, 3))"]), "ok", 5, "json"),
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_parse_fixture(name):
    text, status, n_tests, source = FIXTURES[name]
    res = parse_synth_output(text)
    assert res.status == status, (res.status, res.detail, res.rejected)
    assert len(res.tests) == n_tests, (res.tests, res.rejected)
    assert res.source == source
    if status == "ok":
        assert res.question.startswith("Write") and res.entry_point in ("count_vowels", "mean")


def test_truncated_flag_and_detail():
    res = parse_synth_output(FIXTURES["truncated_json_many_tests"][0])
    assert res.truncated and "truncated" in res.detail
    assert parse_synth_output(FIXTURES["clean_json"][0]).truncated is False


def test_rejection_reasons_are_recorded():
    res = parse_synth_output(FIXTURES["helper_variables"][0])
    reasons = sorted(r for _, r in res.rejected)
    assert reasons == ["multiple_statements", "multiple_statements", "undefined_name:word"]


@pytest.mark.parametrize("test,reason", [
    ('assert f(1) == 2', None),
    ('assert f(-1, [1, 2], {"a": (1,)}, k=None) == float("inf")', None),
    ('assert sorted(f([3, 1])) == [1, 3]', None),
    ('assert f([1] * 3) == 3', None),
    ('assert f(x) == 2', "undefined_name:x"),
    ('assert f(g(1)) == 2', "undefined_name:g"),
    ('assert f(len("ab")) == 2', "non_constant_args"),
    ('assert g(1) == 2', "undefined_name:g"),
    ('assert 1 == 1', "no_call"),
    ('f(1) == 2', "not_assert"),
    ('assert f(1) == 2; assert f(2) == 3', "multiple_statements"),
    ('assert f(1', "incomplete"),
    ('assert f(eval("1")) == 1', "forbidden_name:eval"),
    ('assert [f(i) for i in range(2)] == [0, 1]', "non_constant_args"),
])
def test_check_test(test, reason):
    assert check_test(test, "f") == reason


def test_entry_point_override():
    res = parse_synth_output(_json(tests=GOOD + ["assert helper(1) == 1"]), entry_point="count_vowels")
    assert res.entry_point == "count_vowels" and len(res.tests) == 6


def test_build_synth_messages():
    code = "def f(x):\n    return x + 1\n"
    msgs = build_synth_messages(code, "Add one to x.", n_tests=15)
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    assert "```python\ndef f(x):\n    return x + 1\n```" in user
    assert "Add one to x." in user and "about 15 test cases" in user
    assert "one Python function" in user and '"tests"' in user and "assert" in user
    bare = build_synth_messages(code, None, system=None)
    assert len(bare) == 1 and "Original question" not in bare[0]["content"]
