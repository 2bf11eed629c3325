"""Near dedup on real benchmark overlaps, checked against brute-force exact Jaccard."""
from __future__ import annotations

import pyarrow as pa
import pytest

from factory.dedup import MinHashParams, dedup, normalize_text
from factory.dedup.recall import _all_pairs_jaccard

from ._data import leetcode, mbpp, mbpp_plus, mbpp_plus_instruction, mbpp_sanitized

P = MinHashParams()


def _run(a: list[tuple[str, str]], b: list[tuple[str, str]]):
    ids = [f"a/{i}" for i, _ in a] + [f"b/{i}" for i, _ in b]
    texts = [t for _, t in a] + [t for _, t in b]
    res = dedup(pa.table({"doc_id": ids, "text": texts}), P)
    near = res.pairs.filter(pa.compute.equal(res.pairs["kind"], "near"))
    found = {tuple(sorted((x, y))) for x, y in zip(near["doc_id_a"].to_pylist(), near["doc_id_b"].to_pylist())}
    truth = {tuple(sorted((ids[i], ids[j]))) for i, j in _all_pairs_jaccard(texts, P.ngram, P.threshold)}
    return res, found, truth


def _cross(pairs, same_task: bool | None = None):
    out = set()
    for x, y in pairs:
        (sx, ix), (sy, iy) = x.split("/", 1), y.split("/", 1)
        if sx != sy and (same_task is None or (ix == iy) == same_task):
            out.add((x, y))
    return out


def test_sanitized_mbpp_vs_mbpp(shared_data):
    san, mb = mbpp_sanitized(shared_data), mbpp(shared_data)
    assert len(san) == 427 and len(mb) == 974
    res, found, truth = _run([(str(r["task_id"]), r["prompt"]) for r in san], [(str(r["task_id"]), r["text"]) for r in mb])
    assert len(found & truth) >= 0.95 * len(truth) and found <= truth  # LSH recall, verified precision
    mbd = {r["task_id"]: r["text"] for r in mb}
    exact_same = sum(normalize_text(r["prompt"]) == normalize_text(mbd[r["task_id"]]) for r in san)
    assert exact_same == 190  # identical statements after normalisation (same task_id)
    same = _cross(found, same_task=True)
    assert len(same) == 208  # near (J >= 0.8) same-task links, exact ones included
    assert len(_cross(found, same_task=False)) <= 15  # templated statements ("surface area of a cube/cone")
    cl = dict(zip(res.clusters["doc_id"].to_pylist(), res.clusters["cluster_id"].to_pylist()))
    linked = sum(cl[f"a/{r['task_id']}"] == cl[f"b/{r['task_id']}"] for r in san)
    assert linked >= len(same) and linked >= exact_same


def test_mbpp_plus_subset_of_mbpp(shared_data):
    mp, mb, san = mbpp_plus(shared_data), mbpp(shared_data), mbpp_sanitized(shared_data)
    assert len(mp) == 378
    ids = {int(r["task_id"].split("/")[1]) for r in mp}
    assert ids <= {r["task_id"] for r in mb} and ids <= {r["task_id"] for r in san}
    sd = {r["task_id"]: r["prompt"] for r in san}
    inst = [(r["task_id"].split("/")[1], mbpp_plus_instruction(r["prompt"])) for r in mp]
    assert sum(normalize_text(t) == normalize_text(sd[int(i)]) for i, t in inst) == 360
    res, found, truth = _run(inst, [(str(r["task_id"]), r["text"]) for r in mb])
    assert len(found & truth) >= 0.95 * len(truth) and found <= truth
    assert len(_cross(found, same_task=True)) == 195


def test_leetcode_train_vs_test_disjoint(shared_data):
    train, test = leetcode(shared_data, "v0.2.0-train"), leetcode(shared_data, "v0.3.1-test")
    assert (len(train), len(test)) == (1890, 228)
    res, found, truth = _run([(r["task_id"], r["statement"]) for r in train], [(r["task_id"], r["statement"]) for r in test])
    assert len(found & truth) >= 0.95 * len(truth) and found <= truth
    assert _cross(found) == set()  # no train/test near-duplicate at J >= 0.8
    within = {(x, y) for x, y in found}
    # "-i"/"-ii" problem pairs share their statement; they must be found
    assert ("b/find-the-count-of-monotonic-pairs-i", "b/find-the-count-of-monotonic-pairs-ii") in within
    assert ("a/sentence-similarity", "a/sentence-similarity-ii") in within
    assert len(within) == 21


@pytest.mark.parametrize("max_bucket", [1, 200])
def test_oversized_buckets_keep_clusters(shared_data, max_bucket):
    """Star edges for oversized buckets keep every duplicate connected to its cluster."""
    base = [r["text"] for r in mbpp(shared_data)[:30]]
    texts = base * 4
    ids = list(range(len(texts)))
    res = dedup(pa.table({"doc_id": ids, "text": texts}), P, max_bucket=max_bucket)
    assert res.clusters["cluster_id"].to_pylist() == [i % 30 for i in ids]
