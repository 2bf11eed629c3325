"""factory.release.prompts.truth_json: the exported ground truth text reads back as the ground truth, whichever
writer (orjson, or json for what orjson cannot write exactly) produced it."""
from __future__ import annotations

import json
import math

import pytest

from factory.release.prompts import truth_json


@pytest.mark.parametrize("gt, writer", [
    ({"inputs": ["1 2\n", "é ü \u2028 \x00\x1f \"q\" \\ \t"], "outputs": ["3\n", "x"], "reward": {"kind": "binary"}},
     "orjson"),
    ({"inputs": [[1, 2.5, None, True]], "outputs": [{"b": [1e-05, -0.0]}], "fn_name": "f", "atol": 1e-9}, "orjson"),
    ({"inputs": [[2 ** 70]], "outputs": [-(2 ** 100)], "fn_name": "big"}, "json"),   # beyond 64 bits
    ({"inputs": [["\ud800"]], "outputs": ["x"], "fn_name": "s"}, "json"),            # a lone surrogate: escaped
])
def test_the_text_reads_back_as_the_truth(gt, writer):
    text = truth_json(gt)
    assert isinstance(text, str) and json.loads(text) == gt
    raw = truth_json(gt, utf8=True)   # orjson's bytes where it wrote the truth, else the same text
    assert isinstance(raw, bytes if writer == "orjson" else str) and json.loads(raw) == gt


def test_a_nan_or_infinity_is_not_written_as_null():
    """orjson writes NaN as null (a different expected value); such a truth goes through json (NaN / Infinity,
    which Python's json.loads and the reward read back as floats)."""
    gt = {"inputs": [[1]], "outputs": [float("nan"), float("inf"), [float("-inf")]], "fn_name": "f"}
    back = json.loads(truth_json(gt))
    assert math.isnan(back["outputs"][0]) and back["outputs"][1] == math.inf and back["outputs"][2] == [-math.inf]


def test_keys_are_sorted_so_equal_truths_give_equal_text():
    a = {"outputs": ["1"], "inputs": ["x"], "reward": {"tests": "hidden", "kind": "soft"}}
    b = {"reward": {"kind": "soft", "tests": "hidden"}, "inputs": ["x"], "outputs": ["1"]}
    assert truth_json(a) == truth_json(b) == '{"inputs":["x"],"outputs":["1"],"reward":{"kind":"soft","tests":"hidden"}}'
