"""`factory sample` with a real (tiny, random-init) transformers model: ledger, resume, budget."""
from __future__ import annotations

from factory.ingest import ingest_source
from factory.lake import connect
from factory.sample_stage import run_sample
from factory.stage import stage_run


def q(lake, sql):
    con = connect(lake, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_sampling_is_cached_resumable_and_budgeted(tmp_path):
    from factory.generation.tiny import build_tiny_model

    model, tok = build_tiny_model(seed=0)
    lake = tmp_path / "lake"
    with stage_run("init", {}, lake=lake, create=True) as run:
        run.materialize()
    ingest_source("humaneval", None, lake=lake)
    kw = dict(backend="transformers", model="tiny-test", model_obj=model, tokenizer=tok, source="humaneval",
              n=2, max_tokens=16, temperature=0.8)
    # a budget of 1 call stops cleanly after the first problem
    first = run_sample(lake, limit=3, chunk=1, budget_calls=1, **kw)
    assert first["stopped"] and first["problems"] == 1 and first["programs"] == 2
    # the re-run serves the first problem from the ledger and samples only the other two
    second = run_sample(lake, limit=3, chunk=1, **kw)
    assert second["cached_calls"] == 1 and second["new_calls"] == 2 and second["programs"] == 4
    third = run_sample(lake, limit=3, chunk=1, **kw)
    assert third["new_calls"] == 0 and third["programs"] == 0
    assert q(lake, "SELECT count(*), count(DISTINCT program_id) FROM silver.programs WHERE origin = 'sample'") == [(6, 6)]
    assert q(lake, "SELECT count(*), sum(completion_tokens) > 0 FROM silver.llm_calls") == [(3, True)]
    statuses = q(lake, "SELECT count(*) FROM silver.programs WHERE origin = 'sample' AND extraction_status IS NULL")
    assert statuses == [(0,)]
