"""Test-level and lineage decontamination (beside the word n-gram overlap of :mod:`factory.dedup.decontam`).

A problem is contaminated by a benchmark item when

* **test**: they share tests - the same normalised (arguments, expected output) pair of an assert, a check, an
  EvalPlus call test or an stdin/stdout case (:func:`factory.ingest.visibility.fingerprints`: function
  names dropped, one literal style; also the first argument with the output, for a task whose extra arguments
  a derived benchmark dropped). A test matches only with its input AND its expected value: a benchmark test
  whose expected value is not computed yet (MBPP+ before `factory execute`) matches nothing - the same
  arguments ``(10, 20)`` are MBPP 458's rectangle *area* and MBPP 654's *perimeter*. A pair matches with
  ``min_shared`` shared informative tests, or one shared test of at least ``min_chars`` characters of
  arguments and output. A test is trivial, and never counts, when it is shorter than ``min_test_chars``
  (``f(2) == 0``, ``f(13) == false``) or when more than ``max_key_df`` benchmark items or more than
  ``max_family_df`` task families of the whole corpus have it.
* **lineage**: they descend from the same task (``metadata.lineage``: MBPP / sanitized MBPP / MBPP+ task id,
  HumanEval / HumanEval+ number, LeetCode slug - question ids are renumbered between LeetCodeDataset versions).
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass

from factory.ingest.visibility import fingerprints


@dataclass(frozen=True)
class TestOverlapParams:
    # measured on MBPP vs MBPP+ (bench/decontam_lineage.py): 2 / 24 -> recall 0.950, precision 0.940 (unrelated
    # tasks sharing a trivial assert); 3 / 40 -> 0.915 / 0.972, and with lineage 1.000 / 0.974
    min_shared: int = 3       # shared informative tests that make a match on their own
    min_chars: int = 40       # ... or one shared test this long (arguments + output, normalised)
    max_key_df: int = 3       # ignore a key shared by more benchmark items than this
    max_family_df: int = 4    # ignore a key held by more task families (problems and benchmarks) than this
    min_test_chars: int = 7   # a test with fewer characters of arguments + output is trivial: never counts
    first_argument: bool = False  # also match a test's first argument + expected value alone (io1 keys: a
                                  # derived task that dropped arguments; links unrelated multi-argument tasks)

    def as_dict(self) -> dict:
        return asdict(self)


def problem_keys(tests, with_inputs: bool = False) -> set[str]:
    """Fingerprints of a problem's tests (rows of kind, code, input, expected) that carry an expected value.
    Input-only keys (a test whose expected value is not known yet) are dropped: inputs alone link unrelated
    tasks. ``with_inputs`` keeps them (and adds an input-only key per input-output key) for measurements of
    that old rule only."""
    keys = set()
    for kind, code, inp, expected in tests:
        for key in fingerprints(kind, code, inp, expected):
            if key.startswith("in:") and not with_inputs:
                continue
            keys.add(key)
            if with_inputs and key.startswith("io:"):
                keys.add("in:" + key[3:].split("=>", 1)[0])
    return keys


def _weight(key: str) -> int:
    return len(key.split(":", 1)[1]) - 2   # the JSON list brackets of the arguments do not count


def _test_of(key: str) -> tuple:
    """What identifies one test among a problem's keys: its first argument and output (io, io1), its arguments (in)."""
    kind, body = key.split(":", 1)
    if kind == "in":
        return ("in", body)
    args, out = body.split("=>", 1)
    first = json.loads(args)[:1]
    return ("io", json.dumps(first), out)


def shared_test_overlap(problems: dict[str, set], benchmarks: dict[tuple[str, str], set],
                        params: TestOverlapParams = TestOverlapParams(),
                        families: dict[str, str] | None = None) -> list[dict]:
    """One row per (problem, benchmark item) that share an informative test: problem_id, benchmark,
    benchmark_id, matched (shared informative tests), example (the longest shared key), reason (a sentence).
    ``families`` maps problem ids and benchmark ids to a task lineage (missing: the id itself) for the corpus
    document frequency of a test (``max_family_df``)."""
    families = families or {}
    holders: dict[str, set] = defaultdict(set)
    index: dict[str, set] = defaultdict(set)
    for item, keys in benchmarks.items():
        for key in keys:
            index[key].add(item)
            holders[key].add(families.get(item[1]) or item[1])
    for pid, keys in problems.items():
        for key in keys:
            if key in index:
                holders[key].add(families.get(pid) or pid)
    index = {k: v for k, v in index.items() if len(v) <= params.max_key_df and _weight(k) >= params.min_test_chars
             and len(holders[k]) <= params.max_family_df and (params.first_argument or not k.startswith("io1:"))}
    rows = []
    for pid, keys in problems.items():
        hits: dict[tuple, list] = defaultdict(list)
        for key in keys:
            for item in index.get(key, ()):
                hits[item].append(key)
        for item, shared in hits.items():
            tests = {_test_of(k) for k in shared}   # one test shares its io and io1 keys: counted once
            best = max(shared, key=_weight)
            if len(tests) >= params.min_shared or _weight(best) >= params.min_chars:
                rows.append({"problem_id": pid, "benchmark": item[0], "benchmark_id": item[1],
                             "matched": len(tests), "example": best[:300],
                             "reason": f"shares {len(tests)} test(s), input and expected value, with the benchmark "
                                       f"item (informative: >= {params.min_test_chars} characters, held by <= "
                                       f"{params.max_family_df} tasks), e.g. {_show(best)}"})
    return rows


def _show(key: str) -> str:
    """A key as a person reads it: ``f(args) == expected``."""
    kind, body = key.split(":", 1)
    if kind == "in":
        return f"f({body[1:-1][:200]})"
    args, out = body.split("=>", 1)
    return f"f({args[1:-1][:200]}{', ...' if kind == 'io1' else ''}) == {out[:100]}"


def lineage_overlap(problems: dict[str, str], benchmarks: dict[tuple[str, str], str]) -> list[dict]:
    """One row per (problem, benchmark item) with the same lineage id."""
    by_lineage: dict[str, list] = defaultdict(list)
    for item, lineage in benchmarks.items():
        by_lineage[lineage].append(item)
    return [{"problem_id": pid, "benchmark": item[0], "benchmark_id": item[1], "matched": 1, "example": lineage,
             "reason": f"same task as the benchmark item: lineage {lineage} (task id shared across the datasets "
                       f"derived from one benchmark)"}
            for pid, lineage in problems.items() for item in by_lineage.get(lineage, ())]
