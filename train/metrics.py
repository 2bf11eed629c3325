"""Metric records for the lake's ``train_metrics`` table: long format, one row per (step, split, metric)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable

KEYS = ("step", "epoch", "split")


def to_records(history: Iterable[dict], run_id: str, kind: str) -> list[dict]:
    """Melt wide per-step dicts into ``{run_id, kind, step, epoch, split, metric, value}`` rows (numeric only)."""
    out = []
    for row in history:
        base = {"run_id": run_id, "kind": kind, "step": int(row.get("step", 0)),
                "epoch": row.get("epoch"), "split": row.get("split", "train")}
        out += [{**base, "metric": name, "value": float(value)} for name, value in row.items()
                if name not in KEYS and isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(float(value))]
    return out


def write_metrics_json(records: list[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1))
    return path
