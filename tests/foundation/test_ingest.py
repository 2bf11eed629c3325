"""Ingestion of the real shared datasets: counts, formats, idempotence, replacement."""
from __future__ import annotations

import gzip
import json

import pytest

from factory.errors import FactoryError, InputError
from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake, snapshot_id
from tests.lakeutil import query as q

from .conftest import EXPECTED_PROBLEMS, EXPECTED_RAW


def test_problem_counts_per_source(full_lake):
    counts = dict(q(full_lake, "SELECT source, count(*) FROM silver.problems GROUP BY source"))
    assert counts == EXPECTED_PROBLEMS
    raw = dict(q(full_lake, "SELECT source, count(*) FROM bronze.raw_records GROUP BY source"))
    assert raw == EXPECTED_RAW


def test_every_problem_has_tests_and_formats_are_known(full_lake):
    assert q(full_lake, "SELECT count(*) FROM silver.problems p WHERE NOT EXISTS "
                        "(SELECT 1 FROM silver.tests t WHERE t.problem_id = p.problem_id)") == [(0,)]
    formats = dict(q(full_lake, "SELECT source, string_agg(DISTINCT test_format, ',') FROM silver.problems "
                                "GROUP BY source"))
    assert formats["codecontests"] == "stdio" and formats["kodcode"] == "pytest"
    assert formats["humanevalplus"] == "call" and formats["bigcodebench"] == "unittest"
    assert set(formats["apps"].split(",")) == {"call", "stdio"}
    # LeetCode v0.3.1 checks hold ~100 asserts each: split into one test per assert
    per_problem = q(full_lake, "SELECT avg(n) FROM (SELECT count(*) n FROM silver.tests JOIN silver.problems "
                               "USING (problem_id) WHERE source = 'leetcode-v0.3.1-test' GROUP BY problem_id)")
    assert per_problem[0][0] > 90


def test_references_and_lineage(full_lake):
    refs = dict(q(full_lake, "SELECT source, count(*) FROM silver.programs JOIN silver.problems USING (problem_id) "
                             "WHERE origin = 'reference' GROUP BY source"))
    for source, n in EXPECTED_PROBLEMS.items():
        assert refs.get(source, 0) == (0 if source == "apps" else n), source
    # every row carries the run that wrote it, and that run is recorded as successful
    orphans = q(full_lake, "SELECT count(*) FROM silver.problems p LEFT JOIN ops.runs r USING (run_id) "
                           "WHERE r.status IS DISTINCT FROM 'success'")
    assert orphans == [(0,)]


def test_evalplus_inputs_await_expected_outputs(full_lake, shared_data):
    rows = q(full_lake, "SELECT subset, count(*), count(expected) FROM silver.tests JOIN silver.problems "
                        "USING (problem_id) WHERE source = 'humanevalplus' GROUP BY subset ORDER BY subset")
    assert [r[0] for r in rows] == ["base", "plus"]
    assert all(r[2] == 0 for r in rows)  # computed later by running the canonical solution
    base = sum(len(json.loads(line)["base_input"]) for line in
               gzip.open(shared_data / "humanevalplus" / "HumanEvalPlus.jsonl.gz", "rt"))
    assert rows[0][1] == base


def test_reingest_is_noop_and_changed_file_replaces(tmp_path, empty_lake, shared_data):
    src = shared_data / "mbpp" / "mbpp.jsonl"
    first = ingest_source("mbpp", [src], lake=empty_lake)
    assert first.status == "ingested" and first.problems == 974
    snap = snapshot_id(empty_lake)
    again = ingest_source("mbpp", [src], lake=empty_lake)
    assert again.status == "unchanged" and snapshot_id(empty_lake) == snap

    lines = src.read_text().splitlines()
    edited = json.loads(lines[0])
    edited["text"] = "An edited question."
    changed = tmp_path / "mbpp.jsonl"
    changed.write_text("\n".join([json.dumps(edited)] + lines[1:100]) + "\n")
    # other contents under the same source: refused (nothing written) unless replacing is asked for
    with pytest.raises(FactoryError, match=r"already holds 974 problems.*--replace"):
        ingest_source("mbpp", [changed], lake=empty_lake)
    assert snapshot_id(empty_lake) == snap
    result = ingest_source("mbpp", [changed], lake=empty_lake, replace=True)
    assert result.status == "replaced"
    assert q(empty_lake, "SELECT count(*) FROM silver.problems WHERE source='mbpp'") == [(100,)]
    assert q(empty_lake, "SELECT count(*) FROM bronze.raw_records WHERE source='mbpp'") == [(100,)]
    assert q(empty_lake, "SELECT question FROM silver.problems WHERE source='mbpp' AND source_id='1'") == \
        [("An edited question.",)]
    # programs of removed problems went with them
    assert q(empty_lake, "SELECT count(*) FROM silver.programs") == [(100,)]


