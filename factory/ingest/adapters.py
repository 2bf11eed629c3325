"""One adapter per dataset format: a record in, a `Normalized` problem (tests, reference programs) out.

Adapters are registered with `@adapter(name, ...)`. `KNOWN_DATASETS` maps folders of a data directory (such as
../shared/data) to (adapter, files) for `factory ingest --all --data-dir DIR`.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from factory.ingest.registry import Ctx, adapter, encode_value
from factory.ingest import reasoning_gym
from factory.ingest.evalplus_inputs import mbppplus_args
from factory.sandbox.serialize import _dumps as tagged_json
from factory.ingest.normalize import (
    TEST_FORMATS, Normalized, ProgramRow, TestRow, called_function, function_params, input_error, literal_or_text,
    require, split_check, split_pytest, unquote,
)

# -- HumanEval family ------------------------------------------------------------------------------------
@adapter("humaneval", "MIT", "OpenAI HumanEval: prompt + check(candidate)")
def humaneval(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    prompt = require(rec, "prompt", ctx)
    return Normalized(   # fields required in the order prompt, entry_point, test, canonical_solution, task_id
        question=prompt, starter_code=prompt, entry_point=require(rec, "entry_point", ctx), test_format="check",
        tests=[TestRow("check", code=t) for t in split_check(require(rec, "test", ctx))],
        programs=[ProgramRow(prompt + require(rec, "canonical_solution", ctx))], split="test",
        source_id=require(rec, "task_id", ctx),
    )


def _evalplus_call_tests(rec: dict, ctx: Ctx, restore: Callable[[list], list] | None = None) -> list[TestRow]:
    """One call test per base/plus input; ``restore`` turns a JSON input back into the real argument types, which
    the stored input keeps (tagged JSON of :func:`factory.sandbox.serialize_value`)."""
    atol = float(rec.get("atol") or 0.0)
    tests = []
    for subset in ("base_input", "plus_input"):
        inputs = require(rec, subset, ctx, list) if subset == "base_input" else rec.get(subset) or []
        for args in inputs:
            if restore is not None:
                try:
                    args = restore(args)
                except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
                    raise input_error(ctx, f"cannot restore argument types: {exc}", subset) from exc
            tests.append(TestRow("call", input=encode_value(args), expected=None,
                                 comparison="float" if atol else "exact", atol=atol or None,
                                 subset=subset.removesuffix("_input")))
    if not tests:
        raise input_error(ctx, "no base_input/plus_input test inputs", "base_input")
    return tests


@adapter("humanevalplus", "Apache-2.0 (data derived from MIT HumanEval)",
         "EvalPlus HumanEval+: call tests on base+plus inputs; expected outputs computed from the canonical solution")
def humanevalplus(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    prompt = require(rec, "prompt", ctx)
    return Normalized(
        source_id=require(rec, "task_id", ctx), question=prompt, starter_code=prompt,
        entry_point=require(rec, "entry_point", ctx), test_format="call", tests=_evalplus_call_tests(rec, ctx),
        programs=[ProgramRow(prompt + require(rec, "canonical_solution", ctx))], split="test",
        metadata={"contract": rec.get("contract")},
    )


@adapter("mbppplus", "Apache-2.0 (MBPP data CC-BY-4.0)",
         "EvalPlus MBPP+: call tests on base+plus inputs; expected outputs computed from the canonical solution")
def mbppplus(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    return Normalized(
        source_id=require(rec, "task_id", ctx), question=require(rec, "prompt", ctx),
        entry_point=require(rec, "entry_point", ctx), test_format="call",
        tests=_evalplus_call_tests(rec, ctx, lambda args: mbppplus_args(rec["task_id"], args)),
        programs=[ProgramRow(require(rec, "canonical_solution", ctx))], split="test",
        metadata={"assertion": rec.get("assertion"), "contract": rec.get("contract")},
    )


# -- MBPP family -----------------------------------------------------------------------------------------
def mbpp_split(task_id: int) -> str:
    """The documented MBPP split by task id: 1-10 prompt, 11-510 test, 511-600 validation, 601+ train."""
    return "prompt" if task_id <= 10 else "test" if task_id <= 510 else "validation" if task_id <= 600 else "train"


@adapter("mbpp", "CC-BY-4.0 (per dataset card)", "MBPP full: text + assert test_list (+ challenge tests)")
def mbpp(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    task_id = require(rec, "task_id", ctx, int)
    code = require(rec, "code", ctx)
    asserts = require(rec, "test_list", ctx, list)
    # test_setup_code uses names the program defines, so it runs with each test, after the program
    setup = (rec.get("test_setup_code") or "").strip()
    with_setup = (lambda a: f"{setup}\n{a}") if setup else (lambda a: a)
    tests = [TestRow("assert", code=with_setup(a)) for a in asserts]
    tests += [TestRow("assert", code=with_setup(a), subset="challenge") for a in rec.get("challenge_test_list") or []]
    if not tests:
        raise input_error(ctx, "no tests", "test_list")
    return Normalized(
        source_id=str(task_id), question=require(rec, "text", ctx), entry_point=called_function(asserts, code),
        test_format="assert", tests=tests, programs=[ProgramRow(code)], split=mbpp_split(task_id),
    )


@adapter("mbpp-sanitized", "CC-BY-4.0 (per dataset card)", "Sanitized MBPP (427): prompt + assert test_list")
def mbpp_sanitized(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    task_id = require(rec, "task_id", ctx, int)
    code = require(rec, "code", ctx)
    asserts = require(rec, "test_list", ctx, list)
    imports = "\n".join(rec.get("test_imports") or []) or None
    return Normalized(
        source_id=str(task_id), question=require(rec, "prompt", ctx), entry_point=called_function(asserts, code),
        test_preamble=imports, test_format="assert", tests=[TestRow("assert", code=a) for a in asserts],
        programs=[ProgramRow(code)], split=mbpp_split(task_id),
    )


# -- LeetCodeDataset -------------------------------------------------------------------------------------
@adapter("leetcode", "MIT (statements: LeetCode, rights unverified)",
         "LeetCodeDataset v0.2.0 / v0.3.1: problem + Solution class + check(candidate)")
def leetcode(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    meta = rec.get("meta") or {}
    question = rec.get("problem_description") or unquote(meta.get("question_title"))
    if not question:
        raise input_error(ctx, "missing required field", "problem_description")
    starter = rec.get("starter_code") or unquote(meta.get("lang_code"))
    difficulty = rec.get("difficulty") or unquote(meta.get("difficulty"))
    test = require(rec, "test", ctx)
    return Normalized(
        source_id=require(rec, "task_id", ctx), question=question, starter_code=starter,
        entry_point=require(rec, "entry_point", ctx), test_preamble=rec.get("prompt"),
        test_format="check", tests=[TestRow("check", code=t) for t in split_check(test)],
        programs=[ProgramRow(require(rec, "completion", ctx))], difficulty_label=difficulty,
        split=opts.get("split"),
        metadata={"question_id": rec.get("question_id") or meta.get("question_id"), "tags": rec.get("tags"),
                  "estimated_date": rec.get("estimated_date")},
    )


# -- stdin/stdout and call-based competitive programming -------------------------------------------------
@adapter("codecontests", "CC-BY-4.0 (CodeContests; repackaging unlicensed)",
         "CodeContests subset: description + stdin/stdout tests + Python reference")
def codecontests(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    task_id = require(rec, "task_id", ctx)
    tests = [TestRow("stdio", input=_io(t, "input", ctx), expected=_io(t, "output", ctx), comparison="token")
             for t in require(rec, "tests", ctx, list)]
    verified = opts.get("verified", {}).get(task_id)
    programs = [ProgramRow(rec["reference_solution_python"])] if rec.get("reference_solution_python") else []
    programs += codecontests_solutions(rec.get("solutions"), ctx, opts.get("solutions_per_language", 5))
    if not programs:
        raise input_error(ctx, "record has neither 'reference_solution_python' nor 'solutions'",
                          "reference_solution_python")
    return Normalized(
        source_id=task_id, question=require(rec, "description", ctx), test_format="stdio", tests=tests,
        programs=programs, difficulty_label=str(rec.get("difficulty")) if rec.get("difficulty") is not None else None,
        metadata={"title": rec.get("title"), "tags": rec.get("tags"), "cluster": rec.get("cluster"),
                  "reference_tests_passed": verified},
    )


# DeepMind CodeContests' `solutions.language` enum: 1 PYTHON (2), 2 CPP, 3 PYTHON3, 4 JAVA (0 UNKNOWN)
CODECONTESTS_LANGUAGES = {2: "cpp", 3: "python", 4: "java", "CPP": "cpp", "PYTHON3": "python", "JAVA": "java",
                          "cpp": "cpp", "python3": "python", "python": "python", "java": "java"}


def codecontests_solutions(solutions, ctx: Ctx, per_language: int) -> list[ProgramRow]:
    """Reference programs from CodeContests' ``solutions`` ({"language": [...], "solution": [...]}, as on the
    Hub, or a list of {"language", "solution"}): the first ``per_language`` of each language the sandbox runs
    (Python 2 and unknown ones are skipped), each a reference program of its language."""
    if solutions is None:
        return []
    if isinstance(solutions, dict):
        langs, codes = solutions.get("language"), solutions.get("solution")
        if not isinstance(langs, list) or not isinstance(codes, list) or len(langs) != len(codes):
            raise input_error(ctx, "'solutions' must hold equal-length 'language' and 'solution' lists", "solutions")
        pairs = list(zip(langs, codes))
    elif isinstance(solutions, list):
        pairs = [(s.get("language"), s.get("solution")) for s in solutions if isinstance(s, dict)]
    else:
        raise input_error(ctx, f"'solutions' must be an object or a list, got {type(solutions).__name__}", "solutions")
    kept, out = Counter(), []
    for lang, code in pairs:
        name = CODECONTESTS_LANGUAGES.get(lang)
        if name is None or not isinstance(code, str) or not code.strip() or kept[name] >= per_language:
            continue
        kept[name] += 1
        out.append(ProgramRow(code, language=name, metadata={"solution_language": lang}))
    return out


def _io(test: dict, key: str, ctx: Ctx) -> str:
    if not isinstance(test, dict) or key not in test:
        raise input_error(ctx, f"test case lacks {key!r}", "tests")
    value = test[key]
    if isinstance(value, list):  # APPS wraps outputs in a list
        value = "\n".join(str(v) for v in value) if len(value) != 1 else value[0]
    return value if isinstance(value, str) else str(value)


@adapter("apps", "MIT", "APPS (MapCoder 150): stdin/stdout or call-based I/O pairs, no solutions")
def apps(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    starter = (rec.get("starter_code") or "").strip()
    cases = list(rec.get("sample_io") or []) + list(require(rec, "test_list", ctx, list))
    subsets = ["sample"] * len(rec.get("sample_io") or []) + [None] * len(rec["test_list"])
    if not starter:
        tests = [TestRow("stdio", input=_io(c, "input", ctx), expected=_io(c, "output", ctx),
                         comparison="token", subset=s) for c, s in zip(cases, subsets)]
        return Normalized(source_id=str(require(rec, "id", ctx, (int, str))), question=require(rec, "description", ctx),
                          test_format="stdio", tests=tests, difficulty_label=rec.get("difficulty"))
    signature = function_params(starter)
    if signature is None:
        raise input_error(ctx, "cannot parse the function signature", "starter_code")
    params, required = signature
    name = re.search(r"def\s+(\w+)", starter).group(1)
    tests = []
    for case, subset in zip(cases, subsets):
        raw = case.get("input")
        lines = raw.split("\n") if isinstance(raw, str) else [raw]
        if len(lines) > len(params) >= 1 and isinstance(raw, str):
            # MapCoder joins args with newlines, so a multi-line string arg comes first: re-join its lines
            cut = len(lines) - (len(params) - 1)
            lines = ["\n".join(lines[:cut])] + lines[cut:]
        if not required <= len(lines) <= len(params):
            raise input_error(ctx, f"input has {len(lines)} lines for {required}..{len(params)} parameters",
                              "test_list")
        args = [literal_or_text(x) if isinstance(x, str) else x for x in lines]
        out = case.get("output")
        expected = out[0] if isinstance(out, list) and len(out) == 1 else out
        tests.append(TestRow("call", input=json.dumps(args), expected=encode_value(expected), subset=subset))
    return Normalized(source_id=str(rec["id"]), question=require(rec, "description", ctx), starter_code=starter,
                      entry_point=name, test_format="call", tests=tests, difficulty_label=rec.get("difficulty"))


# -- pytest / unittest -----------------------------------------------------------------------------------
@adapter("kodcode", "Apache-2.0 (demo; KodCode-V1 is CC-BY-NC-4.0)", "KodCode: instruction + pytest test_code")
def kodcode(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    test_code = require(rec, "test_code", ctx)
    match = re.search(r"from\s+solution\s+import\s+([\w, ()]+)", test_code)
    entry = match.group(1).strip("() ").split(",")[0].strip() if match else None
    meta = rec.get("metadata") or {}
    sid = f"{meta.get('mode', 'kodcode')}-{meta.get('prompt_id', ctx[1])}-{meta.get('row_id', '')}"
    return Normalized(
        source_id=sid, question=require(rec, "instruction", ctx), entry_point=entry, test_format="pytest",
        tests=[TestRow("pytest", code=t) for t in split_pytest(test_code)],
        programs=[ProgramRow(require(rec, "response", ctx))],
        metadata={"mode": meta.get("mode"), "pass_trial_num": rec.get("pass_trial_num")},
    )


@adapter("bigcodebench", "Apache-2.0", "BigCodeBench: instruct prompt + unittest TestCases (heavy libraries)")
def bigcodebench(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    code_prompt = require(rec, "code_prompt", ctx)
    return Normalized(
        source_id=require(rec, "task_id", ctx), question=require(rec, "instruct_prompt", ctx),
        starter_code=code_prompt, entry_point=rec.get("entry_point") or "task_func", test_format="unittest",
        tests=[TestRow("unittest", code=require(rec, "test", ctx))],
        programs=[ProgramRow(code_prompt + require(rec, "canonical_solution", ctx))],
        metadata={"libs": rec.get("libs")},
    )


@adapter("cruxeval", "MIT", "CRUXEval: function f + one `assert f(input) == output` (task: output prediction)")
def cruxeval(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    code = require(rec, "code", ctx)
    if not isinstance(rec.get("input"), str):  # "" is a valid input: f() takes no arguments
        raise input_error(ctx, "missing required field", "input")
    assertion = f"assert f({rec['input']}) == {require(rec, 'output', ctx)}"
    # the "question" is the function itself: an output-prediction task, kept out of code-generation views
    return Normalized(source_id=require(rec, "id", ctx), question=code, entry_point="f", test_format="assert",
                      tests=[TestRow("assert", code=assertion)], programs=[ProgramRow(code)],
                      metadata={"task": "output_prediction"})


# -- formats users bring ---------------------------------------------------------------------------------
@adapter("acecode", None, "AceCode-87K rows: question, test_cases (asserts), inferences (samples + pass rates)")
def acecode(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    asserts = require(rec, "test_cases", ctx, list)
    if not asserts:
        raise input_error(ctx, "no test cases", "test_cases")
    programs = []
    for i, inf in enumerate(rec.get("inferences") or []):
        if not isinstance(inf, dict) or not inf.get("completion"):
            raise input_error(ctx, f"inference {i} lacks a completion", "inferences")
        programs.append(ProgramRow(
            inf["completion"], origin="sample", model=inf.get("model_name"),
            sample_index=int(inf.get("completion_id", i)), raw_completion=inf["completion"],
            reported_pass_rate=inf.get("pass_rate"),
        ))
    return Normalized(source_id=str(require(rec, "id", ctx, (str, int))), question=require(rec, "question", ctx),
                      entry_point=called_function(asserts, None), test_format="assert",
                      tests=[TestRow("assert", code=a) for a in asserts], programs=programs,
                      metadata={"dataset_source": rec.get("source")})


@adapter("verl", None, "verl RL parquet: prompt messages + reward_model.ground_truth {inputs, outputs, fn_name}")
def verl(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    prompt = require(rec, "prompt", ctx, (list, str))
    if isinstance(prompt, list):
        users = [m.get("content") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            raise input_error(ctx, "no user message in prompt", "prompt")
        prompt = users[-1]
    truth = require(rec, "reward_model", ctx, dict).get("ground_truth")
    extra = rec.get("extra_info") or {}
    ours = bool(extra.get("problem_id"))   # a `factory export --format verl` row
    try:
        truth = json.loads(truth) if isinstance(truth, str) else truth
        if isinstance(truth, dict) and isinstance(truth.get("tests"), list):
            return _verl_factory_tests(rec, prompt, truth, extra, ctx)
        inputs, outputs = truth["inputs"], truth["outputs"]
    except (json.JSONDecodeError, TypeError, KeyError) as exc:
        raise input_error(ctx, f"ground_truth is not JSON with inputs/outputs or the factory's tests ({exc})",
                          "reward_model.ground_truth") from None
    if len(inputs) != len(outputs) or not inputs:
        raise input_error(ctx, f"{len(inputs)} inputs vs {len(outputs)} outputs", "reward_model.ground_truth")
    fn = truth.get("fn_name")
    if fn and ours:   # our outputs are sandbox tagged JSON already: written back exactly as the sandbox writes them
        tests = [TestRow("call", input=json.dumps(i), expected=tagged_json(o)) for i, o in zip(inputs, outputs)]
    elif fn:          # prime/TACO style: outputs wrapped in a one-element list
        tests = [TestRow("call", input=json.dumps(i if isinstance(i, list) else [i]),
                         expected=encode_value(o[0] if isinstance(o, list) and len(o) == 1 else o))
                 for i, o in zip(inputs, outputs)]
    else:
        tests = [TestRow("stdio", input=str(i), expected=str(o), comparison="token") for i, o in zip(inputs, outputs)]
    return Normalized(source_id=_verl_id(extra, ctx), question=_strip_factory_hints(prompt) if ours else prompt,
                      entry_point=fn, test_format="call" if fn else "stdio", tests=tests,
                      metadata={"data_source": rec.get("data_source"), "ability": rec.get("ability")})


def _verl_id(extra: dict, ctx: Ctx) -> str:
    return str(extra.get("source_id") or extra.get("index", ctx[1]))


_FACTORY_HINTS = re.compile(r"(\n\n(Start from this code:\n```python\n.*?\n```|Read the input from standard input and "
                            r"print the answer to standard output\.|Your code must define `[^`]*`\.))*\n\nWrite a "
                            r"complete Python solution in a single ```python code block\.$", re.S)


def _strip_factory_hints(prompt: str) -> str:
    """The question inside a prompt gold.problem_prompts wrote (the hints it appended are written again)."""
    return _FACTORY_HINTS.sub("", prompt) or prompt


def _verl_factory_tests(rec: dict, prompt: str, truth: dict, extra: dict, ctx: Ctx) -> Normalized:
    """A verl row whose ground truth carries the factory's own test list (assert / check / pytest / unittest /
    mixed suites): tests, entry point, preamble and format come back as they were exported."""
    tests = []
    for t in truth["tests"]:
        if not isinstance(t, dict) or t.get("kind") not in TEST_FORMATS:
            raise input_error(ctx, f"ground_truth test is not a factory test row: {str(t)[:80]}",
                              "reward_model.ground_truth")
        tests.append(TestRow(t["kind"], code=t.get("code"), input=t.get("input"), expected=t.get("expected"),
                             comparison=t.get("comparison") or "exact", atol=t.get("atol")))
    fmt = truth.get("test_format") or extra.get("test_format") or tests[0].kind
    return Normalized(source_id=_verl_id(extra, ctx), question=_strip_factory_hints(prompt), test_format=fmt,
                      tests=tests, entry_point=truth.get("entry_point"), test_preamble=truth.get("test_preamble"),
                      metadata={"data_source": rec.get("data_source"), "ability": rec.get("ability")})


@adapter("jsonl", None, "Any JSON/JSONL/Parquet with --map field=column (question, tests, id; optional "
         "solution, language (of the solution), entry_point, starter_code, difficulty, split) and --test-format", needs_mapping=True)
def mapped(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    mapping: dict = opts["mapping"]
    fmt = opts.get("test_format") or "assert"

    def get(field: str, required: bool = True, types=(str, int, list)):
        column = mapping.get(field)
        if column is None:
            return None
        if column not in rec:
            raise input_error(ctx, f"column {column!r} (--map {field}={column}) is not in the record; its columns: "
                              f"{', '.join(sorted(map(str, rec)))}", column)
        return require(rec, column, ctx, types) if required else rec.get(column)

    raw_tests = get("tests", types=(list, str, int, float) if fmt == "answer" else (list, str))
    raw_tests = raw_tests if isinstance(raw_tests, list) and fmt != "answer" else [raw_tests]
    tests = []
    for t in raw_tests:
        if fmt in ("assert", "check", "pytest", "unittest"):
            if not isinstance(t, str):
                raise input_error(ctx, f"{fmt} tests must be strings", mapping["tests"])
            pieces = split_check(t) if fmt == "check" else split_pytest(t) if fmt == "pytest" else [t]
            tests += [TestRow(fmt, code=p) for p in pieces]
        elif fmt == "stdio":
            tests.append(TestRow("stdio", input=_io(t, "input", ctx), expected=_io(t, "output", ctx), comparison="token"))
        elif fmt == "answer":   # SymBench / BBH style: the reference answer, checked by --answer-rule
            if isinstance(t, (dict, list)) or t is None or not str(t).strip():
                raise input_error(ctx, "answer tests must be a non-empty answer (text or number)", mapping["tests"])
            tests.append(TestRow("answer", expected=str(t), comparison=opts.get("answer_rule") or "exact"))
        else:
            if not isinstance(t, dict) or "input" not in t:
                raise input_error(ctx, "call tests must be objects with input (args list) and output", mapping["tests"])
            tests.append(TestRow("call", input=json.dumps(t["input"]),
                                 expected=encode_value(t["output"]) if "output" in t else None))
    solution = get("solution", required=False)
    language = get("language", required=False, types=(str,))
    if language is not None:
        from factory.sandbox.languages import UnknownLanguage, normalize
        try:
            language = normalize(language)
        except UnknownLanguage as exc:
            raise input_error(ctx, str(exc), mapping["language"]) from None
        if language != "python" and fmt != "stdio":
            raise input_error(ctx, f"a {language} solution needs --test-format stdio (other languages run stdin/stdout "
                              f"tests), not {fmt!r}", mapping["language"])
    return Normalized(
        source_id=str(get("id", types=(str, int))), question=get("question", types=str), test_format=fmt,
        tests=tests, starter_code=get("starter_code", required=False), entry_point=get("entry_point", required=False),
        difficulty_label=get("difficulty", required=False), split=get("split", required=False),
        programs=[ProgramRow(solution, language=language or "python")] if solution else [],
        metadata={"task": "answer", "answer_rule": opts.get("answer_rule") or "exact"} if fmt == "answer" else None,
    )


adapter("reasoning-gym", reasoning_gym.RG_LICENSE, "ReasoningGym tasks (`--tasks a,b --size N --seed S`): "
        "question + final answer checked by the task's own verifier")(reasoning_gym.convert)

MAPPED_FIELDS = {"question": True, "tests": True, "id": True, "solution": False, "entry_point": False,
                 "starter_code": False, "difficulty": False, "split": False, "language": False}  # field -> required


# -- known layouts of a data directory --------------------------------------------------------------------
@dataclass(frozen=True)
class KnownDataset:
    folder: str
    adapter: str
    files: tuple[str, ...]  # globs inside the folder
    source: str | None = None  # source label; None = adapter name (LeetCode: one source per file)
    aux: tuple[str, ...] = ()  # files beside the data that the adapter reads itself (not records)


KNOWN_DATASETS = (
    KnownDataset("humaneval", "humaneval", ("HumanEval.jsonl.gz",)),
    KnownDataset("humanevalplus", "humanevalplus", ("HumanEvalPlus.jsonl.gz",)),
    KnownDataset("mbpp", "mbpp", ("mbpp.jsonl",)),
    KnownDataset("mbpp_sanitized", "mbpp-sanitized", ("sanitized-mbpp.json",)),
    KnownDataset("mbppplus", "mbppplus", ("MbppPlus.jsonl.gz",)),
    KnownDataset("leetcodedataset", "leetcode", ("LeetCodeDataset-v0.2.0-train.jsonl.gz",), "leetcode-v0.2.0-train"),
    KnownDataset("leetcodedataset", "leetcode", ("LeetCodeDataset-v0.2.0-test.jsonl.gz",), "leetcode-v0.2.0-test"),
    KnownDataset("leetcodedataset", "leetcode", ("LeetCodeDataset-v0.3.1-test.jsonl.gz",), "leetcode-v0.3.1-test"),
    KnownDataset("codecontests_subset300", "codecontests", ("codecontests_subset300.jsonl",),
                 aux=("verify_reference_solutions.json",)),
    KnownDataset("apps_mapcoder150", "apps", ("selected150.jsonl",)),
    KnownDataset("kodcode_demo", "kodcode", ("Verified_KodCode_*_Complete.json",)),
    KnownDataset("bigcodebench", "bigcodebench", ("BigCodeBench.jsonl.gz",)),
    KnownDataset("cruxeval", "cruxeval", ("cruxeval.jsonl",)),
)


# files the shared dataset folders hold beside a dataset's own file, and what they are (`ingest --path FOLDER` says
# so when it skips them)
FOLDER_NOTES = {
    "HumanEvalPlus-Mini.jsonl.gz": "HumanEval+ mini: the same 164 problems with fewer plus inputs",
    "bigcodebench_hard.json": "BigCodeBench-Hard: 148 of the same tasks",
    "mbpp_sanitized_for_code_generation.jsonl": "CodeT's HumanEval-style copy of the same 427 problems "
                                                "(the humaneval adapter reads it)",
    "verify_reference_solutions.json": "the reference solutions' verification results, read beside the data",
}


def default_source_name(adapter_name: str, files: list[Path]) -> str:
    """Source label: the adapter name, except LeetCodeDataset files get version+split (one source per file) and
    user files (the jsonl adapter) get the first file's stem, so two different files never share a source."""
    if adapter_name == "jsonl" and files:
        name = files[0].name
        for ext in (".gz", ".jsonl", ".json", ".parquet"):
            name = name.removesuffix(ext)
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "jsonl"
    if adapter_name == "leetcode" and len(files) == 1:
        m = re.search(r"(v\d+\.\d+\.\d+)-(train|test)", files[0].name)
        if m:
            return f"leetcode-{m.group(1)}-{m.group(2)}"
    return adapter_name


