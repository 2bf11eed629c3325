"""Fixtures in the EXACT published layouts of the Hub datasets (parquet schemas with their nested types, JSON-in-string
columns, file names), written with pyarrow at test time, and a huggingface_hub cache holding them
(``datasets--ORG--NAME/{refs/main, snapshots/<commit>/..., blobs/<sha256>}``, relative symlinks, as
huggingface_hub writes it). Schemas: docs/hub.md.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

S = pa.string()
IO = pa.struct([("input", pa.list_(S)), ("output", pa.list_(S))])
SOLS = pa.struct([("language", pa.list_(pa.int64())), ("solution", pa.list_(S))])

CODE_CONTESTS_SCHEMA = pa.schema([
    ("name", S), ("description", S), ("public_tests", IO), ("private_tests", IO), ("generated_tests", IO),
    ("source", pa.int64()), ("difficulty", pa.int64()), ("solutions", SOLS), ("incorrect_solutions", SOLS),
    ("cf_contest_id", pa.int64()), ("cf_index", S), ("cf_points", pa.float64()), ("cf_rating", pa.int64()),
    ("cf_tags", pa.list_(S)), ("is_description_translated", pa.bool_()), ("untranslated_description", S),
    ("time_limit", pa.struct([("seconds", pa.int64()), ("nanos", pa.int64())])), ("memory_limit_bytes", pa.int64()),
    ("input_file", S), ("output_file", S),
])
TACO_SCHEMA = pa.schema([(c, S) for c in (
    "question", "solutions", "starter_code", "input_output", "difficulty", "raw_tags", "name", "source", "tags",
    "skill_types", "url", "Expected Auxiliary Space", "time_limit", "date", "picture_num", "memory_limit",
    "Expected Time Complexity")])
DEEPCODER_SCHEMA = pa.schema([("problem", S), ("tests", S), ("starter_code", S), ("metadata", S)])
ACECODE_SCHEMA = pa.schema([
    ("id", S), ("source", S), ("question", S), ("test_cases", pa.list_(S)),
    ("inferences", pa.list_(pa.struct([("model_name", S), ("completion_id", pa.int64()), ("completion", S),
                                       ("pass_rate", pa.float64())]))),
    ("context_messages", pa.list_(pa.struct([("content", S), ("role", S)]))),
])
KODCODE_SCHEMA = pa.schema([
    ("style", S), ("subset", S), ("question_id", S), ("question", S), ("solution", S), ("test", S),
    ("test_info", pa.list_(pa.struct([("docstring", S), ("function_declaration", S), ("function_name", S),
                                      ("parameter_list", S)]))),
    ("gpt_pass_sequence", pa.list_(pa.int64())), ("gpt_pass_trial_num", pa.int64()), ("gpt_difficulty", S),
    ("gpt_pass_percentage", pa.float64()), ("trials", S), ("chosen_trial", S),
    ("metadata", pa.struct([("original_instruction", S), ("prompt_id", S), ("row_id", pa.int64()),
                            ("seed_ids", S)])),
    ("benchmark_similarity", pa.float64()), ("benchmark_instruction", S), ("benchmark_task_id", S),
    ("filter_reason", S),
])
SKYWORK_SCHEMA = pa.schema([
    ("data_source", S), ("prompt", pa.list_(pa.struct([("content", S), ("role", S)]))), ("ability", S),
    ("reward_model", pa.struct([("ground_truth", S), ("style", S)])),
    ("extra_info", pa.struct([("index", pa.int64()), ("model_difficulty", pa.struct([
        ("DeepSeek-R1-Distill-Qwen-1.5B", pa.int64()), ("DeepSeek-R1-Distill-Qwen-32B", pa.int64()),
        ("DeepSeek-R1-Distill-Qwen-7B", pa.int64())]))])),
])

# -- programs the fixtures carry (real, runnable) ---------------------------------------------------------
SUM_PY = "a, b = map(int, input().split())\nprint(a + b)\n"
SUM_CPP = "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n"
SUM_WRONG_SMALL = "a, b = map(int, input().split())\nprint(a + b if a + b < 100 else 0)\n"   # caught only by big tests
SUM_WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"
SUM_PY2 = "a, b = map(int, raw_input().split())\nprint a + b\n"
MAX_PY = "n = int(input())\nxs = list(map(int, input().split()))\nprint(max(xs))\n"
MAX_WRONG = "n = int(input())\nxs = list(map(int, input().split()))\nprint(xs[0])\n"   # right when xs[0] is the max


def _io(pairs):
    return {"input": [p[0] for p in pairs], "output": [p[1] for p in pairs]}


def code_contests_rows() -> list[dict]:
    base = {"source": 2, "cf_contest_id": 1, "cf_points": 500.0, "is_description_translated": False,
            "untranslated_description": "", "memory_limit_bytes": 256 << 20, "input_file": "", "output_file": ""}
    return [
        {**base, "name": "1_A. Sum", "description": "Print a + b.",
         "public_tests": _io([("1 2\n", "3\n")]), "private_tests": _io([("40 50\n", "90\n"), ("-5 5\n", "0\n")]),
         "generated_tests": _io([("60 70\n", "130\n"), ("1000000 1\n", "1000001\n")]),
         "difficulty": 7, "solutions": {"language": [3, 2, 1, 3], "solution": [SUM_PY, SUM_CPP, SUM_PY2, SUM_PY]},
         "incorrect_solutions": {"language": [3, 3], "solution": [SUM_WRONG_SMALL, SUM_WRONG]},
         "cf_index": "A", "cf_rating": 800, "cf_tags": ["math", "implementation"],
         "time_limit": {"seconds": 1, "nanos": 500000000}},
        {**base, "name": "1_B. Max", "description": "Print the largest of n numbers.",
         "public_tests": _io([("3\n5 1 2\n", "5\n")]), "private_tests": _io([("3\n9 8 7\n", "9\n")]),
         "generated_tests": _io([("4\n1 2 3 4\n", "4\n"), ("2\n-1 -2\n", "-1\n")]),
         "difficulty": 8, "solutions": {"language": [3], "solution": [MAX_PY]},
         "incorrect_solutions": {"language": [3, 0], "solution": [MAX_WRONG, "???"]},
         "cf_index": "B", "cf_rating": 1200, "cf_tags": ["greedy"], "time_limit": {"seconds": 2, "nanos": 0}},
        {**base, "name": "1_C. Nothing", "description": "A problem the dataset ships without tests.",
         "public_tests": _io([]), "private_tests": _io([]), "generated_tests": _io([]), "difficulty": 0,
         "solutions": _io_sols([]), "incorrect_solutions": _io_sols([]), "cf_index": "C", "cf_rating": 0,
         "cf_tags": [], "time_limit": None},
    ]


def _io_sols(pairs):
    return {"language": [p[0] for p in pairs], "solution": [p[1] for p in pairs]}


def write_parquet(path: Path, rows: list[dict], schema: pa.Schema, row_group_size: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=row_group_size)
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def apps_rows() -> list[dict]:
    return [
        {"problem_id": 0, "question": "Read a and b, print a+b.", "difficulty": "introductory", "url": "u0",
         "starter_code": "", "solutions": json.dumps([SUM_PY]),
         "input_output": json.dumps({"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]})},
        {"problem_id": 1, "question": "Return the sum of a list.", "difficulty": "interview", "url": "u1",
         "starter_code": "def total(xs):\n\t", "solutions": json.dumps(["def total(xs):\n    return sum(xs)\n"]),
         "input_output": json.dumps({"fn_name": "total", "inputs": [[[1, 2, 3]], [[]]], "outputs": [[6], [0]]})},
        {"problem_id": 2, "question": "A problem with no tests.", "difficulty": "competition", "url": "u2",
         "starter_code": "", "solutions": "", "input_output": ""},
    ]


def taco_rows() -> list[dict]:
    blank = {c: None for c in TACO_SCHEMA.names}
    return [
        {**blank, "question": "Print a+b.", "solutions": json.dumps([SUM_PY]), "starter_code": "",
         "input_output": json.dumps({"inputs": [["1 2"], "3 4\n"], "outputs": [["3"], "7\n"]}),
         "difficulty": "EASY", "name": "sum-ab", "source": "codeforces", "tags": "['Math']",
         "skill_types": "['Implementation']", "time_limit": "1 seconds", "memory_limit": "256 megabytes"},
        {**blank, "question": "Class-based: return x*2.", "solutions": json.dumps([
            "class Solution:\n    def double(self, x):\n        return x * 2\n"]),
         "starter_code": "class Solution:\n    def double(self, x):\n        ", "difficulty": "MEDIUM", "name": "dbl",
         "input_output": json.dumps({"fn_name": "double", "inputs": [[2], [5]], "outputs": [4, 10]}),
         "source": "leetcode"},
    ]


def deepcoder_rows(subset: str, big_input_chars: int = 0) -> list[dict]:
    big = ("7 " * (big_input_chars // 2)).strip() if big_input_chars else None
    if subset == "taco":
        tests = {"inputs": ["1 2\n", "2 2\n"] + ([big + "\n"] if big else []),
                 "outputs": ["3\n", "4\n"] + ([str(7 * (big_input_chars // 2)) + "\n"] if big else [])}
        return [{"problem": "Sum the numbers on the line.", "tests": json.dumps(tests), "starter_code": "",
                 "metadata": json.dumps({})}]
    if subset in ("primeintellect", "codeforces"):
        return [{"problem": "Print a+b.", "starter_code": "", "metadata": json.dumps({"difficulty": 3}),
                 "tests": json.dumps([{"type": "stdin_stdout", "input": "1 2\n", "output": "3\n"},
                                      {"type": "stdin_stdout", "input": "5 6\n", "output": "11\n"}])},
                {"problem": "Return a*b.", "starter_code": "def mul(a, b):\n    ", "metadata": "",
                 "tests": json.dumps([{"type": "function_call", "fn_name": "mul", "input": [2, 3], "output": [6]},
                                      {"type": "function_call", "fn_name": "mul", "input": [4, 0], "output": [0]}])}]
    if subset == "lcbv5":
        return [{"problem": "Return the sum of nums.", "starter_code": "class Solution:\n    def total(self, nums: "
                 "List[int]) -> int:\n        ", "metadata": json.dumps({"func_name": "total"}),
                 "tests": json.dumps([{"input": "[1, 2, 3]", "output": "6", "testtype": "functional",
                                       "metadata": {"func_name": "total"}}])},
                {"problem": "Print N+1.", "starter_code": "", "metadata": json.dumps({}),
                 "tests": json.dumps([{"input": "4\n", "output": "5\n", "testtype": "stdin", "metadata": {}}])}]
    raise ValueError(subset)


def acecode_rows() -> list[dict]:
    return [{"id": "oss_1", "source": "oss", "question": "Write add(a, b).",
             "test_cases": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
             "inferences": [{"model_name": "qwen", "completion_id": 0, "completion": "def add(a, b):\n    return a + b\n",
                             "pass_rate": 1.0},
                            {"model_name": "qwen", "completion_id": 1, "completion": "def add(a, b):\n    return a - b\n",
                             "pass_rate": 0.0}],
             "context_messages": [{"content": "Write add(a, b).", "role": "user"}]}]


KOD_TEST = ("from solution import is_even\n\ndef test_even():\n    assert is_even(2)\n\n"
            "def test_odd():\n    assert not is_even(3)\n")


def kodcode_rows() -> list[dict]:
    return [{"style": "instruct", "subset": "Leetcode", "question_id": "Leetcode_1_I", "question": "Write is_even(n).",
             "solution": "def is_even(n):\n    return n % 2 == 0\n", "test": KOD_TEST,
             "test_info": [{"docstring": None, "function_declaration": "def is_even(n):", "function_name": "is_even",
                            "parameter_list": "(n)"}],
             "gpt_pass_sequence": [1, 1, 1], "gpt_pass_trial_num": 3, "gpt_difficulty": "easy",
             "gpt_pass_percentage": 1.0, "trials": None, "chosen_trial": "Trial1",
             "metadata": {"original_instruction": "", "prompt_id": "p1", "row_id": 1, "seed_ids": "[]"},
             "benchmark_similarity": 0.2, "benchmark_instruction": None, "benchmark_task_id": None,
             "filter_reason": None}]


def skywork_rows() -> list[dict]:
    diff = {"DeepSeek-R1-Distill-Qwen-1.5B": 12, "DeepSeek-R1-Distill-Qwen-32B": 3, "DeepSeek-R1-Distill-Qwen-7B": 8}
    return [{"data_source": "train-code-taco-easy", "ability": "code",
             "prompt": [{"content": "Print a+b.", "role": "user"}],
             "reward_model": {"ground_truth": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}), "style": "rule"},
             "extra_info": {"index": 7, "model_difficulty": diff}}]


def lcb_private(cases: list[dict]) -> str:
    """LiveCodeBench's encoding of private tests: base64(zlib(pickle(json string)))."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def lcb_rows() -> list[dict]:
    return [
        {"question_title": "Sum", "question_content": "Print a+b.", "platform": "atcoder", "question_id": "abc001_a",
         "contest_id": "abc001", "contest_date": "2024-08-01T00:00:00", "starter_code": "", "difficulty": "easy",
         "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
         "private_test_cases": lcb_private([{"input": "10 20\n", "output": "30\n", "testtype": "stdin"}]),
         "metadata": json.dumps({})},
        {"question_title": "Total", "question_content": "Return sum(nums).", "platform": "leetcode",
         "question_id": "3000", "contest_id": "weekly-400", "contest_date": "2024-09-01T00:00:00",
         "starter_code": "class Solution:\n    def total(self, nums: List[int]) -> int:\n        ",
         "difficulty": "medium",
         "public_test_cases": json.dumps([{"input": "[1, 2]", "output": "3", "testtype": "functional"}]),
         "private_test_cases": lcb_private([{"input": "[5, 5, 5]", "output": "15", "testtype": "functional"}]),
         "metadata": json.dumps({"func_name": "total"})},
    ]


