"""`factory execute` computes the missing expected values of call tests only for the problems it will run a
program of: executing one MBPP+ reference must not first run the references of every other MBPP+ problem (a
recipe test waited 41,124 reference runs for 12 programs, #43)."""
from __future__ import annotations

import gzip

from factory.sandbox import Limits
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

ROWS = 6


def test_expected_values_are_filled_for_the_selected_programs_problems_only(tmp_path, shared_data):
    plus = tmp_path / "mbppplus" / "MbppPlus.jsonl.gz"
    plus.parent.mkdir()
    with gzip.open(shared_data / "mbppplus" / "MbppPlus.jsonl.gz", "rt") as src, gzip.open(plus, "wt") as dst:
        dst.writelines(line for _, line in zip(range(ROWS), src))
    lake = init_lake(tmp_path / "lake")
    ingest_source("mbppplus", [plus.parent], lake=lake)
    missing = "SELECT count(DISTINCT problem_id) FROM silver.tests WHERE kind = 'call' AND expected IS NULL"
    assert q(lake, missing)[0][0] == ROWS   # MBPP+'s plus inputs come without outputs
    first, second = [r[0] for r in q(lake, "SELECT program_id FROM silver.programs WHERE origin = 'reference' "
                                           "ORDER BY problem_id LIMIT 2")]
    report = execute(lake, program_ids=[first], limits=Limits(cpu_s=5))
    assert report.programs == 1 and report.expected_filled > 0
    filled = q(lake, "SELECT DISTINCT problem_id FROM silver.tests WHERE kind = 'call' AND expected IS NOT NULL "
                     "AND problem_id NOT IN (SELECT problem_id FROM silver.tests WHERE kind = 'call' "
                     "AND expected IS NULL)")
    own = q(lake, "SELECT problem_id FROM silver.programs WHERE program_id = ?", [first])[0][0]
    assert [r[0] for r in filled] == [own]
    assert q(lake, missing)[0][0] == ROWS - 1
    # the next program's problem is filled when it runs; the verdicts are judged against those values
    execute(lake, program_ids=[second], limits=Limits(cpu_s=5))
    assert q(lake, missing)[0][0] == ROWS - 2
    assert q(lake, "SELECT bool_and(status = 'pass'), count(*) > 0 FROM silver.executions") == [(True, True)]
