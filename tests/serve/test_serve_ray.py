"""`factory serve --engine ray`: the HTTP verifier with its sandboxes on a real 2-node Ray cluster (1 CPU each).

Same answers as the local service, per-request limits on the cluster, and a node removed while a batch is in
flight: every item still answered once, with the same reward.
"""
from __future__ import annotations

import gzip
import json
import threading
import time
import urllib.request

import pytest

from tests.serve.conftest import Server, post

ray = pytest.importorskip("ray")

SPIN = ("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.25:\n    pass\n"
        "print(int(input()) * 2)\n")


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=1)
    c.wait_for_nodes()
    yield c
    c.shutdown()


@pytest.fixture(scope="module")
def ray_server(cluster):
    s = Server("--workers", "1", "--engine", "ray", "--ray-address", cluster.address, "--cpu-s", "2")
    yield s
    s.stop()


def _items(shared_data) -> list[dict]:
    rows = [json.loads(x) for x in gzip.open(shared_data / "humaneval" / "HumanEval.jsonl.gz", "rt")][:12]
    items = []
    for i, r in enumerate(rows):
        truth = {"tests": [{"test_id": "check", "kind": "check", "code": r["test"]}],
                 "entry_point": r["entry_point"]}
        other = rows[(i + 1) % len(rows)]
        items.append({"id": f"{r['task_id']}/ref", "code": r["prompt"] + r["canonical_solution"],
                      "ground_truth": truth})
        items.append({"id": f"{r['task_id']}/wrong", "code": other["prompt"] + other["canonical_solution"],
                      "ground_truth": truth})
    stdio = {"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]}
    items += [{"id": "loop", "code": "while True:\n    pass\n", "ground_truth": stdio, "cpu_s": 0.5},
              {"id": "spin-ok", "code": SPIN, "ground_truth": stdio},
              {"id": "crash", "code": "raise SystemExit(3)", "ground_truth": stdio}]
    return items


def _answers(body: dict) -> dict:
    return {i["id"]: (i["reward"], tuple(sorted((r["test_id"], r["status"]) for r in i["rows"])))
            for i in body["items"]}


def test_ray_service_answers_like_the_local_one(ray_server, server, shared_data):
    assert json.loads(urllib.request.urlopen(ray_server.url + "/ready").read())["ready"]
    stats = json.loads(urllib.request.urlopen(ray_server.url + "/v1/stats").read())
    assert stats["cluster"] == {"nodes": 2, "lost_nodes": 0, "retried_batches": 0} and stats["workers"] == 2
    items = _items(shared_data)
    code, _, on_ray = post(ray_server.url + "/v1/judge", {"items": items})
    assert code == 200, on_ray
    code, _, local = post(server.url + "/v1/judge", {"items": items})
    assert code == 200
    got, want = _answers(on_ray), _answers(local)
    assert got == want
    assert got["loop"][0] == 0.0 and got["loop"][1][0][1] == "timeout"          # the item's own CPU limit
    assert got["spin-ok"][0] == 1.0 and sum(r == 1.0 for r, _ in got.values()) == 13
    # SandboxFusion's /run_code on the cluster too
    code, _, body = post(ray_server.url + "/run_code", {"code": "print(sum(range(10)))", "language": "python"})
    assert code == 200 and body["status"] == "Success" and body["run_result"]["stdout"] == "45\n"


def test_a_node_lost_mid_batch_costs_nothing(cluster, ray_server):
    """40 programs of 0.25 s CPU each (~5 s on the 2 nodes); the worker node is removed after 1.5 s."""
    stdio = {"inputs": ["2\n"], "outputs": ["4\n"]}
    items = [{"id": f"spin{i}", "code": SPIN + f"# {i}\n", "ground_truth": stdio} for i in range(40)]
    worker = [n for n in cluster.list_all_nodes() if n is not cluster.head_node][0]
    removed = {}

    def remove():
        cluster.remove_node(worker, allow_graceful=False)
        removed["at"] = time.monotonic()

    killer = threading.Timer(1.5, remove)
    killer.start()
    code, _, body = post(ray_server.url + "/v1/judge", {"items": items}, timeout=300)
    answered = time.monotonic()
    killer.join()
    # ordering, not a duration: the node was gone before the answer came (else nothing was tested)
    assert removed["at"] < answered, "the batch finished before the node was removed: nothing was tested"
    assert code == 200, body
    assert sorted(i["id"] for i in body["items"]) == sorted(i["id"] for i in items)
    assert all(i["reward"] == 1.0 and len(i["rows"]) == 1 and i["rows"][0]["status"] == "pass"
               for i in body["items"])
    stats = json.loads(urllib.request.urlopen(ray_server.url + "/v1/stats").read())
    assert stats["cluster"]["lost_nodes"] == 1 and stats["cluster"]["retried_batches"] >= 1
    assert stats["cluster"]["nodes"] == 1
    # the service keeps answering on the surviving node
    code, _, body = post(ray_server.url + "/v1/judge", {"items": items[:4]})
    assert code == 200 and [i["reward"] for i in body["items"]] == [1.0] * 4
