"""Sandbox throughput: local pool vs Ray with 1 node (all CPUs) vs 2 nodes (half the CPUs each), same programs
(HumanEval references + AST mutants), same machine: the point is Ray's overhead and identical verdicts, not a
speed-up (the CPUs are the same). Prints a table and writes JSON.

    python bench/ray_bench.py [--mutants 3] [--rounds 2]
"""
from __future__ import annotations

import os

from harness import DATA, jsonl, median_time, parser, table, write  # noqa: I001  (first: the repository on sys.path)

from factory.testgen.mutants import mutants  # noqa: E402
from factory.sandbox import Job, Limits, SandboxPool, TestSpec  # noqa: E402

LIMITS = Limits(cpu_s=0.5, wall_min_s=3.0)


def jobs(n_mutants: int) -> list[Job]:
    rows = jsonl(DATA / "humaneval" / "HumanEval.jsonl.gz")
    out = []
    for r in rows:
        ref = r["prompt"] + r["canonical_solution"]
        test = [TestSpec("check", "check", code=r["test"])]
        out.append(Job(f"{r['task_id']}/ref", ref, test, entry_point=r["entry_point"]))
        for k, m in enumerate(mutants(ref, max_mutants=n_mutants)):
            out.append(Job(f"{r['task_id']}/m{k}", m.code, test, entry_point=r["entry_point"]))
    return out


def timed(pool, work: list[Job], rounds: int) -> tuple[float, dict]:
    """(the best round's wall s, the last round's verdicts)."""
    _, times, verdicts = median_time(lambda: {(v.program_id, v.test_id): v.status for v in pool.run(work)}, rounds)
    return min(times), verdicts


def main() -> None:
    import ray
    from ray.cluster_utils import Cluster

    from factory.sandbox.ray_pool import RaySandboxPool

    ap = parser(__doc__, "ray_bench.json", {"--mutants": 3, "--rounds": 2})
    a = ap.parse_args()
    work = jobs(a.mutants)
    cpus = os.cpu_count() or 2
    out = {"programs": len(work), "cpus": cpus, "rows": []}
    with SandboxPool(LIMITS, workers=cpus) as pool:
        t, local = timed(pool, work, a.rounds)
    out["rows"].append({"engine": "local pool", "nodes": 1, "seconds": round(t, 2),
                        "programs_per_s": round(len(work) / t, 1), "same_verdicts": True})
    for nodes in (1, 2):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": cpus // nodes})
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=cpus // nodes)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        try:
            with RaySandboxPool(LIMITS, cluster.address) as pool:
                t, got = timed(pool, work, a.rounds)
        finally:
            ray.shutdown()
            cluster.shutdown()
        out["rows"].append({"engine": "ray", "nodes": nodes, "seconds": round(t, 2),
                            "programs_per_s": round(len(work) / t, 1), "same_verdicts": got == local})
    print(f"{len(work)} programs\n" + table(out["rows"]))
    write(a.out, out)


if __name__ == "__main__":
    main()
