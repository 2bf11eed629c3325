"""A reference that needs a good part of the reward's CPU budget must still score 1.0 on a slower or busier trainer
machine: the export gives its problem 4x the reference's slowest test (EvalPlus's rule) where that exceeds the
reward's default budget, and leaves fast problems on the default. Uncalibrated lakes included (`factory calibrate`
sets the limit explicitly; this is the fallback from the verdicts `factory execute` already stored)."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

import factory.reward as reward
from factory.lake.templating import DEFAULTS
from factory.release import create_release
from factory.release.export import export_release
from factory.sandbox import Limits
from factory.stages.curate import curate
from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

SLOW_LOOPS = 40_000_000   # ~1.5-2.4 CPU s of pure-Python work per call here: > 0.5 s on a machine 3x faster


def _rows(n_slow: int) -> list[dict]:
    rows = []
    for i in range(6):
        body = (f"    n = 0\n    for _ in range({SLOW_LOOPS}):\n        n += 1\n    return x + {i}\n" if i < n_slow
                else f"    return x + {i}\n")
        rows.append({"id": f"h{i}", "q": f"Return x plus {i}, the slow way or not ({i}).",
                     "t": [f"assert f({k}) == {k + i}" for k in range(1 if i < n_slow else 3)],
                     "s": f"def f(x):\n{body}"})
    return rows


def test_slow_references_carry_headroom_fast_ones_the_default(tmp_path):
    src = tmp_path / "headroom.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _rows(n_slow=2)))
    lake = init_lake(tmp_path / "lake")
    ingest_source("jsonl", [src], lake=lake, mapping={"id": "id", "question": "q", "tests": "t", "solution": "s"})
    execute(lake, selection="reference", limits=Limits(cpu_s=20.0, wall_min_s=60.0))
    curate(lake)
    slowest = dict(q(lake, """SELECT pb.source_id, max(e.cpu_ms) / 1000 FROM gold.latest_executions e
                              JOIN silver.programs p USING (program_id) JOIN silver.problems pb USING (problem_id)
                              GROUP BY 1"""))
    limits = dict(q(lake, "SELECT source_id, cpu_s FROM gold.rl_problems"))
    factor, budget = DEFAULTS["reference_cpu_factor"], DEFAULTS["reward_cpu_s"]
    assert budget == reward.DEFAULT_LIMITS.cpu_s
    for sid, seconds in slowest.items():
        if factor * seconds > budget:
            assert limits[sid] is not None and abs(limits[sid] - factor * seconds) < 0.002, (sid, seconds, limits[sid])
        else:
            assert limits[sid] is None, (sid, seconds, limits[sid])
    assert limits["h5"] is None and any(limits[s] for s in ("h0", "h1")), (limits, slowest)

    create_release("headroom", ["gold.rl_problems"], lake=lake, releases_dir=tmp_path / "releases")
    export_release("headroom", "verl", tmp_path / "verl", releases_dir=tmp_path / "releases")
    rows = [r for split in ("train", "test") if (tmp_path / "verl" / f"{split}.parquet").exists()
            for r in pq.read_table(tmp_path / "verl" / f"{split}.parquet").to_pylist()]
    gts = {r["extra_info"]["problem_id"]: json.loads(r["reward_model"]["ground_truth"]) for r in rows}
    carried = {gt.get("cpu_s") for gt in gts.values()}
    assert {v for v in limits.values() if v} <= carried
    refs = dict(q(lake, "SELECT problem_id, code FROM silver.programs WHERE origin = 'reference'"))
    scores = reward.compute_score_batch(["x"] * len(gts), [f"```python\n{refs[p]}\n```" for p in gts],
                                        [json.dumps(gt) for gt in gts.values()])
    assert scores == [1.0] * len(gts)
