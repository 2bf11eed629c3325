"""Adapters for datasets as their owners publish them on the Hugging Face Hub (``hf-*``).

Each :class:`HubDataset` names the repository, the files an adapter reads (``allow_patterns`` for
``snapshot_download``: nothing else is downloaded), the configs a ``/SUBDIR`` selects and the columns that carry
tests and programs (kept out of bronze payloads: they are stored once, in silver; the exact revision, file and row
locate the original). Field names and types, and where each came from: docs/hub.md.

An adapter raises :class:`SkipRecord` for a row the dataset itself leaves without a usable test (APPS rows whose
``input_output`` is empty, ...): the ingest counts those per reason and names the first one; malformed data (bad
JSON, wrong types) is an :class:`~factory.errors.InputError` naming file, row and field, and nothing is written.
"""
from __future__ import annotations

import base64
import io
import json
import pickle
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field

from factory.ingest.adapters import CODECONTESTS_LANGUAGES
from factory.ingest.registry import ADAPTERS, Ctx, adapter, encode_value
from factory.ingest.normalize import Normalized, ProgramRow, TestRow, input_error, require, split_pytest

HUB_VERSION = 1   # bump when a hub adapter's output changes: the same revision is then re-ingested


class SkipRecord(Exception):
    """The row has nothing the factory can judge (the reason is counted and reported, never silent)."""


@dataclass(frozen=True)
class HubDataset:
    adapter: str
    repo_id: str
    patterns: tuple[str, ...]                 # default files (repo-relative globs)
    configs: dict = field(default_factory=dict)   # SUBDIR -> patterns (DeepCoder subsets, LCB releases)
    bulky: tuple[str, ...] = ()              # columns stored in silver, elided from bronze payloads
    source: str = ""                          # default source label (config appended)
    license: str | None = None
    schema_from: str = ""                     # where the field names / types come from (docs/hub.md)

    def files_for(self, subdir: str | None) -> tuple[list[str], str]:
        """(allow_patterns, source label) for a ``/SUBDIR`` (a config name, or a folder/glob inside the repo)."""
        if not subdir:
            return list(self.patterns), self.source
        if subdir in self.configs:
            return list(self.configs[subdir]), f"{self.source}-{subdir}"
        sub = subdir.rstrip("/")
        if any(c in sub for c in "*?["):
            return [sub], f"{self.source}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', sub).strip('-')}"
        return [f"{sub}/*.parquet", f"{sub}/*.jsonl", f"{sub}/*.json"], f"{self.source}-{sub.replace('/', '-')}"


HUB_DATASETS: dict[str, HubDataset] = {}


def hub_dataset(ds: HubDataset, description: str):
    def register(fn):
        HUB_DATASETS[ds.adapter] = ds
        adapter(ds.adapter, ds.license, f"{description} [{ds.repo_id} on the Hub; --path hf://datasets/{ds.repo_id}"
                                        f"{'[/' + '|'.join(ds.configs) + ']' if ds.configs else ''} or a folder "
                                        f"in that layout]")(fn)
        return fn
    return register


def for_repo(repo_id: str) -> list[str]:
    """The hub adapters that read ``repo_id`` (for an error message that names the right one)."""
    return [name for name, ds in HUB_DATASETS.items() if ds.repo_id.lower() == (repo_id or "").lower()]


# -- shared pieces ---------------------------------------------------------------------------------------
def _json_field(rec: dict, key: str, ctx: Ctx, *, allow_empty: bool = False):
    """A JSON-in-string column decoded (a column already decoded by a reader passes through)."""
    value = rec.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if allow_empty:
            return None
        raise SkipRecord(f"empty {key}")
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise input_error(ctx, f"{key} is not JSON ({exc.msg} at char {exc.pos})", key) from None


def _text(value) -> str:
    """stdin / expected stdout as text (TACO and APPS sometimes store a list of lines)."""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, (dict, bool)) or value is None \
        else str(value)


