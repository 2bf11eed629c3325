"""`factory eval bon`: best-of-N with a reward model on a release's gold.bon_candidates."""
from __future__ import annotations

import json

from factory.errors import FactoryError


def run_eval_bon(lake=None, release: str = "", *, rm: str = "smollm2", holdout_fraction: float = 0.0,
                 ks: list[int] | None = None, max_problems: int | None = None, max_length: int = 512,
                 min_candidates: int = 4, releases_dir=None) -> list[dict]:
    """Best-of-N on a release's gold.bon_candidates (held-out problems only when holdout_fraction > 0).

    Every candidate is scored by the reward model `rm` (checkpoint dir or 'smollm2'); rows: greedy / average
    (pass@1) / bon (RM best-of-k, unbiased over the n candidates) / oracle (pass@k), as in AceCoder's tables.
    """
    from collections import Counter

    import pyarrow.parquet as pq

    from factory.lake.commit import stage_run, utcnow
    from factory.release.manage import release_view_dir
    from factory_eval.bon import bon_table
    from factory_eval.holdout import is_heldout
    from factory_train.rm import score

    cands = pq.read_table(release_view_dir(release, "gold.bon_candidates", releases_dir)).to_pylist()
    if holdout_fraction > 0:
        cands = [c for c in cands if is_heldout(c["problem_id"], holdout_fraction)]
    # best-of-N needs a choice: problems with fewer than min_candidates programs are left out
    problems = sorted(p for p, k in Counter(c["problem_id"] for c in cands).items() if k >= min_candidates)
    # every row on the same problems (bon_table): with greedy programs, only the problems that have one
    greedy = {c["problem_id"] for c in cands if c["is_greedy"]}
    if greedy & set(problems):
        problems = [p for p in problems if p in greedy]
    if max_problems:
        problems = problems[:max_problems]
    keep = set(problems)
    if not (cands := [c for c in cands if c["problem_id"] in keep]):
        raise FactoryError(f"release {release!r}: no best-of-N candidates to evaluate")
    config = {"release": release, "rm": rm, "holdout_fraction": holdout_fraction, "ks": ks,
              "max_problems": max_problems, "min_candidates": min_candidates}
    with stage_run("eval-bon", config, lake=lake) as run:
        scores = score([c["prompt"] + c["response"] for c in cands], model=rm, max_length=max_length)
        samples = [(c["problem_id"], c["program_id"], s, bool(c["passed"]), bool(c["is_greedy"]))
                   for c, s in zip(cands, scores)]
        rows = bon_table(samples, ks=ks)
        now = utcnow()
        run.write("ops.train_metrics", [{"run_id": run.run_id, "step": int(r["k"]), "metric": f"{r['method']}@{r['k']}",
                                         "value": r["value"], "split": "heldout", "logged_at": now} for r in rows])
        run.summary = json.dumps({"problems": len(problems), "candidates": len(cands), "rows": rows})
    return rows



def register(sub, add_lake) -> None:
    """Add `eval` to the `factory` parser."""
    evals = sub.add_parser("eval", help="evaluation on a release").add_subparsers(dest="eval_command", required=True)
    p = evals.add_parser("bon", help="best-of-N with a reward model (greedy / average / bon / oracle rows)")
    add_lake(p)
    p.add_argument("--release", required=True)
    p.add_argument("--releases-dir")
    p.add_argument("--rm", default="smollm2", help="reward model checkpoint dir (from `factory train rm`)")
    p.add_argument("--holdout-fraction", type=float, default=0.0)
    p.add_argument("--k", type=int, action="append", help="k values (default: powers of two)")
    p.add_argument("--max-problems", type=int)
    p.set_defaults(fn=cmd_eval_bon)


def cmd_eval_bon(args) -> None:
    rows = run_eval_bon(args.lake, args.release, rm=args.rm, holdout_fraction=args.holdout_fraction, ks=args.k,
                        max_problems=args.max_problems, releases_dir=args.releases_dir)
    print(f"{'method':<8} {'k':>3} {'value':>7} problems")
    for r in rows:
        print(f"{r['method']:<8} {r['k']:>3} {r['value']:>7.3f} {r['n_problems']}")
