"""One item's ground truth, read once: the typed value the reward (``factory.reward``), the judge (``factory
serve``) and the export's row check take. Its JSON forms and keys: the ``factory.reward`` docstring and
:func:`factory.release.prompts.ground_truth`; a final-answer one (:mod:`factory.answers`) carries no tests."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from factory.answers.checks import is_answer_ground_truth
from factory.sandbox import TestSpec, languages, multipl_e

REWARD_KINDS = ("binary", "soft")


@dataclass(frozen=True)
class GroundTruth:
    data: dict                         # the decoded object
    tests: list[TestSpec] = field(default_factory=list)
    entry_point: str | None = None
    preamble: str = ""
    language: str = languages.PYTHON   # canonical: the language the completion is judged in
    harness: dict | None = None        # the MultiPL-E row of a harness ground truth (multipl_e.harness_row)
    reward: dict | None = None         # the validated reward spec; None: soft
    cpu_s: float | None = None         # the calibrated CPU limit, when sane
    answer: bool = False               # a final-answer ground truth (no tests)

    @classmethod
    def parse(cls, raw) -> GroundTruth:
        """The ground truth of a dict or its JSON string (a GroundTruth as it is). A malformed one is the
        dataset's fault: ValueError (an unknown language or reward kind too), KeyError, TypeError, AttributeError."""
        if isinstance(raw, GroundTruth):
            return raw
        data = json.loads(raw) if isinstance(raw, str) else raw
        if is_answer_ground_truth(data):
            return cls(data, answer=True)
        tests, entry, preamble = tests_of(data)
        spec = reward_spec(data)
        harness = multipl_e.harness_row(data)
        lang = multipl_e.language_of(harness) if harness is not None else languages.normalize(data.get("language"))
        return cls(data, tests, entry, preamble, lang, harness, spec, cpu_limit(data.get("cpu_s")))

    def is_binary(self, binary: bool | None = None) -> bool:
        """Whether the item scores 1.0/0.0 (all tests pass), not the fraction passed: the caller's ``binary``, else
        the reward spec, else soft."""
        return bool(binary) if binary is not None else self.reward is not None and self.reward["kind"] == "binary"


def reward_spec(gt) -> dict | None:
    """A ground-truth dict's reward spec (``{"kind": "binary"|"soft", "tests": ...}``), or None when it carries
    none. A spec of another shape is the dataset's fault: ValueError."""
    spec = gt.get("reward")
    if spec is not None and (not isinstance(spec, dict) or spec.get("kind") not in REWARD_KINDS):
        raise ValueError(f"ground truth 'reward' must be {{\"kind\": one of {list(REWARD_KINDS)}, ...}}, got {spec!r}")
    return spec


def cpu_limit(value) -> float | None:
    """A calibrated CPU limit (``cpu_s``) when it is a sane number of seconds (0 < s <= 600), else None."""
    sane = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 600
    return float(value) if sane else None


def tests_of(gt: dict) -> tuple[list[TestSpec], str | None, str]:
    """(tests, entry_point, preamble) of a ground-truth dict."""
    if multipl_e.is_row(gt):   # a MultiPL-E row: its harness, compiled with the candidate (kind harness)
        tests, entry, preamble = [TestSpec("tests", "harness", code=gt["tests"])], None, ""
    elif "tests" in gt:
        tests = [TestSpec(test_id=t.get("test_id") or str(i), kind=t["kind"], code=t.get("code"), input=t.get("input"),
                          expected=t.get("expected"), comparison=t.get("comparison") or "exact", atol=t.get("atol"),
                          rtol=t.get("rtol"))
                 for i, t in enumerate(gt["tests"])]
        entry, preamble = gt.get("entry_point"), gt.get("test_preamble") or ""
    else:
        inputs, outputs = gt["inputs"], gt["outputs"]
        atol, rtol = gt.get("atol"), gt.get("rtol")
        if gt.get("fn_name"):
            # SandboxFusion's string form is read only where the arguments are in it: a string expected value of
            # the factory's own export ("123" returned as a str) stays a string
            tests = [TestSpec(str(i), "call", input=json.dumps(_call_args(a)),
                              expected=json.dumps(_call_value(o) if isinstance(a, str) else o), atol=atol, rtol=rtol)
                     for i, (a, o) in enumerate(zip(inputs, outputs))]
            entry, preamble = gt["fn_name"], gt.get("test_preamble") or ""   # LeetCode: its imports/helpers
        else:
            comparison = gt.get("comparison") or "token"
            tests = [TestSpec(str(i), "stdio", input=a, expected=o, comparison=comparison, atol=atol, rtol=rtol)
                     for i, (a, o) in enumerate(zip(inputs, outputs))]
            entry, preamble = None, ""
    if isinstance(gt.get("checker"), str) and gt["checker"].strip():
        apply_checker(tests, gt["checker"])
    return tests, entry, preamble


def _call_args(a) -> list:
    """Positional arguments of a call test: a JSON list (the factory's export, APPS/TACO), or the SandboxFusion
    convention verl's client sends on stdin - a string with one JSON value per line."""
    return [json.loads(line) for line in a.split("\n") if line.strip()] if isinstance(a, str) else a


def _call_value(o):
    """Expected value of a call test; a string in SandboxFusion's convention is what the wrapper prints
    (JSON for containers/bools/None, else str()), read back as JSON where it is JSON."""
    if isinstance(o, str):
        try:
            return json.loads(o)
        except ValueError:
            return o.rstrip("\n")
    return o


def apply_checker(tests: list[TestSpec], checker: str) -> None:
    """A problem's checker program judges its tests that have outputs to compare (stdio and call)."""
    for t in tests:
        if t.kind in ("stdio", "call"):
            t.checker = checker