def _unwrap(value):
    """APPS / TACO wrap a call test's expected value in a one-element list."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _entry(fn: str, starter: str | None) -> str:
    """A LeetCode-style starter (``class Solution``) is called as ``Solution().fn``; a plain function as ``fn``."""
    if starter and re.search(r"^\s*class\s+Solution\b", starter, re.M) and re.search(rf"def\s+{re.escape(fn)}\b",
                                                                                    starter):
        return f"Solution().{fn}"
    return fn


def io_tests(io_obj, ctx: Ctx, fieldname: str, starter: str | None, subset: str | None = None
             ) -> tuple[list[TestRow], str | None]:
    """Tests from the APPS/TACO ``input_output`` object ``{inputs, outputs[, fn_name]}``: call tests when a
    ``fn_name`` is given (inputs are argument lists), else stdin/stdout tests compared token by token."""
    if not isinstance(io_obj, dict) or "inputs" not in io_obj or "outputs" not in io_obj:
        raise input_error(ctx, "expected an object with 'inputs' and 'outputs'", fieldname)
    inputs, outputs = io_obj["inputs"], io_obj["outputs"]
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise input_error(ctx, "'inputs' and 'outputs' must be lists of equal length", fieldname)
    if not inputs:
        raise SkipRecord(f"no tests in {fieldname}")
    fn = io_obj.get("fn_name")
    if fn:
        tests = [TestRow("call", input=json.dumps(i if isinstance(i, list) else [i]), expected=encode_value(_unwrap(o)),
                         subset=subset) for i, o in zip(inputs, outputs)]
        return tests, _entry(fn, starter)
    return [TestRow("stdio", input=_text(i), expected=_text(o), comparison="token", subset=subset)
            for i, o in zip(inputs, outputs)], None


def python_solutions(solutions, ctx: Ctx, fieldname: str, limit: int) -> list[ProgramRow]:
    if solutions is None:
        return []
    if not isinstance(solutions, list):
        raise input_error(ctx, f"expected a list of programs, got {type(solutions).__name__}", fieldname)
    out, seen = [], set()
    for i, code in enumerate(solutions):
        if isinstance(code, str) and code.strip() and code not in seen and len(out) < limit:
            seen.add(code)
            out.append(ProgramRow(code, metadata={"solution_index": i}))
    return out


def _limit(opts: dict) -> int:
    return int(opts.get("solutions_per_language") or 8)


# -- deepmind/code_contests ------------------------------------------------------------------------------
# enums of the dataset's proto (contest_problem.proto), as its card lists them
CC_SOURCES = {0: "UNKNOWN_SOURCE", 1: "CODECHEF", 2: "CODEFORCES", 3: "HACKEREARTH", 4: "CODEJAM", 5: "ATCODER",
              6: "AIZU"}
CC_DIFFICULTIES = {0: "UNKNOWN_DIFFICULTY", 1: "EASY", 2: "MEDIUM", 3: "HARD", 4: "HARDER", 5: "HARDEST",
                   6: "EXTERNAL", **{7 + i: chr(ord("A") + i) for i in range(22)}}
CC_LANGUAGES = {0: "UNKNOWN_LANGUAGE", 1: "PYTHON", 2: "CPP", 3: "PYTHON3", 4: "JAVA"}
CC_TEST_KINDS = ("public_tests", "private_tests", "generated_tests")


def _cc_programs(rec: dict, key: str, origin: str, ctx: Ctx, per_language: int, skipped: Counter) -> list[ProgramRow]:
    sol = rec.get(key)
    if sol is None:
        return []
    if not isinstance(sol, dict) or not isinstance(sol.get("language"), list) or \
            not isinstance(sol.get("solution"), list) or len(sol["language"]) != len(sol["solution"]):
        raise input_error(ctx, "expected a struct of equal-length 'language' and 'solution' lists", key)
    kept, out, seen = Counter(), [], set()
    for i, (lang, code) in enumerate(zip(sol["language"], sol["solution"])):
        name = CODECONTESTS_LANGUAGES.get(lang)
        if name is None:   # Python 2 and unknown languages: the sandbox has no runtime for them
            skipped[f"{key}:{CC_LANGUAGES.get(lang, lang)}"] += 1
            continue
        if not isinstance(code, str) or not code.strip() or code in seen or kept[name] >= per_language:
            continue
        seen.add(code)
        kept[name] += 1
        out.append(ProgramRow(code, origin=origin, language=name,
                              metadata={"solution_language": CC_LANGUAGES.get(lang, lang), "solution_index": i}))
    return out


@hub_dataset(HubDataset(
    "hf-code-contests", "deepmind/code_contests", ("data/*.parquet",),
    configs={"train": ("data/train-*.parquet",), "valid": ("data/valid-*.parquet",), "test": ("data/test-*.parquet",)},
    bulky=CC_TEST_KINDS + ("solutions", "incorrect_solutions"), source="code_contests", license="CC-BY-4.0",
    schema_from="dataset card dataset_info (deepmind/code_contests) and the contest_problem.proto enums"),
    "DeepMind CodeContests parquet: public/private/generated stdio tests, solutions and incorrect_solutions "
    "(programs with origin 'incorrect') per language, time/memory limits, cf_rating")
def code_contests(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    name = require(rec, "name", ctx)
    tests, per_kind = [], dict.fromkeys((k.removesuffix("_tests") for k in CC_TEST_KINDS), 0)
    for kind in CC_TEST_KINDS:
        block = rec.get(kind)
        if block is None:
            continue
        if not isinstance(block, dict) or not isinstance(block.get("input"), list) or \
                not isinstance(block.get("output"), list) or len(block["input"]) != len(block["output"]):
            raise input_error(ctx, "expected a struct of equal-length 'input' and 'output' lists", kind)
        subset = kind.removesuffix("_tests")
        per_kind[subset] = len(block["input"])
        tests += [TestRow("stdio", input=i, expected=o, comparison="token", subset=subset)
                  for i, o in zip(block["input"], block["output"])]
    if not tests:
        raise SkipRecord("no public/private/generated tests")
    skipped: Counter = Counter()
    per = _limit(opts)
    programs = _cc_programs(rec, "solutions", "reference", ctx, per, skipped)
    programs += _cc_programs(rec, "incorrect_solutions", "incorrect", ctx, per, skipped)
    tl = rec.get("time_limit") or {}
    time_limit = (tl.get("seconds") or 0) + (tl.get("nanos") or 0) / 1e9 if isinstance(tl, dict) and tl else None
    difficulty = rec.get("difficulty")
    return Normalized(
        source_id=name, question=require(rec, "description", ctx), test_format="stdio", tests=tests,
        programs=programs, split=opts.get("file_split"),
        difficulty_label=str(rec["cf_rating"]) if rec.get("cf_rating") else CC_DIFFICULTIES.get(difficulty),
        metadata={"source": CC_SOURCES.get(rec.get("source"), rec.get("source")),
                  "difficulty": CC_DIFFICULTIES.get(difficulty, difficulty),
                  **{k: rec.get(k) for k in ("cf_rating", "cf_contest_id", "cf_index", "cf_points", "cf_tags")},
                  "time_limit_s": time_limit, "memory_limit_bytes": rec.get("memory_limit_bytes"),
                  "input_file": rec.get("input_file") or None, "output_file": rec.get("output_file") or None,
                  "is_description_translated": rec.get("is_description_translated"),
                  "tests_per_kind": per_kind,
                  "programs_not_runnable": skipped or None},
    )


# -- codeparrot/apps and BAAI/TACO -----------------------------------------------------------------------
def _apps_like(rec: dict, ctx: Ctx, opts: dict, source_id: str, extra: dict) -> Normalized:
    starter = rec.get("starter_code") or None
    io_obj = _json_field(rec, "input_output", ctx)
    tests, entry = io_tests(io_obj, ctx, "input_output", starter)
    programs = python_solutions(_json_field(rec, "solutions", ctx, allow_empty=True), ctx, "solutions", _limit(opts))
    return Normalized(source_id=source_id, question=require(rec, "question", ctx), starter_code=starter,
                      entry_point=entry, test_format="call" if entry else "stdio", tests=tests, programs=programs,
                      difficulty_label=rec.get("difficulty") or None, split=opts.get("file_split"),
                      metadata={k: v for k, v in extra.items() if v not in (None, "")} or None)


@hub_dataset(HubDataset(
    "hf-apps", "codeparrot/apps", ("train.jsonl", "test.jsonl"),
    configs={"train": ("train.jsonl",), "test": ("test.jsonl",)}, bulky=("input_output", "solutions"),
    source="apps", license="MIT", schema_from="codeparrot/apps dataset card and its loading script apps.py"),
    "APPS (codeparrot/apps): input_output and solutions as JSON strings, starter_code, difficulty")
def apps_hub(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    pid = require(rec, "problem_id", ctx, (int, str))
    return _apps_like(rec, ctx, opts, str(pid), {"url": rec.get("url")})


@hub_dataset(HubDataset(
    "hf-taco", "BAAI/TACO", ("ALL/*.parquet",),
    configs={"train": ("ALL/train-*.parquet",), "test": ("ALL/test-*.parquet",)},
    bulky=("input_output", "solutions"), source="taco", license="Apache-2.0",
    schema_from="BAAI/TACO dataset card dataset_info (parquet conversion, ALL/ config)"),
    "TACO (BAAI/TACO): APPS-style input_output / solutions JSON strings + tags, skills, time and memory limits")
def taco_hub(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    sid = rec.get("name") or rec.get("url") or f"{ctx[0].rsplit('/', 1)[-1]}:{ctx[1]}"
    extra = {k: rec.get(k) for k in ("source", "url", "tags", "skill_types", "time_limit", "memory_limit", "date",
                                     "raw_tags", "Expected Time Complexity", "Expected Auxiliary Space")}
    return _apps_like(rec, ctx, opts, str(sid), extra)


# -- agentica-org/DeepCoder-Preview-Dataset ---------------------------------------------------------------
def deepcoder_tests(raw, ctx: Ctx, starter: str | None, meta: dict) -> tuple[list[TestRow], str | None]:
    """The subsets' three test shapes: TACO's ``{inputs, outputs, fn_name}`` (taco), a list of ``{type:
    stdin_stdout|function_call, input, output[, fn_name]}`` (primeintellect, codeforces) and LiveCodeBench's
    ``{input, output, testtype: stdin|functional, metadata: {func_name}}`` (lcbv5)."""
    if isinstance(raw, dict):
        return io_tests(raw, ctx, "tests", starter)
    if not isinstance(raw, list):
        raise input_error(ctx, f"expected a JSON list or object, got {type(raw).__name__}", "tests")
    if not raw:
        raise SkipRecord("no tests")
    tests, entry = [], None
    for t in raw:
        if not isinstance(t, dict) or "input" not in t or "output" not in t:
            raise input_error(ctx, "test lacks input/output", "tests")
        kind = t.get("type") or t.get("testtype") or "stdin_stdout"
        if kind in ("stdin_stdout", "stdin"):
            tests.append(TestRow("stdio", input=_text(t["input"]), expected=_text(t["output"]), comparison="token"))
            continue
        if kind not in ("function_call", "functional"):
            raise input_error(ctx, f"unknown test type {kind!r}", "tests")
        fn = t.get("fn_name") or (t.get("metadata") or {}).get("func_name") or meta.get("func_name") or \
            meta.get("fn_name")
        if not fn:
            raise input_error(ctx, "function test without fn_name / metadata.func_name", "tests")
        entry = _entry(fn, starter)
        if kind == "functional":   # LiveCodeBench: one JSON value per line of input, the output one JSON value
            tests.append(_lcb_call(t["input"], t["output"], ctx, "tests"))
        else:
            args = t["input"]
            tests.append(TestRow("call", input=json.dumps(args if isinstance(args, list) else [args]),
                                 expected=encode_value(_unwrap(t["output"]))))
    if len({t.kind for t in tests}) > 1:
        raise input_error(ctx, "mixes stdin and function tests", "tests")
    return tests, entry


@hub_dataset(HubDataset(
    "hf-deepcoder", "agentica-org/DeepCoder-Preview-Dataset", ("*/train-*.parquet",),
    configs={c: (f"{c}/*.parquet",) for c in ("taco", "primeintellect", "lcbv5", "codeforces")},
    bulky=("tests", "solutions"), source="deepcoder", license="MIT",
    schema_from="agentica-org/DeepCoder-Preview-Dataset card + rllm's deepcoder data preparation (json.loads(tests))"),
    "DeepCoder-Preview subsets taco/primeintellect/lcbv5/codeforces: problem, tests (JSON string, MB-sized), "
    "starter_code, metadata")
def deepcoder(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    starter = rec.get("starter_code") or None
    meta = _json_field(rec, "metadata", ctx, allow_empty=True)
    meta = meta if isinstance(meta, dict) else {}
    tests, entry = deepcoder_tests(_json_field(rec, "tests", ctx), ctx, starter, meta)
    sols = rec.get("solutions")
    programs = python_solutions(_json_field(rec, "solutions", ctx, allow_empty=True) if isinstance(sols, str) else sols,
                                ctx, "solutions", _limit(opts)) if sols is not None else []
    sid = meta.get("question_id") or meta.get("problem_id") or meta.get("id") or \
        f"{opts.get('config') or 'deepcoder'}/{opts.get('file_rel', ctx[0])}:{ctx[1]}"
    return Normalized(source_id=str(sid), question=require(rec, "problem", ctx), starter_code=starter,
                      entry_point=entry, test_format=tests[0].kind, tests=tests, programs=programs,
                      split=opts.get("file_split"),
                      difficulty_label=str(meta["difficulty"]) if meta.get("difficulty") is not None else None,
                      metadata={"subset": opts.get("config"), "dataset_source": rec.get("source"),
                                "dataset_metadata": {k: v for k, v in meta.items() if k != "func_name"} or None})


# -- TIGER-Lab/AceCode-87K --------------------------------------------------------------------------------
@hub_dataset(HubDataset(
    "hf-acecode", "TIGER-Lab/AceCode-87K", ("data/*.parquet",), bulky=("test_cases", "inferences"),
    source="acecode-87k", license="MIT", schema_from="TIGER-Lab/AceCode-87K dataset card and AceCoder's README"),
    "AceCode-87K: question, test_cases (assert strings), inferences (model samples with pass rates)")
def acecode_hub(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    norm = ADAPTERS["acecode"].convert(rec, ctx, opts)
    norm.split = opts.get("file_split")
    return norm


# -- KodCode/KodCode-V1 -----------------------------------------------------------------------------------
@hub_dataset(HubDataset(
    "hf-kodcode", "KodCode/KodCode-V1", ("data/train-*.parquet",),
    configs={"use_with_caution": ("data/use_with_caution-*.parquet",), "all": ("data/*.parquet",)},
    bulky=("test", "solution"), source="kodcode-v1", license="CC-BY-NC-4.0",
    schema_from="KodCode/KodCode-V1 dataset card dataset_info (features list)"),
    "KodCode-V1: question, pytest `test` (from solution import f), verified `solution`, test_info, GPT pass stats")
def kodcode_hub(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    test = require(rec, "test", ctx)
    info = rec.get("test_info") or []
    entry = next((i.get("function_name") for i in info if isinstance(i, dict) and i.get("function_name")), None)
    if entry is None:
        m = re.search(r"from\s+solution\s+import\s+\(?\s*(\w+)", test)
        entry = m.group(1) if m else None
    solution = rec.get("solution")
    return Normalized(
        source_id=str(require(rec, "question_id", ctx)), question=require(rec, "question", ctx), entry_point=entry,
        test_format="pytest", tests=[TestRow("pytest", code=t) for t in split_pytest(test)],
        programs=[ProgramRow(solution)] if isinstance(solution, str) and solution.strip() else [],
        difficulty_label=rec.get("gpt_difficulty") or None, split=opts.get("file_split"),
        metadata={**{k: rec.get(k) for k in ("style", "subset", "gpt_pass_percentage", "gpt_pass_trial_num",
                                             "benchmark_similarity")},
                  "use_with_caution": "use_with_caution" in str(opts.get("file_rel", "")) or None},
    )


# -- Skywork/Skywork-OR1-RL-Data --------------------------------------------------------------------------
@hub_dataset(HubDataset(
    "hf-skywork-or1", "Skywork/Skywork-OR1-RL-Data", ("data/code-*.parquet",),
    configs={"code": ("data/code-*.parquet",)}, bulky=("reward_model",), source="skywork-or1-code",
    license="Apache-2.0", schema_from="Skywork/Skywork-OR1-RL-Data card (verl features: data_source, prompt, ability, "
                                      "reward_model{ground_truth, style}, extra_info{index, model_difficulty})"),
    "Skywork-OR1-RL-Data code split: verl rows (prompt, reward_model.ground_truth JSON string), "
    "per-model difficulty")
def skywork(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    prompt = require(rec, "prompt", ctx, (list, str))
    if isinstance(prompt, list):
        users = [m.get("content") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if not users or not users[-1]:
            raise input_error(ctx, "no user message in prompt", "prompt")
        prompt = users[-1]
    reward = require(rec, "reward_model", ctx, dict)
    truth = _json_field(reward, "ground_truth", (ctx[0], ctx[1]))
    if isinstance(truth, dict):
        tests, entry = io_tests(truth, ctx, "reward_model.ground_truth", None)
    else:
        tests, entry = deepcoder_tests(truth, ctx, None, {})
    extra = rec.get("extra_info") or {}
    difficulty = extra.get("model_difficulty") if isinstance(extra, dict) else None
    return Normalized(
        source_id=str(extra.get("index", ctx[1]) if isinstance(extra, dict) else ctx[1]), question=prompt,
        entry_point=entry, test_format=tests[0].kind, tests=tests, split=opts.get("file_split"),
        metadata={"data_source": rec.get("data_source"), "ability": rec.get("ability"),
                  "model_difficulty": difficulty},
    )


# -- livecodebench/code_generation_lite -------------------------------------------------------------------
LCB_RELEASES = {f"release_v{i}": tuple(["test.jsonl"] + [f"test{j}.jsonl" for j in range(2, i + 1)])
                for i in range(1, 7)}
LCB_RELEASES["release_latest"] = LCB_RELEASES["release_v6"]


class _StrOnly(pickle.Unpickler):
    """LCB's private tests are a pickled *string*; anything that names a class or function is refused, so a
    tampered file cannot run code at ingest."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name}")


