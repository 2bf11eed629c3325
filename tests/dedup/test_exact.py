"""Exact keys on normalised text and code."""
from __future__ import annotations

import pyarrow as pa

from factory.dedup import dedup, exact_hashes, normalize_code, normalize_text

from ._data import humaneval, humaneval_plus


def test_normalize_text_rules():
    assert normalize_text("  Write a\tFUNCTION, please! ") == "write a function please"
    assert normalize_text("ﬁnd the ＭＡＸ") == "find the max"  # NFKC
    assert normalize_text(None) == normalize_text("") == ""
    assert normalize_text("sum of list") != normalize_text("sum of lists")


def test_normalize_code_ignores_comments_docstrings_whitespace():
    a = 'def f(x):\n    """Doc."""\n    # comment\n    return  x+1\n'
    b = "def f(x):\n\n    return (x + 1)  # other\n"
    c = "def f(x):\n    return x + 2\n"
    assert normalize_code(a) == normalize_code(b) != normalize_code(c)
    assert normalize_code("def f(:\n  return 1 # c") == normalize_code("def f(:\n    return 1")  # tokenize fallback
    h = exact_hashes([a, b, c], kind="code").to_pylist()
    assert h[0] == h[1] != h[2] and len(h[0]) == 32


def test_humaneval_plus_prompts_equal_humaneval(shared_data):
    he, hp = humaneval(shared_data), humaneval_plus(shared_data)
    assert [r["task_id"] for r in he] == [r["task_id"] for r in hp]
    ka = exact_hashes([r["prompt"] for r in he]).to_pylist()
    kb = exact_hashes([r["prompt"] for r in hp]).to_pylist()
    differ = [he[i]["task_id"] for i in range(len(he)) if ka[i] != kb[i]]
    assert differ == ["HumanEval/115"]  # HumanEval+ moved `import math` above the def
    docs = pa.table({
        "doc_id": [f"he/{r['task_id']}" for r in he] + [f"hep/{r['task_id']}" for r in hp],
        "text": [r["prompt"] for r in he] + [r["prompt"] for r in hp],
        "code": [r["prompt"] + r["canonical_solution"] for r in he] + [r["prompt"] + r["canonical_solution"] for r in hp],
    })
    res = dedup(docs)
    cl = dict(zip(res.clusters["doc_id"].to_pylist(), res.clusters["cluster_id"].to_pylist()))
    assert all(cl[f"he/{r['task_id']}"] == cl[f"hep/{r['task_id']}"] for r in he)  # all 164 linked
    # the only cross-task merge: 56/61 differ only in bracket characters, which normalisation drops
    multi = {c for c in cl.values() if list(cl.values()).count(c) > 2}
    assert len(multi) == 1
    members = sorted(d for d, c in cl.items() if c in multi)
    assert members == ["he/HumanEval/56", "he/HumanEval/61", "hep/HumanEval/56", "hep/HumanEval/61"]
