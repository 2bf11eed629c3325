"""Loaders for the real datasets under the shared data folder (read-only, never copied)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path


def jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def mbpp(d: Path) -> list[dict]:
    return jsonl(d / "mbpp" / "mbpp.jsonl")


def mbpp_sanitized(d: Path) -> list[dict]:
    return json.loads((d / "mbpp_sanitized" / "sanitized-mbpp.json").read_text(encoding="utf-8"))


def mbpp_plus(d: Path) -> list[dict]:
    return jsonl(d / "mbppplus" / "MbppPlus.jsonl.gz")


def humaneval(d: Path) -> list[dict]:
    return jsonl(d / "humaneval" / "HumanEval.jsonl.gz")


def humaneval_plus(d: Path) -> list[dict]:
    return jsonl(d / "humanevalplus" / "HumanEvalPlus.jsonl.gz")


def leetcode(d: Path, name: str) -> list[dict]:
    """``name``: "v0.2.0-train", "v0.2.0-test" or "v0.3.1-test"; adds ``statement``."""
    rows = jsonl(d / "leetcodedataset" / f"LeetCodeDataset-{name}.jsonl.gz")
    for r in rows:
        r["statement"] = r.get("problem_description") or r["query"].split(
            "Please complete the following python code")[0]
    return rows


def mbpp_plus_instruction(prompt: str) -> str:
    """The instruction line of an MBPP+ prompt (docstring minus the example assert)."""
    body = prompt.strip().strip('"').strip()
    return "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("assert")).strip()