def test_problem_ids_are_stable_content_hashes(tmp_path, shared_data):
    ids = []
    for name in ("a", "b"):
        lake = init_lake(tmp_path / name)
        ingest_source("humaneval", [shared_data / "humaneval" / "HumanEval.jsonl.gz"], lake=lake)
        ids.append(q(lake, "SELECT problem_id, test_id FROM silver.tests ORDER BY ALL"))
    assert ids[0] == ids[1] and len(ids[0]) > 164


def test_humaneval_defaults_to_the_wheel(empty_lake):
    result = ingest_source("humaneval", None, lake=empty_lake)
    assert result.problems == 164


def test_generic_formats(tmp_path, empty_lake):
    """AceCode rows (samples with pass rates), verl parquet and a mapped JSONL."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ace = tmp_path / "acecode.jsonl"
    ace.write_text(json.dumps({
        "id": "oss_1", "source": "oss", "question": "Write add(a, b).",
        "test_cases": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"],
        "inferences": [{"model_name": "m1", "completion_id": 0, "completion": "def add(a, b):\n    return a + b",
                        "pass_rate": 1.0},
                       {"model_name": "m1", "completion_id": 1, "completion": "def add(a, b):\n    return a - b",
                        "pass_rate": 0.5}]}) + "\n")
    r = ingest_source("acecode", [ace], lake=empty_lake)
    assert (r.problems, r.tests, r.programs) == (1, 2, 2)
    assert q(empty_lake, "SELECT origin, model, reported_pass_rate FROM silver.programs ORDER BY sample_index") == \
        [("sample", "m1", 1.0), ("sample", "m1", 0.5)]

    verl = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist([{
        "data_source": "codecontests", "ability": "code",
        "prompt": [{"role": "user", "content": "Read n, print n+1."}],
        "reward_model": {"style": "rule", "ground_truth": json.dumps({"inputs": ["1\n", "5\n"],
                                                                      "outputs": ["2\n", "6\n"]})},
        "extra_info": {"index": 7}}]), verl)
    r = ingest_source("verl", [verl], lake=empty_lake)
    assert (r.problems, r.tests) == (1, 2)
    assert q(empty_lake, "SELECT kind, input, expected FROM silver.tests JOIN silver.problems USING (problem_id) "
                         "WHERE source='verl' ORDER BY ordinal") == [("stdio", "1\n", "2\n"), ("stdio", "5\n", "6\n")]

    plain = tmp_path / "mine.jsonl"
    plain.write_text(json.dumps({"key": "p1", "prompt": "Return x squared.", "asserts": ["assert sq(3) == 9"],
                                 "sol": "def sq(x):\n    return x * x"}) + "\n")
    r = ingest_source("jsonl", [plain], lake=empty_lake, source="mine",
                      mapping={"id": "key", "question": "prompt", "tests": "asserts", "solution": "sol"},
                      test_format="assert")
    assert (r.problems, r.tests, r.programs) == (1, 1, 1)


def test_user_files_get_their_own_source_and_mapping_errors_list_what_exists(tmp_path, empty_lake):
    rows = [{"pid": "a1", "text": "Add two numbers.", "checks": ["assert add(1, 2) == 3"],
             "code": "def add(a, b):\n    return a + b\n"}]
    for name in ("first.jsonl", "second.jsonl"):
        (tmp_path / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    mapping = {"id": "pid", "question": "text", "tests": "checks", "solution": "code"}
    a = ingest_source("jsonl", [tmp_path / "first.jsonl"], lake=empty_lake, mapping=mapping)
    b = ingest_source("jsonl", [tmp_path / "second.jsonl"], lake=empty_lake, mapping=mapping)
    assert (a.source, b.source) == ("first", "second") and a.programs == b.programs == 1
    assert q(empty_lake, "SELECT source, count(*) FROM silver.problems GROUP BY 1 ORDER BY 1") == \
        [("first", 1), ("second", 1)]
    snap = snapshot_id(empty_lake)
    # a misspelled mapping target is an error listing the fields there are
    with pytest.raises(FactoryError, match=r"unknown field\(s\) \['sollution'\].*solution"):
        ingest_source("jsonl", [tmp_path / "first.jsonl"], lake=empty_lake, source="third",
                      mapping={"id": "pid", "question": "text", "tests": "checks", "sollution": "code"})
    # a mapped column the file lacks: the error names the file, line, column and the columns that exist
    with pytest.raises(InputError, match=r"first.jsonl:1: column 'question_text'.*its columns: checks, code, pid, text"):
        ingest_source("jsonl", [tmp_path / "first.jsonl"], lake=empty_lake, source="third",
                      mapping={**mapping, "question": "question_text"})
    assert snapshot_id(empty_lake) == snap
