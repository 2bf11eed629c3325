"""The reward path scores correct stdin/stdout programs as correct (CodeContests references, wrapped the way
models answer), and a broken one as wrong: extraction must keep a script's module-level code."""
from __future__ import annotations

import ast
import json

from factory.generation.sample import extract_code
from factory.reward import score_completions


def _verified_rows(shared_data, n):
    base = shared_data / "codecontests_subset300"
    ok = {tid for tid, p, k in json.loads((base / "verify_reference_solutions.json").read_text()) if p == k}
    rows = [json.loads(line) for line in (base / "codecontests_subset300.jsonl").open()]
    return [r for r in rows if r["task_id"] in ok][:n]


def _ground_truth(r) -> str:
    tests = r["tests"] if isinstance(r["tests"], list) else ast.literal_eval(r["tests"])
    return json.dumps({"inputs": [t["input"] for t in tests], "outputs": [t["output"] for t in tests]})


def test_extract_keeps_module_level_script():
    text = "Read n, print the sum.\n```python\nn = int(input())\ntotal = 0\nfor x in map(int, input().split()):\n" \
           "    total += x\nprint(total)\n```\n"
    code, status = extract_code(text, None)
    assert status == "ok"
    assert "for x in" in code and "print(total)" in code


def test_codecontests_references_score_one_through_reward(shared_data):
    rows = _verified_rows(shared_data, 12)
    completions = [f"Here is my solution.\n\n```python\n{r['reference_solution_python']}\n```\n" for r in rows]
    gts = [_ground_truth(r) for r in rows]
    assert score_completions(completions, gts, binary=True) == [1.0] * len(rows)
    broken = [c.replace("print(", "print(1 + 0 *", 1) if "print(" in c else c + "\nprint(0)\n" for c in completions]
    assert sum(score_completions(broken, gts, binary=True)) < len(rows) // 2


def test_call_ground_truths_in_both_conventions():
    """The factory's export (argument lists, typed expected values) and SandboxFusion's string form (one JSON
    argument per line, the printed value) both score; a string expected value that looks like a number stays a
    string in the factory's form."""
    from factory.reward import score_completions
    prog = "```python\ndef f(a, b):\n    return str(a + b)\n```"
    ours = {"inputs": [[1, 2]], "outputs": ["3"], "fn_name": "f"}
    assert score_completions([prog, prog.replace("str(a + b)", "a + b")], [ours, ours]) == [1.0, 0.0]
    sandbox_fusion = {"inputs": ["[1, 2]\n3"], "outputs": ["[1, 2, 3]"], "fn_name": "g"}
    good = "```python\nclass Solution:\n    def g(self, a, b):\n        return a + [b]\n```"
    assert score_completions([good, good.replace("a + [b]", "a")], [sandbox_fusion] * 2) == [1.0, 0.0]
