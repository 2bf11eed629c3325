"""`factory execute --engine ray` on a real 2-node Ray cluster (ray.cluster_utils.Cluster, 1 CPU per node):
the same verdicts as the local pool, and a node removed mid-run costs nothing: its batches are re-run on the
other node, every (program, test) row is there exactly once."""
from __future__ import annotations

import threading

import pytest

from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from factory.stages.mutate import run_mutate
from factory.sandbox import Limits
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

ray = pytest.importorskip("ray")
LIMITS = Limits(cpu_s=0.5, wall_min_s=3.0)
PROBLEMS = [f"HumanEval/{i}" for i in range(0, 40)]


def _lake(path):
    lake = init_lake(path)
    ingest_source("humaneval", None, lake=lake)
    run_mutate(lake, ["humaneval"], max_per_program=3)
    ids = [r[0] for r in q(lake, "SELECT p.program_id FROM silver.programs p JOIN silver.problems b USING (problem_id) "
                                 "WHERE list_contains(?, b.source_id)", [PROBLEMS])]
    return lake, ids


def _verdicts(lake):
    return {(p, t): s for p, t, s in q(lake, "SELECT program_id, test_id, status FROM silver.executions")}


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()


def test_ray_verdicts_equal_local_and_survive_a_lost_node(cluster, tmp_path, monkeypatch):
    local_lake, ids = _lake(tmp_path / "local")
    execute(local_lake, selection="all", program_ids=ids, limits=LIMITS, batch_programs=1000)
    local = _verdicts(local_lake)
    assert len(local) > 300 and {"pass", "fail"} <= set(local.values())

    ray_lake, ids2 = _lake(tmp_path / "ray")
    assert sorted(ids2) == sorted(ids)
    report = execute(ray_lake, selection="all", program_ids=ids, limits=LIMITS, batch_programs=1000,
                     engine="ray", ray_address=cluster.address)
    assert _verdicts(ray_lake) == local

    # a node removed mid-run: its unfinished batches run again on the head node; exact row counts
    lost_lake, _ = _lake(tmp_path / "lost")
    worker = [n for n in cluster.list_all_nodes() if n is not cluster.head_node][0]
    import factory.stages.execute as stage

    running, first_commit, removed_mid_run = threading.Event(), threading.Event(), []
    commit_batch = stage._execute_batch

    def batch_then_signal(*args, **kwargs):   # the real batch; then say that it is in the lake
        commit_batch(*args, **kwargs)
        first_commit.set()

    monkeypatch.setattr(stage, "_execute_batch", batch_then_signal)

    def remove_after_first_commit():   # an event of the run, not a timer: its first batch is committed
        if first_commit.wait(timeout=600) and running.is_set():
            cluster.remove_node(worker, allow_graceful=False)
            removed_mid_run.append(running.is_set())

    running.set()
    killer = threading.Thread(target=remove_after_first_commit)
    killer.start()
    try:
        report = execute(lost_lake, selection="all", program_ids=ids, limits=LIMITS, batch_programs=1000,
                         engine="ray", ray_address=cluster.address)
    finally:
        running.clear()
        first_commit.set()
        killer.join()
    assert removed_mid_run == [True], "the run ended before the node was removed: nothing was tested"
    assert report.lost_nodes == 1 and report.retried_batches >= 1
    rows = q(lost_lake, "SELECT count(*), count(DISTINCT (program_id, test_id)) FROM silver.executions")[0]
    assert rows[0] == rows[1] == len(local)
    assert _verdicts(lost_lake) == local