def lcb_private_tests(text: str, ctx: Ctx):
    """``private_test_cases``: plain JSON in early releases, else base64(zlib(pickle(JSON string)))."""
    if not text:
        return []
    if text.lstrip().startswith("["):
        return json.loads(text)
    try:
        raw = zlib.decompress(base64.b64decode(text))
        obj = _StrOnly(io.BytesIO(raw)).load()
        return json.loads(obj) if isinstance(obj, (str, bytes)) else obj
    except (ValueError, zlib.error, pickle.UnpicklingError, EOFError) as exc:
        raise input_error(ctx, f"private_test_cases is neither JSON nor base64(zlib(pickle)) ({exc})",
                          "private_test_cases") from None


def _lcb_call(inp: str, out: str, ctx: Ctx, fieldname: str, subset: str | None = None) -> TestRow:
    try:
        args = [json.loads(line) for line in inp.split("\n") if line.strip()]
        expected = json.loads(out)
    except (json.JSONDecodeError, AttributeError) as exc:
        raise input_error(ctx, f"functional test is not one JSON value per line ({exc})", fieldname) from None
    return TestRow("call", input=json.dumps(args), expected=encode_value(expected), subset=subset)


@hub_dataset(HubDataset(
    "hf-livecodebench", "livecodebench/code_generation_lite", LCB_RELEASES["release_latest"], configs=LCB_RELEASES,
    bulky=("public_test_cases", "private_test_cases"), source="livecodebench", license="CC (per dataset card)",
    schema_from="livecodebench/code_generation_lite card dataset_info + code_generation_lite.py (release files) + "
                "LiveCodeBench's loader (private tests: base64/zlib/pickle)"),
    "LiveCodeBench code_generation_lite releases v1..v6: public tests JSON, private tests compressed, "
    "stdin or functional (LeetCode) tests; a benchmark (split test)")
