"""Every field of /run_code, /submit and /v1/judge, replaced by every kind of bad value (NaN, infinity, negative,
zero, wrong type, missing): the real server answers 200 (the value is acceptable) or a 400 whose ``field``
names the mutated field (the object holding it, or a required field missing inside it) - never a 500, never a
crash of the sandbox pool. Bodies over ``--max-body-mb`` get a 413 naming the limit."""
from __future__ import annotations

import copy
import json
import math

import pytest

from tests.serve.conftest import post

BAD_VALUES = {"missing": ..., "null": None, "nan": math.nan, "inf": math.inf, "-inf": -math.inf, "negative": -1,
              "zero": 0, "huge": 1e308, "string": "x", "bool": True, "list": [1], "object": {"a": 1}}

RUN_CODE = {"code": "import sys\nprint(sys.stdin.read().upper())", "language": "python", "stdin": "hi",
            "run_timeout": 2, "compile_timeout": 2, "memory_limit_MB": 512, "files": {}, "fetch_files": ["out.txt"]}
SUBMIT = {"dataset": "code_contests", "id": 7, "completion": "```python\nprint(int(input()) * 2)\n```",
          "config": {"language": "python", "run_timeout": 2, "compile_timeout": 2,
                     "extra": {"memory_limit_MB": 512},
                     "provided_data": {"id": 7, "test": [{"input": {"stdin": "2\n"}, "output": {"stdout": "4\n"}}]}}}
JUDGE = {"items": [{"id": "a", "code": "def add(a, b):\n    return a + b\n", "cpu_s": 2,
                    "ground_truth": {"entry_point": "add", "test_preamble": "",
                                     "tests": [{"test_id": "t0", "kind": "assert", "code": "assert add(1, 2) == 3"},
                                               {"test_id": "t1", "kind": "call", "input": "[1, 2]",
                                                "expected": "3", "comparison": "exact", "atol": 0.0}]}},
                   {"id": "b", "completion": "```python\nprint(int(input()) + 1)\n```",
                    "ground_truth": {"inputs": ["1\n"], "outputs": ["2\n"], "comparison": "token"}}],
         "limits": {"cpu_s": 2, "memory_mb": 512, "max_output_bytes": 4096},
         "binary": False, "exclude_in_process": True}   # "stream" below (true answers NDJSON)


