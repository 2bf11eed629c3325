"""MultiPL-E (nuprl/MultiPL-E): HumanEval and MBPP translated to other languages, each problem judged by compiling
prompt + completion + test harness and running it (pass iff it exits 0).

A row (``name``, ``language`` (MultiPL-E's file extension: cpp, java, js, rs, py, ...), ``prompt``, ``doctests``,
``original``, ``prompt_terminology``, ``tests``: strings; ``stop_tokens``: a list of strings), read from the Hub
(one folder per config, ``<benchmark>-<language>/test-00000-of-00001.parquet``) or from the repository's JSON /
JSONL files, becomes a problem of test format ``harness`` in its language: its one test is the harness,
``starter_code`` is the prompt, and the stop tokens stay in the metadata to cut a continuation the way MultiPL-E
does (:mod:`factory.sandbox.multipl_e`). No solutions ship: known-correct programs come in as samples. Harness
verdicts are judged in the program's own process (``judged_in_process``, docs/languages.md). Rows are a benchmark:
split ``test``, lineage ``humaneval:<n>`` / ``mbpp:<n>`` (the Python original's task).
"""
from __future__ import annotations

import re
from dataclasses import replace

from factory.ingest.registry import Ctx, adapter
from factory.ingest.hub.adapters import HUB_DATASETS, HubDataset, hub_dataset
from factory.ingest.normalize import Normalized, TestRow, input_error, require
from factory.sandbox import multipl_e

BENCHMARKS = ("humaneval", "mbpp")
# MultiPL-E's file extensions the sandbox runs (factory.sandbox.multipl_e.LANGUAGES)
RUNNABLE = ("cpp", "java", "js", "rs", "py")
CONFIGS = {f"{b}-{lang}": (f"{b}-{lang}/*.parquet",) for b in BENCHMARKS for lang in RUNNABLE}
_LINEAGE = re.compile(r"^(HumanEval|mbpp)_(\d+)_", re.I)


def lineage(name: str) -> str | None:
    """``HumanEval_12_longest`` -> ``humaneval:12``; ``mbpp_3_is_not_prime`` -> ``mbpp:3`` (the Python task)."""
    m = _LINEAGE.match(name or "")
    return f"{m.group(1).lower()}:{int(m.group(2))}" if m else None


@hub_dataset(HubDataset(
    "hf-multipl-e", "nuprl/MultiPL-E", tuple(f"humaneval-{lang}/*.parquet" for lang in ("cpp", "java", "js", "rs")),
    configs=CONFIGS, bulky=("tests",), source="multipl-e", license="MIT",
    schema_from="nuprl/MultiPL-E dataset card dataset_info (name, language, prompt, doctests, original, "
                "prompt_terminology, tests: string; stop_tokens: list of string) and the repo's "
                "dataset_builder/prepare_prompts_*.py"),
    "MultiPL-E prompts + test harnesses in C++, Java, JavaScript, Rust (and Python): harness tests compiled with "
    "the completion, pass iff exit 0 (judged in process)")
def convert(rec: dict, ctx: Ctx, opts: dict) -> Normalized:
    name = require(rec, "name", ctx)
    published = require(rec, "language", ctx)
    try:
        lang = multipl_e.language_of(rec)
    except ValueError:
        raise input_error(ctx, f"MultiPL-E language {published!r} has no runtime in this sandbox (it runs "
                          f"{', '.join(RUNNABLE)}): ingest only those configs", "language") from None
    prompt = require(rec, "prompt", ctx)
    tests = require(rec, "tests", ctx)
    stops = rec.get("stop_tokens")
    if hasattr(stops, "tolist"):   # a parquet list read as an array
        stops = stops.tolist()
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise input_error(ctx, f"stop_tokens must be a list of non-empty strings, got {str(stops)[:80]}", "stop_tokens")
    meta = {"multipl_e": {"language": published, "stop_tokens": stops,
                          **{k: rec.get(k) for k in ("doctests", "prompt_terminology", "original")}}}
    if lineage(name):
        meta["lineage"] = lineage(name)
    return Normalized(source_id=name, question=prompt, starter_code=prompt, test_format="harness",
                      tests=[TestRow("harness", code=tests)], entry_point=multipl_e.function_name(prompt),
                      split="test", metadata=meta, language=lang)


# `ingest multipl-e --path FILE...`; an hf:// path or a folder in the Hub's layout goes to the Hub ingest (hf-multipl-e)
adapter("multipl-e", "MIT", "MultiPL-E rows from files (the repo's prompts/*.jsonl, a config's parquet): harness "
        "tests in C++/Java/JavaScript/Rust/Python; a folder in the Hub's layout or hf://datasets/nuprl/MultiPL-E"
        "[/CONFIG]: hf-multipl-e")(convert)
HUB_DATASETS["multipl-e"] = replace(HUB_DATASETS["hf-multipl-e"], adapter="multipl-e")
