"""gold.rl_problems packed in hash partitions (#41 goal 3): the same rows as one statement.

The ordered ``string_agg`` that packs a problem's tests into JSON keeps every usable test's JSON in its states, so
one statement over DeepCoder-sized tests holds them all (4.3 GB peak for 0.94 GB of inputs at 1/32 of
DeepCoder-Preview, 12.6 GB at 1/8). On a lake whose tests pass ``PARTITION_BYTES`` of text, curate packs the
problems in ``hash(problem_id) % K`` parts, the filter placed before the aggregate (1.4 GB peak at 1/32 with 5
parts). Here the lake of test_curate_bounded (HumanEval+ / MBPP+ problems with the largest computed expected
outputs, ~31 MB of test content) is curated once in one statement and once in parts, and the tables compared.
"""
from __future__ import annotations

from factory.lake import connect
from factory.stages import curate as curate_stage
from tests.lakeutil import query as q
from tests.pipeline.test_curate_bounded import lake  # noqa: F401  (the fixture: real data, executed references)


def test_partitioned_rl_problems_are_the_one_statement_rows(lake, monkeypatch):  # noqa: F811
    lake, content = lake
    one = curate_stage.curate(lake)
    rows = q(lake, "SELECT * FROM gold.rl_problems ORDER BY problem_id")
    assert one["gold.rl_problems"] == len(rows) == 9
    monkeypatch.setattr(curate_stage, "PARTITION_BYTES", 1 << 20)
    con = connect(lake, read_only=True)
    try:
        parts = curate_stage.rl_partitions(con)
    finally:
        con.close()
    assert parts >= 4, parts   # ~31 MB of test content in 1 MB parts (estimated from the file sizes)
    calls = []
    real = curate_stage.materialize_rl_problems
    monkeypatch.setattr(curate_stage, "materialize_rl_problems",
                        lambda run, params, k: (calls.append(k), real(run, params, k)))
    again = curate_stage.curate(lake)
    assert calls == [parts]
    assert again == one and again.funnel == one.funnel
    assert q(lake, "SELECT * FROM gold.rl_problems ORDER BY problem_id") == rows
    # the tables curate writes after gold.rl_problems read it as before
    assert q(lake, "SELECT source, split, rl_rows FROM gold.test_leakage ORDER BY 1") == \
        [("humanevalplus", "test", 6), ("mbppplus", "test", 3)]
