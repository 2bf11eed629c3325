"""`factory train rm|rl` and `factory eval bon`: training and evaluation read releases, never raw tables.

Metrics land in ops.train_metrics (one transaction per run); checkpoints in the output folder.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa

from eval.holdout import is_heldout  # noqa: F401  (re-exported)
from factory.errors import FactoryError
from factory.release.create import load_manifest
from factory.lake.commit import stage_run, utcnow


def release_view_dir(release: str, view: str, releases_dir=None) -> Path:
    """Folder holding a release's Parquet shards of one view (errors if the release lacks the view)."""
    root, manifest = load_manifest(release, releases_dir)
    views = manifest.get("views", {})
    if view not in views:
        raise FactoryError(f"release {release!r} has no {view} (it has: {', '.join(sorted(views)) or 'nothing'})")
    files = views[view]["files"]
    if not files:
        raise FactoryError(f"release {release!r}: {view} is empty")
    return (root / files[0]["path"]).parent


def metric_rows(records: list[dict], run_id: str) -> list[dict]:
    """Long-format trainer records -> ops.train_metrics rows (metric names carry their split)."""
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
    import pyarrow.parquet as pq

    from train.rm import train_rm

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


def run_eval_bon(lake=None, release: str = "", *, rm: str = "smollm2", holdout_fraction: float = 0.0,
                 ks: list[int] | None = None, max_problems: int | None = None, max_length: int = 512,
                 min_candidates: int = 4, releases_dir=None) -> list[dict]:
    """Best-of-N on a release's gold.bon_candidates (held-out problems only when holdout_fraction > 0).

    Every candidate is scored by the reward model `rm` (checkpoint dir or 'smollm2'); rows: greedy / average
    (pass@1) / bon (RM best-of-k, unbiased over the n candidates) / oracle (pass@k), as in AceCoder's tables.
    """
    import pyarrow.parquet as pq

    from eval.bon import bon_table
    from train.rm import score

    cands = pq.read_table(release_view_dir(release, "gold.bon_candidates", releases_dir)).to_pylist()
    if holdout_fraction > 0:
        cands = [c for c in cands if is_heldout(c["problem_id"], holdout_fraction)]
    per_problem: dict[str, int] = {}
    for c in cands:
        per_problem[c["problem_id"]] = per_problem.get(c["problem_id"], 0) + 1
    # best-of-N needs a choice: problems with fewer than min_candidates programs are left out
    problems = sorted(p for p, k in per_problem.items() if k >= min_candidates)
    if max_problems:
        problems = problems[:max_problems]
    keep = set(problems)
    cands = [c for c in cands if c["problem_id"] in keep]
    if not cands:
        raise FactoryError(f"release {release!r}: no best-of-N candidates to evaluate")
    config = {"release": release, "rm": rm, "holdout_fraction": holdout_fraction, "ks": ks,
              "max_problems": max_problems, "min_candidates": min_candidates}
    with stage_run("eval-bon", config, lake=lake) as run:
        scores = score([c["prompt"] + c["response"] for c in cands], model=rm, max_length=max_length)
        samples = [(c["problem_id"], c["program_id"], s, bool(c["passed"]), bool(c["is_greedy"]))
                   for c, s in zip(cands, scores)]
        rows = bon_table(samples, ks=ks)
        now = utcnow()
        run.write("ops.train_metrics", [
            {"run_id": run.run_id, "step": int(r["k"]), "metric": f"{r['method']}@{r['k']}", "value": r["value"],
             "split": "heldout", "logged_at": now} for r in rows])
        run.summary = json.dumps({"problems": len({c["problem_id"] for c in cands}), "candidates": len(cands),
                                  "rows": rows})
    return rows