def _paths(obj, prefix=""):
    """(dotted path as the server names it, container, key) for every field, depth first."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for key, value in items:
        path = f"{prefix}[{key}]" if isinstance(obj, list) else (f"{prefix}.{key}" if prefix else key)
        yield path, key
        if isinstance(value, (dict, list)):
            for sub, _ in _paths(value, path):
                yield sub, None


def _mutations(base: dict):
    for path, _ in list(_paths(base)):
        for name, bad in BAD_VALUES.items():
            body = copy.deepcopy(base)
            holder, key = body, None
            parts = path.replace("[", ".[").split(".")
            for i, part in enumerate(parts):
                k = int(part[1:-1]) if part.startswith("[") else part
                if i == len(parts) - 1:
                    holder, key = holder, k
                else:
                    holder = holder[k]
            if bad is ...:
                if isinstance(holder, list):
                    continue
                del holder[key]
            else:
                holder[key] = bad
            yield path, name, body


def _under(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or a.startswith(b + "[")


def _names_field(path: str, field: str | None) -> bool:
    """The error names the mutated field, the object holding it, or a field inside it (a required one missing)."""
    return field is not None and (_under(path, field) or _under(field, path))


@pytest.mark.parametrize("endpoint,base", [("/run_code", RUN_CODE), ("/submit", SUBMIT), ("/v1/judge", JUDGE)])
def test_every_field_every_bad_value_is_200_or_400_naming_it(server, endpoint, base):
    code, _, ok = post(server.url + endpoint, base)
    assert code == 200, ok                                  # the unmutated request is valid
    seen = {200: 0, 400: 0}
    wrong = []
    for path, name, body in _mutations(base):
        code, _, answer = post(server.url + endpoint, json.dumps(body).encode())   # NaN/Infinity as Python writes them
        if code == 400 and answer.get("error") and (_names_field(path, answer.get("field"))
                                                    or f"'{path}'" in answer["error"]):
            seen[400] += 1
        elif code == 200:
            seen[200] += 1
        else:
            wrong.append((path, name, code, answer.get("field"), str(answer.get("error"))[:120]))
    assert not wrong, "\n".join(map(str, wrong))
    assert seen[400] >= 20, seen
    code, _, ok = post(server.url + endpoint, base)        # the sandbox pool survived all of it
    assert code == 200, ok


@pytest.mark.parametrize("body,needle", [
    ({"code": "print(1)"}, "missing required field 'language'"),
    ({"code": "print(1)", "language": "klingon"}, "not a known language"),
    ({"code": "print(1)", "language": "go"}, "a SandboxFusion language"),
])
def test_language_missing_or_unknown_lists_the_supported_ones(server, body, needle):
    code, _, answer = post(server.url + "/run_code", body)
    assert code == 400 and answer["field"] == "language" and needle in answer["error"], answer
    assert "python, python3" in answer["error"]


@pytest.mark.parametrize("raw,field", [
    (json.dumps({**JUDGE, "stream": "yes"}).encode(), "stream"),
    (json.dumps({**JUDGE, "stream": 1}).encode(), "stream"),
    (b'{"code": "print(1)", "language": "python", "run_timeout": NaN}', "run_timeout"),
    (b'{"code": "print(1)", "language": "python", "run_timeout": Infinity}', "run_timeout"),
    (b'{"code": "print(1)", "language": "python", "run_timeout": -3}', "run_timeout"),
    (b'{"code": "print(1)", "language": "python", "run_timeout": "10"}', "run_timeout"),
    (b'{"code": "print(1)", "language": "python", "memory_limit_MB": NaN}', "memory_limit_MB"),
    (b'{"code": "print(1)", "language": "python", "memory_limit_MB": 0.5}', "memory_limit_MB"),
    (b'{"code": "print(1)", "language": "python", "compile_timeout": -Infinity}', "compile_timeout"),
])
def test_non_finite_and_negative_limits_are_400(server, raw, field):
    code, _, answer = post(server.url + ("/v1/judge" if field == "stream" else "/run_code"), raw)
    assert code == 400 and answer["field"] == field, answer


def test_body_over_max_body_mb_is_413_naming_the_limit(server):
    code, _, answer = post(server.url + "/run_code", json.dumps({"language": "python",
                                                                  "code": "#" * (10 << 20)}).encode())
    assert code == 413 and "8 MB" in answer["error"] and "--max-body-mb" in answer["error"], answer
    assert answer["limit_bytes"] == 8 << 20
    code, _, answer = post(server.url + "/run_code", {"language": "python", "code": "#" * (7 << 20) + "\nprint(1)"})
    assert code == 200 and answer["run_result"]["stdout"] == "1\n", answer


def test_factory_client_splits_a_batch_over_the_body_limit():
    """A server with a 64 KB body limit; the factory client's 20-item batch (~120 KB) is answered 413, sent again
    in halves, and every item is judged."""
    from factory.sandbox.remote import VerifierClient
    from tests.serve.conftest import Server

    srv = Server("--workers", "1", "--max-body-mb", "0.0625")
    try:
        pad = "#" * 6000 + "\n"
        items = [{"code": pad + f"def add(a, b):\n    return a + b + {i % 2}\n",
                  "ground_truth": {"tests": [{"kind": "assert", "code": "assert add(2, 3) == 5"}],
                                   "entry_point": "add"}} for i in range(20)]
        code, _, answer = post(srv.url + "/v1/judge", {"items": items})
        assert code == 413 and answer["limit_bytes"] == 65536
        results = VerifierClient(srv.url).judge(items)
        assert [r["reward"] for r in results] == [1.0, 0.0] * 10
    finally:
        srv.stop()
