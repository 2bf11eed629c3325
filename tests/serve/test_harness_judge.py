"""A MultiPL-E harness as ground truth is judged the same way by ``factory.reward`` (compute_score), ``/v1/judge``
and ``/submit``: the candidate is built as MultiPL-E builds it (prompt + continuation cut at the stop tokens, or a
chat answer's program), compiled with the harness, and the verdict is judged in the program's own process -- so,
like an in-process ``unittest`` verdict, it is out of the reward unless ``exclude_in_process=False``
(docs/reward.md). Both ground-truth forms count: a MultiPL-E row, and factory tests whose one test is a harness."""
from __future__ import annotations

import pytest

from factory import reward
from factory.sandbox import languages, multipl_e
from tests.sandbox.test_harness_languages import CHAT, EXIT_FIRST, RIGHT, ROWS, WRONG

from .conftest import post

LANGS = [lang for lang in ("javascript", "cpp") if languages.toolchain(lang) is not None]
pytestmark = pytest.mark.skipif(not LANGS, reason="neither Node.js nor g++ is installed")


def factory_form(lang: str) -> dict:
    """The same problem as factory tests: one harness test, its language, prompt and stop tokens."""
    row = ROWS[lang]
    return {"tests": [{"test_id": "h", "kind": "harness", "code": row["tests"]}], "language": lang,
            "prompt": row["prompt"], "stop_tokens": row["stop_tokens"]}


def completions(lang: str) -> dict[str, str]:
    out = {"right": RIGHT[lang], "wrong": WRONG[lang], "exit0": EXIT_FIRST[lang]}
    if lang in CHAT:
        out["chat"] = CHAT[lang]
    return out


# what each completion scores: (exclude_in_process=True, exclude_in_process=False)
EXPECTED = {"right": (0.0, 1.0), "chat": (0.0, 1.0), "wrong": (0.0, 0.0), "exit0": (0.0, 1.0)}


@pytest.mark.parametrize("lang", LANGS)
def test_compute_score_judges_harness_rows_by_the_in_process_rule(lang):
    for form, gt in (("multipl-e row", ROWS[lang]), ("factory tests", factory_form(lang))):
        for kind, text in completions(lang).items():
            got = (reward.compute_score("multipl-e", text, gt),
                   reward.compute_score("multipl-e", text, gt, exclude_in_process=False))
            assert got == EXPECTED[kind], (form, kind, got)
    # the same rule as a BigCodeBench-style unittest ground truth (all tests judged in process)
    unit = {"tests": [{"kind": "unittest", "code": "import unittest\nclass T(unittest.TestCase):\n"
                                                   "    def test_a(self):\n        self.assertEqual(f(2), 4)\n"}]}
    program = "```python\ndef f(x):\n    return x * 2\n```"
    assert (reward.compute_score("u", program, unit),
            reward.compute_score("u", program, unit, exclude_in_process=False)) == (0.0, 1.0)


def test_malformed_harness_ground_truths_are_the_datasets_fault():
    with pytest.raises(ValueError, match="only test"):
        reward.compute_score("x", "x", {"tests": [{"kind": "harness", "code": "}"},
                                                  {"kind": "assert", "code": "assert 1"}], "language": "cpp"})
    with pytest.raises(ValueError, match="language"):
        reward.compute_score("x", "x", {**ROWS[LANGS[0]], "language": "go"})


def test_v1_judge_and_submit_agree_with_compute_score(server):
    items, want = [], []
    for lang in LANGS:
        for form, gt in (("row", ROWS[lang]), ("tests", factory_form(lang))):
            for kind, text in completions(lang).items():
                items.append({"id": f"{lang}/{form}/{kind}", "completion": text, "ground_truth": gt})
                want.append(EXPECTED[kind])
    for exclude, column in ((True, 0), (False, 1)):
        code, _, body = post(server.url + "/v1/judge", {"items": items, "exclude_in_process": exclude}, timeout=300)
        assert code == 200, body
        got = {r["id"]: r for r in body["items"]}
        for item, expected in zip(items, want):
            r = got[item["id"]]
            assert r["reward"] == expected[column], (item["id"], r)
            assert r["rows"] and all(row["judged_in_process"] for row in r["rows"]), item["id"]
    # the program as given (code): the candidate's part, the harness appended by the judge
    lang = LANGS[0]
    code, _, body = post(server.url + "/v1/judge", {"exclude_in_process": False, "items": [
        {"id": "given", "code": multipl_e.program(ROWS[lang], RIGHT[lang]), "ground_truth": ROWS[lang]}]})
    assert code == 200 and body["items"][0]["reward"] == 1.0, body
    # /submit with the factory form: accepted as /v1/judge judges it (its reward: the in-process rule)
    code, _, body = post(server.url + "/submit", {"dataset": "d", "id": "1", "completion": RIGHT[lang],
                                                  "config": {"language": lang, "provided_data": factory_form(lang)}})
    assert code == 200 and body["accepted"] is True and body["extra"]["reward"] == 0.0, body
    # a language MultiPL-E publishes but this verifier does not run: a 400 naming the field
    code, _, body = post(server.url + "/v1/judge", {"items": [
        {"id": "go", "completion": "x", "ground_truth": {**ROWS[lang], "language": "go"}}]})
    assert code == 400 and "ground_truth" in body.get("field", "") + str(body), body
