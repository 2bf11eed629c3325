"""Bradley-Terry RM sweep on a release's real pairs: held-out pair accuracy (trained vs untrained head) and
best-of-N on held-out problems, per learning rate.

Problems are held out with the same rule as ``factory train rm --holdout-fraction`` / ``factory eval bon``, so the
RM never sees a held-out problem's pairs. Works on CPU (slow) and CUDA; reads only release Parquet files (no lake).

    python bench/rm_sweep.py --release-dir releases/rm-v1 --model smollm2 --device cuda --lr 1e-5 3e-5 1e-4

Prints a table and writes JSON (default bench/results/rm_sweep.json).
"""
from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from harness import parser, table, timed, write  # noqa: I001  (first: the repository on sys.path)

from factory_eval.bon import bon_table  # noqa: E402
from factory_eval.holdout import is_heldout  # noqa: E402
from factory_train.rm import load_reward_model, score, train_rm  # noqa: E402
from factory_train.rm.trainer import evaluate_pairs, tokenize_pairs  # noqa: E402


def _view_dir(release_dir: Path, view: str) -> Path | None:
    """Folder of a view's Parquet shards, from the release manifest (no lake or DuckDB needed)."""
    views = json.loads((release_dir / "manifest.json").read_text()).get("views", {})
    files = views.get(view, {}).get("files") or []
    return (release_dir / files[0]["path"]).parent if files else None


def _view(release_dir: Path, view: str) -> list[dict]:
    if (path := _view_dir(release_dir, view)) is None:
        raise SystemExit(f"{release_dir}: release has no {view} (cut it with --view {view})")
    return pq.read_table(path).to_pylist()


def run_one(train_path: Path, heldout: list[dict], cands: list[dict], lr: float, a) -> dict:
    torch.manual_seed(a.seed)  # the fresh score head: the same initial (untrained) RM for every learning rate
    load_s, (model, tok) = timed(load_reward_model, a.model, device=a.device)
    held_tok = tokenize_pairs(heldout, tok, a.max_length, "truncate")
    before = evaluate_pairs(model, held_tok, tok, a.batch_size)
    res = train_rm(train_path, model=model, tokenizer=tok, out_dir=tempfile.mkdtemp(), epochs=a.epochs, lr=lr,
                   batch_size=a.batch_size, max_length=a.max_length, eval_fraction=0.0, seed=a.seed, save=False,
                   overlong="truncate")
    after = evaluate_pairs(model, held_tok, tok, a.batch_size)
    row = {"lr": lr, "epochs": a.epochs, "steps": sum(h["split"] == "train" for h in res["history"]),
           "n_train_pairs": res["n_train"], "n_heldout_pairs": len(held_tok), "load_s": round(load_s, 2),
           "step_time_s": round(res["step_time_s"], 4), "heldout_acc_untrained": before["accuracy"],
           "heldout_acc_trained": after["accuracy"], "heldout_loss_trained": after["loss"]}
    if cands:
        scores = score([c["prompt"] + c["response"] for c in cands], model=model, tokenizer=tok,
                       batch_size=a.batch_size * 2, max_length=a.max_length)
        samples = [(c["problem_id"], c["program_id"], s, bool(c["passed"]), bool(c["is_greedy"]))
                   for c, s in zip(cands, scores)]
        row["bon"] = bon_table(samples, ks=a.ks)
    del model
    if a.device == "cuda":
        torch.cuda.empty_cache()
    return row


def main(argv=None) -> list[dict]:
    ap = parser(__doc__, "rm_sweep.json", {"--device": "cpu", "--epochs": 2, "--batch-size": 16, "--max-length": 512,
                                           "--holdout-fraction": 0.2, "--min-candidates": 4, "--seed": 0})
    ap.add_argument("--release-dir", required=True, help="a release directory (holds gold.rm_pairs, ...)")
    ap.add_argument("--model", default="smollm2", help="smollm2 | .gguf file | HF dir")
    ap.add_argument("--lr", type=float, nargs="+", default=[1e-5, 3e-5])
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8])
    a = ap.parse_args(argv)
    rel = Path(a.release_dir)
    pairs = _view(rel, "gold.rm_pairs")
    cols = ("problem_id", "prompt", "chosen", "rejected")  # no margin column: plain BT loss in both halves
    train = [{k: p[k] for k in cols} for p in pairs if not is_heldout(p["problem_id"], a.holdout_fraction)]
    heldout = [{k: p[k] for k in cols} for p in pairs if is_heldout(p["problem_id"], a.holdout_fraction)]
    train_path = Path(tempfile.mkdtemp()) / "train_pairs.parquet"
    pq.write_table(pa.Table.from_pylist([{k: p[k] for k in ("prompt", "chosen", "rejected")} for p in train]),
                   train_path)
    cands = []
    if _view_dir(rel, "gold.bon_candidates") is not None:
        cands = [c for c in _view(rel, "gold.bon_candidates") if is_heldout(c["problem_id"], a.holdout_fraction)]
        count = Counter(c["problem_id"] for c in cands)
        cands = [c for c in cands if count[c["problem_id"]] >= a.min_candidates]
    print(f"pairs: {len(train)} train / {len(heldout)} held-out "
          f"({len({p['problem_id'] for p in heldout})} problems); BoN candidates: {len(cands)} "
          f"on {len({c['problem_id'] for c in cands})} held-out problems", flush=True)
    rows = [run_one(train_path, heldout, cands, lr, a) for lr in a.lr]
    print("\n" + table(rows, ["lr", "steps", "step_time_s", "heldout_acc_untrained", "heldout_acc_trained"]))
    for r in rows:
        if r.get("bon"):
            print(f"\nbest-of-N on held-out problems, lr={r['lr']:.0e}")
            for b in r["bon"]:
                print(f"  {b['method']:<8} k={b['k']:<3} {b['value']:.3f}")
    meta = {"release_dir": str(rel), "model": a.model, "device": a.device, "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0) if a.device == "cuda" else None, "rows": rows}
    write(a.out, meta)
    return rows


if __name__ == "__main__":
    main()