# open-r1/codeforces: the card's dataset_info features, in its order (configs default = data/, verifiable =
# verifiable/); verifiable-prompts/ adds language + prompt (open-r1's cf_code_reward reads kwargs["language"])
CF_CASES = pa.list_(pa.struct([("input", S), ("output", S)]))
CODEFORCES_SCHEMA = pa.schema([
    ("id", S), ("aliases", pa.list_(S)), ("contest_id", S), ("contest_name", S), ("contest_type", S),
    ("contest_start", pa.int64()), ("contest_start_year", pa.int64()), ("index", S), ("time_limit", pa.float64()),
    ("memory_limit", pa.float64()), ("title", S), ("description", S), ("input_format", S), ("output_format", S),
    ("interaction_format", S), ("note", S), ("examples", CF_CASES), ("editorial", S), ("rating", pa.int64()),
    ("tags", pa.list_(S)), ("testset_size", pa.int64()), ("official_tests", CF_CASES),
    ("official_tests_complete", pa.bool_()), ("input_mode", S), ("generated_checker", S), ("executable", pa.bool_()),
    ("generated_tests", pa.int64()),
])
CODEFORCES_PROMPTS_SCHEMA = pa.schema(list(CODEFORCES_SCHEMA) + [pa.field("language", S), pa.field("prompt", S)])
CF_CHECKER = ("def check(input, expected, actual):\n"
              "    a, b = map(int, actual.split())\n"
              "    return a + b == int(input) and a > 0 and b > 0\n")


