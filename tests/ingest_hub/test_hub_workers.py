"""A multi-row-group Parquet file converted by worker processes gives the rows, counts and errors that one process
gives: real CodeContests problems (../shared/data/codecontests_subset300), with exact copies of earlier records and
problems without tests spread over several parts."""
from __future__ import annotations

import json
import multiprocessing

import pytest

from factory.errors import InputError
from factory.ingest.hub import ingest as hub
from tests.ingest_hub import hubfixtures as fx
from tests.lakeutil import init_lake, query

TABLES = ("bronze.raw_records", "silver.problems", "silver.tests", "silver.programs")
CONVERT_PART = hub._convert_part


def _in_a_worker(*args):
    assert multiprocessing.parent_process() is not None, "a part was converted in the ingest's process"
    return CONVERT_PART(*args)


def _rows(data, n: int = 80) -> list[dict]:
    base = fx.code_contests_rows()
    path = data / "codecontests_subset300" / "codecontests_subset300.jsonl"
    rows = []
    for k, line in enumerate(path.read_text().splitlines()[:n]):
        rec = json.loads(line)
        ins, outs = [t["input"] for t in rec["tests"]], [t["output"] for t in rec["tests"]]
        rows.append({**base[k % 2], "name": rec["task_id"], "description": rec["description"],
                     "public_tests": {"input": ins[:1], "output": outs[:1]},
                     "private_tests": {"input": ins[1:], "output": outs[1:]}})
        if k % 17 == 5:
            rows.append(rows[k // 2])   # an exact copy of an earlier record, maybe in an earlier part
        if k % 23 == 7:
            rows.append(base[2])        # no tests: bronze only
    return rows


def _tables(lake) -> dict:
    out = {}
    for t in TABLES:
        cols = [r[0] for r in query(lake, f"DESCRIBE {t}") if r[0] not in ("run_id", "ingested_at", "created_at")]
        out[t] = sorted(query(lake, f"SELECT {', '.join(cols)} FROM {t}"), key=repr)
    return out


def _ingest(tmp_path, name, rows, workers):
    folder = tmp_path / name
    fx.write_parquet(folder / "data" / "train-00000-of-00001.parquet", rows, fx.CODE_CONTESTS_SCHEMA,
                     row_group_size=4)
    lake = init_lake(tmp_path / f"lake-{name}")
    return lake, hub.ingest_hub("hf-code-contests", [folder], lake=lake, workers=workers)


def test_workers_give_the_rows_of_one_process(tmp_path, shared_data, monkeypatch):
    monkeypatch.setattr(hub, "TASK_BYTES", 16 << 10)   # many parts of a few row groups each
    rows = _rows(shared_data)
    path = fx.write_parquet(tmp_path / "probe.parquet", rows, fx.CODE_CONTESTS_SCHEMA, row_group_size=4)
    assert len(hub._parts(path)) >= 4
    one_lake, one = _ingest(tmp_path, "one", rows, workers=0)
    monkeypatch.setattr(hub, "_convert_part", _in_a_worker)
    monkeypatch.setattr(hub, "iter_records", None)   # no file is read in the ingest's process either
    two_lake, two = _ingest(tmp_path, "two", rows, workers=2)
    assert one.duplicates == two.duplicates > 2 and one.records_skipped == two.records_skipped != {}
    assert (one.problems, one.tests, one.programs, one.raw_records, one.file_splits) == \
        (two.problems, two.tests, two.programs, two.raw_records, two.file_splits)
    assert one.raw_records == len(rows) and one.problems == len({r["name"] for r in rows if r["public_tests"]["input"]})
    assert _tables(one_lake) == _tables(two_lake)


def test_an_error_in_a_worker_part_is_located_and_nothing_is_written(tmp_path, shared_data, monkeypatch):
    monkeypatch.setattr(hub, "TASK_BYTES", 16 << 10)
    rows = _rows(shared_data)
    bad = len(rows) - 3   # in the last part
    rows[bad] = {**rows[bad], "private_tests": {"input": ["1\n", "2\n"], "output": ["1\n"]}}
    errors = []
    for workers in (0, 2):
        with pytest.raises(InputError) as err:
            _ingest(tmp_path, f"bad{workers}", rows, workers)
        errors.append(str(err.value).split("train-00000-of-00001.parquet")[-1])
        lake = tmp_path / f"lake-bad{workers}"
        assert [query(lake, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES] == [0, 0, 0, 0]
        assert not list(lake.rglob("hub-*.parquet"))   # no data file of the failed run is left
    assert errors[0] == errors[1] == f":{bad + 1}: expected a struct of equal-length 'input' and 'output' lists " \
                                     "(field 'private_tests')"