def adapter_options(adapter_name: str, source: str, files: list[Path]) -> dict:
    """Per-source extras read from files beside the data (CodeContests' verification results, splits)."""
    opts: dict = {}
    if adapter_name == "leetcode":   # per file (see build_rows); a source named after its split keeps it
        opts["split"] = "train" if source.endswith("train") else "test" if source.endswith("test") else None
    if adapter_name == "codecontests":
        verify = files[0].parent / "verify_reference_solutions.json"
        if verify.is_file():
            opts["verified"] = {row[0]: [row[1], row[2]] for row in json.loads(verify.read_text())}
    return opts



# -- per-file splits and lineage ---------------------------------------------------------------------------
_SPLIT_WORD = re.compile(r"(?:^|[-_.])(train|test|valid|validation|dev|eval|benchmark)(?=[-_.]|$)", re.I)


def file_split(path: Path) -> str | None:
    """The split a file's name states (``LeetCodeDataset-v0.3.1-test.jsonl.gz`` -> test; ``train``; ``valid`` /
    ``validation`` / ``dev`` -> validation; ``eval`` / ``benchmark`` -> test), or None. A file that is a test
    split (or a benchmark) never contributes a train row: its split overrides what a record says."""
    found = _SPLIT_WORD.findall(path.name)
    if not found:
        return None
    word = found[-1].lower()
    return {"valid": "validation", "dev": "validation", "eval": "test", "benchmark": "test"}.get(word, word)


def lineage_id(adapter_name: str, norm: Normalized) -> str | None:
    """The task a record descends from, shared across the datasets derived from one benchmark: MBPP, sanitized
    MBPP and MBPP+ (``mbpp:<task id>``), HumanEval and HumanEval+ (``humaneval:<n>``), every LeetCodeDataset
    version (``leetcode:<slug>``: question ids are renumbered between versions, the slug is the stable key)."""
    sid = str(norm.source_id)
    if adapter_name in ("mbpp", "mbpp-sanitized") and sid.isdigit():
        return f"mbpp:{int(sid)}"
    prefix = {"mbppplus": "Mbpp", "humaneval": "HumanEval", "humanevalplus": "HumanEval"}.get(adapter_name)
    if prefix:
        m = re.fullmatch(rf"{prefix}/(\d+)", sid)
        return f"{prefix.lower()}:{int(m.group(1))}" if m else None
    return f"leetcode:{sid.strip().lower()}" if adapter_name == "leetcode" else None

