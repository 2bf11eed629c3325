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

import hashlib
import json
from collections import defaultdict
from dataclasses import asdict, dataclass

from factory.ingest.visibility import fingerprints


@dataclass(frozen=True)
class TestOverlapParams:
    min_shared: int = 3       # shared informative tests that make a match on their own
    min_chars: int = 40       # ... or one shared test this long (arguments + output, normalised)
    max_key_df: int = 3       # ignore a key shared by more benchmark items than this
    max_family_df: int = 4    # ignore a key held by more task families (problems and benchmarks) than this
    min_test_chars: int = 7   # a test with fewer characters of arguments + output is trivial: never counts
    first_argument: bool = False  # also match a test's first argument + expected value alone (io1 keys: a
                                  # derived task that dropped arguments; links unrelated multi-argument tasks)

    def as_dict(self) -> dict:
        return asdict(self)


def problem_keys(tests, with_inputs: bool = False, info: dict | None = None) -> set[str]:
    """Fingerprints of a problem's tests (rows of kind, code, input, expected) that carry an expected value:
    input-only keys (a test whose expected value is not known yet) link unrelated tasks, so they are dropped unless
    ``with_inputs`` (which also adds an input-only key per input-output key). ``info`` (a dict): keys longer than
    :data:`LONG_KEY` characters are replaced by a digest key (:func:`compact_key`) and what the overlap needs of
    them goes into ``info``, so a caller can hold the keys of a whole corpus."""
    return set().union(*(test_keys(kind, code, inp, expected, with_inputs, info)
                         for kind, code, inp, expected in tests))


def test_keys(kind, code, inp, expected, with_inputs: bool = False, info: dict | None = None) -> set[str]:
    """The keys of one test (see :func:`problem_keys`)."""
    keys = [k for k in fingerprints(kind, code, inp, expected) if with_inputs or not k.startswith("in:")]
    if with_inputs:
        keys += ["in:" + k[3:].split("=>", 1)[0] for k in keys if k.startswith("io:")]
    return {compact_key(k, info) if info is not None else k for k in keys}


LONG_KEY = 512   # characters: a longer key is kept as its sha256 (a test with a large input or output)


def compact_key(key: str, info: dict) -> str:
    """``key`` itself when short, else ``<kind>:#<sha256>`` (never a real key: their bodies start with ``[``),
    with its weight, test identity, example and display text recorded in ``info``. Equal keys give equal
    compact keys, so overlap counts are the same as on the full keys."""
    if len(key) <= LONG_KEY:
        return key
    short = key.split(":", 1)[0] + ":#" + hashlib.sha256(key.encode()).hexdigest()
    if short not in info:
        info[short] = (_weight(key), _test_id(key), key[:300], _show(key), key_tails(key))
    return short


TAIL = 64   # characters of a key's end kept to recognise its expected output


def key_tails(key: str) -> tuple[str, ...]:
    """What a key may end with: each ``=>...`` suffix up to :data:`TAIL` characters, and its last TAIL characters.
    A test whose key ends ``=>`` + its output is a candidate for ``key`` only when ``output_tail(output)`` is
    among these (a stdio test's output is known before its input is normalised)."""
    end = key[-TAIL:]
    return (end, *(end[i:] for i in range(len(end)) if end.startswith("=>", i)))


def output_tail(output: str) -> str:
    """The end of every key of a test with this (normalised) expected output (see :func:`key_tails`)."""
    return ("=>" + output)[-TAIL:]


def _test_id(key: str) -> tuple:
    """:func:`_test_of`, as a digest when long (the same rule for every key, so equal tests stay equal)."""
    test = _test_of(key)
    return test if sum(map(len, test)) <= LONG_KEY else ("#", hashlib.sha256(json.dumps(test).encode()).hexdigest())


def _weight(key: str) -> int:
    return len(key.split(":", 1)[1]) - 2   # the JSON list brackets of the arguments do not count


def _test_of(key: str) -> tuple:
    """What identifies one test among a problem's keys: its first argument and output (io, io1), its arguments (in)."""
    kind, body = key.split(":", 1)
    if kind == "in":
        return ("in", body)
    args, out = body.split("=>", 1)
    return ("io", json.dumps(json.loads(args)[:1]), out)


def shared_test_overlap(problems: dict[str, set], benchmarks: dict[tuple[str, str], set],
                        params: TestOverlapParams = TestOverlapParams(),
                        families: dict[str, str] | None = None, info: dict | None = None) -> list[dict]:
    """One row per (problem, benchmark item) that share an informative test: problem_id, benchmark, benchmark_id,
    matched (shared informative tests), example (the longest shared key), reason (a sentence). ``families`` maps
    problem ids and benchmark ids to a task lineage (missing: the id itself) for the corpus document frequency of a
    test (``max_family_df``). ``info``: what :func:`compact_key` recorded for the digest keys among them."""
    families = families or {}
    info = info or {}
    weight = lambda k: info[k][0] if k in info else _weight(k)
    test_of = lambda k: info[k][1] if k in info else _test_id(k)
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
    index = {k: v for k, v in index.items() if len(v) <= params.max_key_df and weight(k) >= params.min_test_chars
             and len(holders[k]) <= params.max_family_df and (params.first_argument or not k.startswith("io1:"))}
    rows = []
    for pid, keys in problems.items():
        hits: dict[tuple, list] = defaultdict(list)
        for key in keys:
            for item in index.get(key, ()):
                hits[item].append(key)
        for item, shared in hits.items():
            tests = {test_of(k) for k in shared}   # one test shares its io and io1 keys: counted once
            best = max(shared, key=weight)
            if len(tests) >= params.min_shared or weight(best) >= params.min_chars:
                example, shown = (info[best][2], info[best][3]) if best in info else (best[:300], _show(best))
                rows.append({"problem_id": pid, "benchmark": item[0], "benchmark_id": item[1],
                             "matched": len(tests), "example": example,
                             "reason": f"shares {len(tests)} test(s), input and expected value, with the benchmark "
                                       f"item (informative: >= {params.min_test_chars} characters, held by <= "
                                       f"{params.max_family_df} tasks), e.g. {shown}"})
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
