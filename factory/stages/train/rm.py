"""`factory train rm`: a Bradley-Terry reward model on a release's gold.rm_pairs (releases, never raw tables).

Metrics land in ops.train_metrics (one transaction per run); checkpoints in the output folder.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from factory.errors import FactoryError


def metric_rows(records: list[dict], run_id: str) -> list[dict]:
    """Long-format trainer records -> ops.train_metrics rows (metric names carry their split)."""
    from factory.lake.commit import utcnow

    now = utcnow()
    rows: dict[tuple, dict] = {}
    for r in records:
        split = r.get("split") or "train"
        name = r["metric"] if split == "train" else f"{split}/{r['metric']}"
        value = float(r["value"])
        rows[(r["step"], name)] = {"run_id": run_id, "step": int(r["step"]), "metric": name,
                                   "value": value if math.isfinite(value) else None, "split": split,
                                   "logged_at": now}
    return list(rows.values())


def _print_step(row: dict) -> None:
    """Progress line per RM step / evaluation."""
    keys = ("loss", "accuracy", "margin", "step_time_s")
    parts = " ".join(f"{k}={row[k]:.4f}" for k in keys if isinstance(row.get(k), (int, float)))
    print(f"[rm] {row.get('split', 'train'):<5} step {row.get('step', 0):>4} {parts}", flush=True)


def run_train_rm(lake=None, release: str = "", *, model: str = "smollm2", out_dir: str | None = None,
                 epochs: int = 1, max_steps: int | None = None, batch_size: int = 4, max_length: int = 512,
                 lr: float = 1e-5, eval_fraction: float = 0.2, seed: int = 0, holdout_fraction: float = 0.0,
                 releases_dir=None, train_top_layers: int | None = None) -> dict:
    """Train a Bradley-Terry RM on a release's gold.rm_pairs; metrics -> ops.train_metrics.

    Problems selected by `is_heldout(problem_id, holdout_fraction)` are kept out of training entirely (for
    best-of-N evaluation); `eval_fraction` is the trainer's own held-out split of the remaining pairs.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from factory.lake.commit import stage_run
    from factory.release.manage import release_view_dir
    from factory_eval.holdout import is_heldout
    from factory_train.rm import train_rm

    pairs_dir = release_view_dir(release, "gold.rm_pairs", releases_dir)
    config = {"release": release, "model": model, "epochs": epochs, "max_steps": max_steps, "batch_size": batch_size,
              "max_length": max_length, "lr": lr, "eval_fraction": eval_fraction, "seed": seed,
              "holdout_fraction": holdout_fraction, "train_top_layers": train_top_layers}
    with stage_run("train-rm", config, lake=lake) as run:
        out = Path(out_dir or f"runs/{run.run_id}")
        out.mkdir(parents=True, exist_ok=True)
        pairs = pq.read_table(pairs_dir)
        keep = [not is_heldout(p, holdout_fraction) for p in pairs["problem_id"].to_pylist()]
        pairs = pairs.filter(pa.array(keep))
        if pairs.num_rows == 0:
            raise FactoryError(f"release {release!r} has no training pairs after the hold-out")
        pairs_path = out / "train_pairs.parquet"
        pq.write_table(pairs.select(["prompt", "chosen", "rejected"]), pairs_path)
        result = train_rm(pairs_path, model=model, out_dir=out, epochs=epochs, lr=lr, batch_size=batch_size,
                          max_length=max_length, eval_fraction=eval_fraction, seed=seed, max_steps=max_steps,
                          run_id=run.run_id, log_fn=_print_step, train_top_layers=train_top_layers)
        run.write("ops.train_metrics", metric_rows(result["metrics"], run.run_id))
        summary = {"release": release, "checkpoint": result["checkpoint"], "n_train": result["n_train"],
                   "n_eval": result["n_eval"], "step_time_s": result["step_time_s"],
                   "heldout_accuracy": result["eval"].get("accuracy"),
                   "untrained_accuracy": result["eval_untrained"].get("accuracy")}
        run.summary = json.dumps(summary)
    summary["run_id"] = run.run_id
    return summary
