"""Turning release rows into trainer-facing text: the problem prompt and the tests' ground truth."""
from __future__ import annotations

import ast
import contextlib
import json
import math

import orjson

from factory.errors import FactoryError


def problem_prompt(row: dict) -> str:
    """The user message of a problem row: the `prompt` column every training view carries (one text, written
    by sql/gold/problem_prompts.sql, for RL rows, pairs, candidates and every export format)."""
    prompt = row.get("prompt")
    if not prompt:
        raise FactoryError("this release's rows carry no `prompt` column (cut before gold.problem_prompts "
                           "existed): run `factory curate` and cut a new release")
    return prompt


def ground_truth(row: dict, reward: dict | None = None) -> dict:
    """verl/prime ground truth for a problem.

    All-stdio tests -> {"inputs": [stdin...], "outputs": [stdout...]}; all-call tests -> the same plus "fn_name"
    (inputs = positional-arg lists, outputs = expected values in the sandbox's JSON value format). Anything else
    (assert/check/pytest/unittest or mixed) -> our own test list under "tests" (+ "assert_case" for the
    assert-convertible ones, the sandbox_fusion key), which the factory's sandbox reward scores. The tests are the
    problem's hidden tests (gold.rl_problems.tests). Judging keys, honoured by `factory.reward` / `factory serve`:
    "comparison"/"atol"/"rtol" (a stated tolerance), "checker" (a checker program), "cpu_s" (its calibrated CPU
    limit), "language" (cpp, java, javascript, rust: the completion's program is judged in it), "prompt" (a
    MultiPL-E harness problem's starter code: the signature a whole answer is cut after, and its include lines),
    "public_tests" (the tests the prompt shows, as factory test rows: never reward tests) and "reward" (``reward``,
    the release's spec: {"kind": "binary"|"soft", "tests": "hidden"|"all"}; binary scores 1.0 only when every test
    passes, soft the fraction passed).
    """
    tests = json.loads(row["tests"])
    kinds = {t["kind"] for t in tests}
    judging = {k: row[k] for k in ("checker", "cpu_s") if row.get(k) is not None}
    language = (row.get("language") or "python").strip().lower()
    if language != "python":   # the reward judges the completion in the problem's language (its fenced block)
        judging["language"] = language
    if kinds == {"harness"} and row.get("starter_code"):   # MultiPL-E: the prompt's signature places the answer
        judging["prompt"] = row["starter_code"]
    if reward:   # the release's reward spec: factory.reward / factory serve score the item by its kind
        judging["reward"] = {k: reward[k] for k in ("kind", "tests") if reward.get(k) is not None}
    if row.get("public_tests"):   # the prompt's own examples: never reward tests, a format / sanity check
        judging["public_tests"] = json.loads(row["public_tests"])
    if kinds in ({"stdio"}, {"call"}):   # a problem's tolerance / comparison rule (silver.checkers)
        first = tests[0]
        if first.get("comparison") not in (None, "exact", "token") or first.get("atol") is not None:
            judging.update({k: first.get(k) for k in ("comparison", "atol", "rtol") if first.get(k) is not None})
            if kinds == {"call"}:
                judging.pop("comparison", None)
    if kinds == {"stdio"}:
        return {"inputs": [t["input"] for t in tests], "outputs": [t["expected"] for t in tests], **judging}
    if kinds == {"call"} and row.get("entry_point"):
        return {"inputs": [json.loads(t["input"]) for t in tests],
                "outputs": [json.loads(t["expected"]) for t in tests], "fn_name": row["entry_point"], **judging,
                **({"test_preamble": row["test_preamble"]} if row.get("test_preamble") else {})}
    out = {"test_format": row.get("test_format"), "entry_point": row.get("entry_point"),
           "test_preamble": row.get("test_preamble"), "tests": tests, **judging}
    if asserts := assert_cases(row, tests):
        out["assert_case"] = asserts
    return out


def truth_json(gt: dict, utf8: bool = False) -> str | bytes:
    """A ground truth as trainers read it: JSON, keys sorted, no spaces (``json.loads`` gives ``gt`` back).

    orjson writes it when it writes every value exactly; a value it cannot (an integer beyond 64 bits, a NaN or
    infinite float, a lone surrogate) sends the whole truth through ``json.dumps`` with the same separators (ASCII,
    \\u escapes). ``utf8``: orjson's UTF-8 bytes as they are, else text."""
    if not _has_nonfinite(gt):
        with contextlib.suppress(TypeError, orjson.JSONEncodeError):
            out = orjson.dumps(gt, option=orjson.OPT_SORT_KEYS)
            return out if utf8 else out.decode()
    return json.dumps(gt, sort_keys=True, separators=(",", ":"))


def _has_nonfinite(value) -> bool:
    """Whether a JSON-like value holds a NaN or infinite float (its strings are not walked: MBs of them)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, (dict, list, tuple)):
        items = value.values() if isinstance(value, dict) else value
        return any(_has_nonfinite(v) for v in items if not isinstance(v, str))
    return False


def assert_cases(row: dict, tests: list[dict] | None = None) -> list[str]:
    """Tests as standalone assert snippets (AceCode `test_cases`): assert tests as-is, check(candidate)
    functions rewritten to call the entry point; other kinds are skipped. The preamble is prepended."""
    tests = json.loads(row["tests"]) if tests is None else tests
    preamble = (row.get("test_preamble") or "").strip()
    out = []
    for t in tests:
        snippet = None
        if t["kind"] == "assert" and t.get("code"):
            snippet = t["code"].strip()
        elif t["kind"] == "check" and t.get("code") and row.get("entry_point"):
            snippet = _check_to_asserts(t["code"], row["entry_point"])
        if snippet:
            out.append(f"{preamble}\n{snippet}" if preamble else snippet)
    return out


def _check_to_asserts(code: str, entry_point: str) -> str | None:
    """`def check(candidate): assert candidate(x) == y` -> `assert f(x) == y`; else code + `check(f)`."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(funcs) != 1 or len(funcs[0].args.args) != 1:
        return None
    fn, arg = funcs[0], funcs[0].args.args[0].arg
    others = [n for n in tree.body if n is not fn and not _is_constant_assign(n)]
    if not others and all(isinstance(s, ast.Assert) for s in fn.body):
        target = ast.parse(entry_point, mode="eval").body

        class _Swap(ast.NodeTransformer):
            def visit_Name(self, node):
                return ast.copy_location(target, node) if node.id == arg else node

        return "\n".join(ast.unparse(_Swap().visit(s)) for s in fn.body)
    return f"{code.rstrip()}\n\ncheck({entry_point})"


def _is_constant_assign(node: ast.stmt) -> bool:
    """Module-level `NAME = literal` (HumanEval's METADATA) that the asserts never need."""
    if isinstance(node, ast.Assign):
        with contextlib.suppress(ValueError):
            ast.literal_eval(node.value)
            return True
    return False