def livecodebench(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    starter = rec.get("starter_code") or None
    meta = _json_field(rec, "metadata", ctx, allow_empty=True)
    meta = meta if isinstance(meta, dict) else {}
    cases = [(c, "public") for c in _json_field(rec, "public_test_cases", ctx, allow_empty=True) or []]
    cases += [(c, "private") for c in lcb_private_tests(rec.get("private_test_cases") or "", ctx)]
    if not cases:
        raise SkipRecord("no public or private tests")
    tests, entry = [], None
    for c, subset in cases:
        if c.get("testtype") == "functional":
            fn = meta.get("func_name")
            if not fn:
                raise input_error(ctx, "functional tests without metadata.func_name", "metadata")
            entry = _entry(fn, starter)
            tests.append(_lcb_call(c["input"], c["output"], ctx, f"{subset}_test_cases", subset))
        else:
            tests.append(TestRow("stdio", input=c["input"], expected=c["output"], comparison="token", subset=subset))
    if len({t.kind for t in tests}) > 1:
        raise input_error(ctx, "mixes stdin and functional tests", "public_test_cases")
    return Normalized(
        source_id=str(require(rec, "question_id", ctx)), question=require(rec, "question_content", ctx),
        starter_code=starter, entry_point=entry, test_format=tests[0].kind, tests=tests,
        difficulty_label=rec.get("difficulty") or None, split="test",
        metadata={"title": rec.get("question_title"), "platform": rec.get("platform"),
                  "contest_id": rec.get("contest_id"), "contest_date": rec.get("contest_date")},
    )


# -- open-r1/codeforces -----------------------------------------------------------------------------------
def _cf_statement(rec: dict) -> str:
    """The statement as Codeforces shows it: description, input / output (/ interaction) format, the examples
    and the note. The examples are in it, so they are the public tests (factory.ingest.visibility finds them)."""
    parts = [rec.get("title") or "", rec.get("description") or ""]
    parts += [f"{head}\n{rec[key]}" for key, head in (("input_format", "Input"), ("output_format", "Output"),
                                                       ("interaction_format", "Interaction")) if rec.get(key)]
    parts += [f"Example {k + 1}\nInput\n{ex.get('input') or ''}\nOutput\n{ex.get('output') or ''}"
              for k, ex in enumerate(rec.get("examples") or []) if isinstance(ex, dict)]
    parts += [f"Note\n{rec['note']}"] if rec.get("note") else []
    return "\n\n".join(p.strip("\n") for p in parts if p and p.strip())


def _cf_cases(rec: dict, key: str, ctx: Ctx) -> list[tuple[str, str]]:
    cases = rec.get(key)
    if cases is None:
        return []
    if not isinstance(cases, list):
        raise input_error(ctx, f"expected a list of {{input, output}}, got {type(cases).__name__}", key)
    out = []
    for i, c in enumerate(cases):
        if not isinstance(c, dict) or not isinstance(c.get("input"), str) or not isinstance(c.get("output"), str):
            raise input_error(ctx, f"{key}[{i}] must be {{input: string, output: string}}", key)
        out.append((c["input"], c["output"]))
    return out


@hub_dataset(HubDataset(
    "hf-codeforces", "open-r1/codeforces", ("data/*.parquet",),
    configs={"default": ("data/*.parquet",), "verifiable": ("verifiable/*.parquet",),
             "verifiable-prompts": ("verifiable-prompts/*.parquet",)},
    bulky=("official_tests", "examples", "editorial", "generated_checker"), source="codeforces",
    license="CC-BY-4.0",
    schema_from="open-r1/codeforces card dataset_info (configs default / verifiable / verifiable-prompts) and "
                "open-r1's cf_code_reward / cf_scoring (official_tests + generated_checker, time_limit, "
                "memory_limit, input_mode; verifiable-prompts adds language + prompt)"),
    "open-r1/codeforces: official_tests (+ the statement's examples as public tests), time/memory limits, "
    "rating, tags; interactive, file-I/O and non-executable problems counted and kept in bronze only; "
    "generated_checker kept in metadata")
def codeforces(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    pid = require(rec, "id", ctx)
    if rec.get("interaction_format"):
        raise SkipRecord("interactive problem (interaction_format): no stdin/stdout test can judge it")
    mode = rec.get("input_mode") or "stdio"
    if mode != "stdio":
        raise SkipRecord(f"input_mode {mode}: the program reads/writes files, not stdin/stdout")
    if rec.get("executable") is False:
        raise SkipRecord("not executable (the dataset's executable flag)")
    examples = _cf_cases(rec, "examples", ctx)
    official = _cf_cases(rec, "official_tests", ctx)
    seen = set(official)
    tests = [TestRow("stdio", input=i, expected=o, comparison="token", subset="examples")
             for i, o in examples if (i, o) not in seen]   # Codeforces' official tests start with the examples
    tests += [TestRow("stdio", input=i, expected=o, comparison="token", subset="official") for i, o in official]
    del official
    if not tests:
        raise SkipRecord("no official tests or examples")
    checker = rec.get("generated_checker") or None
    return Normalized(
        source_id=str(pid), question=_cf_statement(rec), test_format="stdio", tests=tests,
        difficulty_label=str(rec["rating"]) if rec.get("rating") is not None else None, split=opts.get("file_split"),
        metadata={**{k: rec.get(k) for k in ("title", "contest_id", "index", "contest_name", "contest_type",
                                             "contest_start", "contest_start_year")},
                  "aliases": rec.get("aliases") or None, "rating": rec.get("rating"), "tags": rec.get("tags"),
                  "time_limit_s": rec.get("time_limit"), "memory_limit_mb": rec.get("memory_limit"),
                  **{k: rec.get(k) for k in ("testset_size", "official_tests_complete", "generated_tests")},
                  # several correct answers: token comparison rejects valid ones until the checker is applied
                  "generated_checker": checker, "needs_checker": bool(checker),
                  "prompt_language": rec.get("language"), "config": opts.get("config")},
    )
