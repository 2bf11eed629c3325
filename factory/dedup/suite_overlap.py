"""Test-level and lineage decontamination (beside the word n-gram overlap of :mod:`factory.dedup.decontam`).

A problem is contaminated by a benchmark item when

* **test**: they share tests - the same normalised (arguments, expected output) pair of an assert, a check, an
  EvalPlus call test or an stdin/stdout case (:func:`factory.ingest.visibility.fingerprints`: function
  names dropped, one literal style; also the first argument with the output, for a task whose extra arguments
  a derived benchmark dropped), or, where the benchmark's expected values are not computed yet, the same
  argument tuples. A pair matches with ``min_shared`` shared tests, or one shared test that is informative
  (at least ``min_chars`` characters of arguments and output: ``f(1) == 1`` links nothing). Keys shared by
  more than ``max_key_df`` benchmark items are ignored.
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
    min_shared: int = 3       # shared tests that make a match on their own
    min_chars: int = 40       # ... or one shared test this long (arguments + output, normalised)
    max_key_df: int = 3       # ignore a key shared by more benchmark items than this

    def as_dict(self) -> dict:
        return asdict(self)


def problem_keys(tests, with_inputs: bool = True) -> set[str]:
    """Fingerprints of a problem's tests: rows of (kind, code, input, expected). With ``with_inputs`` (the
    problems checked) an input-output key also yields its input-only key, which matches a benchmark test whose
    expected value is not known yet (``in:`` keys of a benchmark come only from such tests)."""
    keys = set()
    for kind, code, inp, expected in tests:
        for key in fingerprints(kind, code, inp, expected):
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
                 params: TestOverlapParams = TestOverlapParams()) -> list[dict]:
    """One row per (problem, benchmark item) that share tests: problem_id, benchmark, benchmark_id,
    matched (shared tests), example (the longest shared key)."""
    index: dict[str, set] = defaultdict(set)
    for item, keys in benchmarks.items():
        for key in keys:
            index[key].add(item)
    index = {k: v for k, v in index.items() if len(v) <= params.max_key_df}
    rows = []
    for pid, keys in problems.items():
        hits: dict[tuple, list] = defaultdict(list)
        for key in keys:
            for item in index.get(key, ()):
                hits[item].append(key)
        for item, shared in hits.items():
            tests = {_test_of(k) for k in shared}   # one test shares its io, io1 and in keys: counted once
            best = max(shared, key=_weight)
            if len(tests) >= params.min_shared or _weight(best) >= params.min_chars:
                rows.append({"problem_id": pid, "benchmark": item[0], "benchmark_id": item[1],
                             "matched": len(tests), "example": best[:300]})
    return rows


def lineage_overlap(problems: dict[str, str], benchmarks: dict[tuple[str, str], str]) -> list[dict]:
    """One row per (problem, benchmark item) with the same lineage id."""
    by_lineage: dict[str, list] = defaultdict(list)
    for item, lineage in benchmarks.items():
        by_lineage[lineage].append(item)
    return [{"problem_id": pid, "benchmark": item[0], "benchmark_id": item[1], "matched": 1, "example": lineage}
            for pid, lineage in problems.items() for item in by_lineage.get(lineage, ())]
