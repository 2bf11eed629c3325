"""The streamed Hub ingest's shortcuts (#50) give what the full rules give: real CodeContests tests
(../shared/data/codecontests_subset300) plus tests of ~20 KiB and one of 8 MiB, in deepmind/code_contests' layout,
ingested with hf-code-contests: every test's visibility is factory.ingest.visibility's verdict, every problem and test
id is stable_hash of its parts, bronze elides a long test by its own sha256, and the 8 MiB value comes back byte for byte.
"""
from __future__ import annotations

import hashlib
import json
import random

from factory.ingest.hub.ingest import ELIDE_CHARS
from factory.ingest.normalize import stable_hash
from factory.ingest.visibility import statement_text, visibility
from factory.stages.ingest import ingest_source
from tests.ingest_hub import hubfixtures as fx
from tests.lakeutil import init_lake, query

BIG = 8 << 20


def _rows(data, n: int = 60) -> list[dict]:
    base = fx.code_contests_rows()[0]
    rng = random.Random(5)
    path = data / "codecontests_subset300" / "codecontests_subset300.jsonl"
    rows = []
    for line in path.read_text().splitlines()[:n]:
        rec = json.loads(line)
        ins, outs = [t["input"] for t in rec["tests"]], [t["output"] for t in rec["tests"]]
        # variants the normalisation folds: upper case, extra whitespace, trailing zeros
        ins += [ins[0].upper() + "  \n", ins[0].replace(" ", "\t") + ".000"]
        outs += [outs[0] + " \n", outs[0].upper()]
        rows.append({**base, "name": rec["task_id"], "description": rec["description"],
                     "public_tests": {"input": ins[:1], "output": outs[:1]},
                     "private_tests": {"input": ins[1:], "output": outs[1:]},
                     "generated_tests": {"input": [], "output": []}})
    big = [" ".join(str(rng.randrange(10 ** 9)) for _ in range(c // 10)) for c in (20 << 10, 30 << 10)]
    big.append(("7 " * (BIG // 2))[:BIG])
    rows.append({**rows[0], "name": "big", "generated_tests": {"input": big, "output": ["1\n"] * 3}})
    return rows


def test_fast_paths_match_the_full_rules(tmp_path, shared_data):
    rows = _rows(shared_data)
    fx.write_parquet(tmp_path / "cc" / "data" / "train-00000-of-00001.parquet", rows, fx.CODE_CONTESTS_SCHEMA,
                     row_group_size=8)
    lake = init_lake(tmp_path / "lake")
    r = ingest_source("hf-code-contests", [tmp_path / "cc"], lake=lake)
    got = query(lake, "SELECT p.question, t.test_id, t.problem_id, t.ordinal, t.input, t.expected, t.visibility "
                      "FROM silver.tests t JOIN silver.problems p USING (problem_id)")
    assert r.tests == len(got) == sum(len(x[k]["input"]) for x in rows
                                      for k in ("public_tests", "private_tests", "generated_tests"))
    verdicts = [visibility(statement_text(q), "stdio", None, i, e) for q, *_, i, e, _ in got]
    assert [g[-1] for g in got] == verdicts
    assert 100 < verdicts.count("public") < len(got) - 100   # both verdicts are exercised
    assert all(tid == stable_hash(pid, o, "stdio", None, hashlib.sha256(i.encode()).hexdigest())
               for _, tid, pid, o, i, _, _ in got)
    sha = lambda text: hashlib.sha256(text.encode()).hexdigest()   # noqa: E731
    tests_of: dict = {}
    for _, _, pid, o, i, e, _ in sorted(got, key=lambda g: (g[2], g[3])):
        tests_of.setdefault(pid, []).append(("stdio", None, sha(i), sha(e)))
    problems = query(lake, "SELECT problem_id, source, source_id, question, starter_code FROM silver.problems")
    assert len(problems) == len(rows) and all(pid == stable_hash(*rest, tests_of[pid]) for pid, *rest in problems)
    big = [i for *_, i, _, _ in got if len(i) == BIG]
    assert [hashlib.sha256(i.encode()).hexdigest() for i in big] == \
        [hashlib.sha256(rows[-1]["generated_tests"]["input"][2].encode()).hexdigest()]
    payload = json.loads(query(lake, "SELECT payload FROM bronze.raw_records WHERE source_id = 'big'")[0][0])
    elided = payload["generated_tests"]["input"]
    assert [e["$elided"] for e in elided] == \
        ["sha256:" + hashlib.sha256(t.encode()).hexdigest() for t in rows[-1]["generated_tests"]["input"]]
    assert all(len(t) > ELIDE_CHARS for t in rows[-1]["generated_tests"]["input"])