def codeforces_rows() -> list[dict]:
    base = {"aliases": None, "contest_name": "Codeforces Round 1", "contest_type": "CF", "contest_start": 1266580800,
            "contest_start_year": 2010, "time_limit": 2.0, "memory_limit": 256.0, "interaction_format": None,
            "note": None, "editorial": "Read both numbers and print their sum.", "tags": ["math"],
            "official_tests_complete": True, "input_mode": "stdio", "generated_checker": None, "executable": True,
            "generated_tests": 0}
    return [
        {**base, "id": "1/A", "contest_id": "1", "index": "A", "title": "Sum", "rating": 800, "testset_size": 3,
         "description": "Given two integers a and b, print a+b.", "input_format": "Two integers a and b.",
         "output_format": "Their sum.", "examples": [{"input": "1 2\n", "output": "3\n"}],
         # Codeforces' official tests start with the examples
         "official_tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "10 20\n", "output": "30\n"},
                            {"input": "-5 5\n", "output": "0\n"}], "generated_tests": 12},
        {**base, "id": "1/B", "contest_id": "1", "index": "B", "title": "Split", "rating": 1200, "testset_size": 40,
         "description": "Print two positive integers whose sum is n.", "input_format": "One integer n (n >= 2).",
         "output_format": "Two positive integers.", "examples": [{"input": "3\n", "output": "1 2\n"}],
         "official_tests": [], "official_tests_complete": False, "generated_checker": CF_CHECKER,
         "note": "Any valid answer is accepted."},
        {**base, "id": "1/C", "contest_id": "1", "index": "C", "title": "Guess", "rating": 1500, "testset_size": 5,
         "description": "Guess the hidden number.", "input_format": "", "output_format": "",
         "interaction_format": "Print queries '? x'; the jury answers < or >.", "examples": [],
         "official_tests": [{"input": "7\n", "output": "\n"}], "executable": False},
        {**base, "id": "1/D", "contest_id": "1", "index": "D", "title": "Files", "rating": 1000, "testset_size": 1,
         "description": "Read n from input.txt, write 2n to output.txt.", "input_format": "n", "output_format": "2n",
         "examples": [{"input": "2\n", "output": "4\n"}], "official_tests": [{"input": "2\n", "output": "4\n"}],
         "input_mode": "file"},
    ]


# -- a huggingface_hub cache ------------------------------------------------------------------------------
def write_hub_cache(cache: Path, repo_id: str, files: dict[str, Path], commit: str | None = None,
                    branch: str = "main") -> str:
    """Put ``files`` (repo-relative name -> a file written above) into ``cache`` as huggingface_hub lays out a
    downloaded dataset snapshot: content-addressed blobs, relative symlinks under snapshots/<commit>, refs/<branch>.
    Returns the commit."""
    org, name = repo_id.split("/")
    repo = cache / f"datasets--{org}--{name}"
    commit = commit or hashlib.sha1(json.dumps(sorted(files)).encode() + repo_id.encode()).hexdigest()
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    for rel, src in files.items():
        data = Path(src).read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        if not blob.exists():
            blob.write_bytes(data)
        link = repo / "snapshots" / commit / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs" / branch).write_text(commit)
    return commit


def hub_env(cache: Path) -> dict:
    """Environment for an offline run against ``cache``."""
    return dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1")
