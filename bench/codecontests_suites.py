"""TPR / TNR of CodeContests' own test suites vs the factory's augmented suites, CodeContests+ style (#41).

Two measurements, each in a throwaway lake built through the factory's stages (the data files are only read):

1. **Real subset** (``../shared/data/codecontests_subset300``: 300 real CodeContests problems, 9-10 stdin/stdout
   tests and one Python reference each, no incorrect solutions). Only problems whose reference passes all its
   tests (``verify_reference_solutions.json``: 228) are used, and of those only the ones whose reference passes
   every test in the factory's sandbox too.
   - The dataset's own suite: its tests as shipped. ``public`` = the tests ingest finds in the statement (its
     examples), ``private`` = the rest; ``original`` = both.
   - Wrong programs: ``factory mutate`` AST mutants of the reference (the dataset ships no incorrect solution),
     executed on every test. A mutant is *wrong* when some valid test rejects it (the reference passes that test,
     the mutant does not); a mutant no test rejects is *undecided* (equivalent, or wrong where no test looks) and
     is left out of TNR. Correct programs: the references (TPR).
   - The factory's augmented tests: ``factory augment`` on the mutants that survive the original suite
     (shape-preserving stdin mutation of the dataset's inputs under the inputs' inferred contract, expected
     output from the reference, kept only when it kills a survivor; problems whose statement accepts several
     answers or a float within an error are skipped). ``factory gentests`` needs an LLM that writes generators:
     the only one on this machine (SmolLM2-135M) yields none (docs/test-generation.md), so no gentests here.
   - Suites: public, original, public+augmented, original+augmented; and the mutants the original suite accepts
     that augmented tests reject (misses of the dataset), listed with input / expected output for review.
2. **Hub-layout fixture** (``tests/ingest_hub/hubfixtures.py``: deepmind/code_contests parquet with labelled
   ``incorrect_solutions``): ingest, ``execute --select all``, mutate + execute mutants, augment, then the suites
   public / +private / +generated / +augmented on the labelled incorrect solutions.

    python bench/codecontests_suites.py [--problems 228] [--workers 2] [--out bench/results/codecontests_suites.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from factory.ingest.hub.suites import (AUGMENTED, DEFAULT_SUITES, UNLABELLED_SUITES,  # noqa: E402
                                       caught_only_by, suite_rates, valid_problems)
from factory.lake import connect  # noqa: E402
from factory.lake.commit import stage_run  # noqa: E402
from factory.sandbox import Limits  # noqa: E402
from factory.stages.augment import run_augment  # noqa: E402
from factory.stages.execute import execute  # noqa: E402
from factory.stages.ingest import ingest_source  # noqa: E402
from factory.stages.mutate import run_mutate  # noqa: E402
from factory.testgen.stdio_mutation import several_answers  # noqa: E402

SUBSET = "codecontests_subset300"


def eligible_records(data_dir: Path, n: int | None) -> list[dict]:
    """The subset's records whose reference passes every test (per the dataset's own verification file)."""
    folder = data_dir / SUBSET
    verified = {r[0]: (r[1], r[2]) for r in json.loads((folder / "verify_reference_solutions.json").read_text())}
    rows = [json.loads(line) for line in (folder / f"{SUBSET}.jsonl").open()]
    ok = [r for r in rows if verified.get(r["task_id"], (0, 1))[0] == verified.get(r["task_id"], (0, 1))[1]]
    return ok[:n] if n else ok


def init(lake: Path) -> Path:
    with stage_run("init", {}, lake=lake, create=True) as run:
        run.materialize()
    return lake


def build_subset_lake(lake: Path, records: list[dict], work: Path, *, mutants: int = 10, limits: Limits,
                      budget: int = 10, rounds: int = 4, per_round: int = 20, seed: int = 0,
                      workers: int | None = None, timings: dict | None = None) -> dict:
    """Ingest the records, execute references, mutate + execute mutants, augment; returns augment's report."""
    timings = timings if timings is not None else {}

    def step(name, fn, *a, **kw):
        t0 = time.time()
        out = fn(*a, **kw)
        timings[name] = round(time.time() - t0, 1)
        print(f"[{timings[name]:7.1f}s] {name}", file=sys.stderr, flush=True)
        return out

    path = work / f"{SUBSET}.jsonl"   # a slice of the real file, in the scratch folder
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    init(lake)
    step("ingest", ingest_source, "codecontests", [path], lake=lake)
    step("execute references", execute, lake, selection="reference", workers=workers, limits=limits)
    step("mutate", run_mutate, lake, None, max_per_program=mutants, seed=seed)
    step("execute mutants", execute, lake, selection="mutants", workers=workers, limits=limits)
    return augment_both(lake, step, budget=budget, seed=seed, rounds=rounds, per_round=per_round, limits=limits,
                        workers=workers)


def augment_both(lake: Path, step, **kw) -> dict:
    """`factory augment --public-only` (tests that kill the mutants the statement's examples miss: the factory's
    suite for a problem that ships only its examples: test class ``augment_public``), then `factory augment`
    (the mutants the whole original suite, and those tests, miss: class ``augment``). Returns both reports."""
    public = step("augment --public-only", run_augment, lake, None, public_only=True, **kw)
    full = step("augment", run_augment, lake, None, **kw)
    return {"public_only": public, "full": full}


# the suites compared: the dataset's own, and the factory's tests on top of the public ones or of all of them
SUITES = UNLABELLED_SUITES
HUB_SUITES = {**DEFAULT_SUITES, "public+augmented": UNLABELLED_SUITES["public+augmented"]}


def misses(con, source: str, problems: list[str]) -> list[dict]:
    """Mutants the original suite accepts and augmented tests reject, with the killing test for review."""
    found = caught_only_by(con, source, SUITES["original"], AUGMENTED, wrong=("mutant",), problems=problems)
    out = []
    for m in found:
        row = con.execute("""
            SELECT json_extract_string(p.metadata, '$.title'), g.metadata, t.input, t.expected, e.status,
                   (SELECT any_value(x.stdout) FROM silver.executions x
                    WHERE x.program_id = g.program_id AND x.test_id = t.test_id AND x.status = e.status)
            FROM silver.programs g JOIN silver.problems p USING (problem_id)
            JOIN gold.latest_executions e ON e.program_id = g.program_id
            JOIN silver.tests t ON t.test_id = e.test_id AND t.origin IN ('augment', 'gentests')
            WHERE g.program_id = ? AND e.status NOT IN ('pass', 'infra_error')
            ORDER BY t.ordinal LIMIT 1""", [m["program_id"]]).fetchone()
        title, meta, inp, expected, status, stdout = row
        out.append({**m, "title": title, "mutation": json.loads(meta or "{}").get("description"),
                    "input": inp[:600], "expected": expected[:300], "status": status,
                    "mutant_stdout": (stdout or "")[:300]})
    return out


def measure_subset(args, limits: Limits, timings: dict) -> dict:
    records = eligible_records(args.data_dir, args.problems)
    with tempfile.TemporaryDirectory(prefix="cc-suites-") as tmp:
        lake = args.lake or Path(tmp) / "lake"
        augment = build_subset_lake(lake, records, Path(tmp), mutants=args.mutants, limits=limits,
                                    budget=args.budget, rounds=args.rounds, per_round=args.per_round,
                                    seed=args.seed, workers=args.workers, timings=timings)
        con = connect(lake, read_only=True)
        try:
            problems = valid_problems(con, "codecontests")
            rates = suite_rates(con, "codecontests", SUITES, wrong=("mutant",), problems=problems)
            caught = misses(con, "codecontests", problems)
            # the factory's public+augmented suite against the dataset's private tests: what each catches alone
            only_private = caught_only_by(con, "codecontests", SUITES["public+augmented"], ("private",),
                                          wrong=("mutant",), problems=problems)
            only_aug_public = caught_only_by(con, "codecontests", SUITES["original"], ("augment_public",),
                                             wrong=("mutant",), problems=problems)
            counts = dict(zip(("problems", "mutants", "augment_tests", "problems_with_augment"), con.execute("""
                SELECT (SELECT count(*) FROM silver.problems), (SELECT count(*) FROM silver.programs
                WHERE origin = 'mutant' AND list_contains($p, problem_id)),
                (SELECT count(*) FROM silver.tests WHERE origin = 'augment' AND list_contains($p, problem_id)),
                (SELECT count(DISTINCT problem_id) FROM silver.tests WHERE origin = 'augment'
                 AND list_contains($p, problem_id))""", {"p": problems}).fetchone()))
        finally:
            con.close()
    counts["records"] = len(records)
    counts["reference_passes_all_here"] = len(problems)
    counts["several_answers_skipped"] = sum(1 for r in records if several_answers(r["description"]))
    counts["caught_by_private_not_public_augmented"] = len(only_private)
    counts["caught_by_public_augmented_not_original"] = len(only_aug_public)
    return {"counts": counts, "suites": rates, "augment": augment, "caught_only_by_augmented": caught}


def measure_fixture(args, limits: Limits, timings: dict) -> dict:
    from tests.ingest_hub import hubfixtures as fx
    with tempfile.TemporaryDirectory(prefix="cc-suites-hub-") as tmp:
        tmp = Path(tmp)
        cache = tmp / "hub"
        fx.write_hub_cache(cache, "deepmind/code_contests", {"data/train-00000-of-00001.parquet": fx.write_parquet(
            tmp / "s/train.parquet", fx.code_contests_rows(), fx.CODE_CONTESTS_SCHEMA)})
        os.environ["HF_HUB_CACHE"], os.environ["HF_HUB_OFFLINE"] = str(cache), "1"
        lake = init(tmp / "lake")
        t0 = time.time()
        ingest_source("hf-code-contests", ["hf://datasets/deepmind/code_contests"], lake=lake)
        execute(lake, selection="all", workers=args.workers, limits=limits)
        run_mutate(lake, None, max_per_program=args.mutants, seed=args.seed)
        execute(lake, selection="mutants", workers=args.workers, limits=limits)
        augment = augment_both(lake, lambda name, fn, *a, **kw: fn(*a, **kw), budget=args.budget, seed=args.seed,
                               rounds=args.rounds, per_round=args.per_round, limits=limits, workers=args.workers)
        execute(lake, selection="all", workers=args.workers, limits=limits)   # incorrect programs on new tests
        timings["hub fixture (all steps)"] = round(time.time() - t0, 1)
        con = connect(lake, read_only=True)
        try:
            rates = suite_rates(con, "code_contests", HUB_SUITES)
        finally:
            con.close()
    return {"suites": rates, "augment": augment}


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (key, title) in zip(axes, (("subset", "CodeContests subset: wrong = mutants (TNR)"),
                                       ("hub_fixture", "Hub-layout fixture: labelled incorrect (TNR)"))):
        rows = result[key]["suites"]
        names = [r["suite"] for r in rows]
        tnr = [r["tnr"] or 0 for r in rows]
        tpr = [r["tpr"] or 0 for r in rows]
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], tnr, 0.4, label="TNR")
        ax.bar([i + 0.2 for i in x], tpr, 0.4, label="TPR")
        for i, r in enumerate(rows):
            ax.text(i - 0.2, tnr[i] + 0.01, f"{tnr[i]:.3f}", ha="center", fontsize=7)
        ax.set_xticks(list(x), names, rotation=20, fontsize=8)
        ax.set_ylim(0, 1.1)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def print_table(result: dict) -> None:
    for key in ("subset", "hub_fixture"):
        print(f"\n{key}")
        print(f"{'suite':<28}{'tests':>7}{'correct':>9}{'TPR':>7}{'wrong':>8}{'TNR':>8}")
        for r in result[key]["suites"]:
            tpr = f"{r['tpr']:.3f}" if r["tpr"] is not None else "-"
            tnr = f"{r['tnr']:.3f}" if r["tnr"] is not None else "-"
            print(f"{r['suite']:<28}{r['tests']:>7}{r['correct']:>9}{tpr:>7}{r['incorrect']:>8}{tnr:>8}")
    s = result["subset"]
    print(f"\nsubset: {json.dumps(s['counts'])}; undecided mutants {s['suites'][0].get('undecided')}; "
          f"caught only by augmented tests: {len(s['caught_only_by_augmented'])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path,
                    default=Path(os.environ.get("FACTORY_SHARED_DATA", ROOT.parent / "shared" / "data")))
    ap.add_argument("--problems", type=int, help="first N eligible problems (default: all 228)")
    ap.add_argument("--mutants", type=int, default=10, help="mutants per reference (factory mutate)")
    ap.add_argument("--cpu-s", type=float, default=2.0, help="CPU seconds per test (all programs)")
    ap.add_argument("--budget", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--per-round", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--lake", type=Path, help="the subset's lake folder, kept (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "codecontests_suites.json")
    args = ap.parse_args()
    limits = Limits(cpu_s=args.cpu_s)
    timings: dict[str, float] = {}
    result = {"settings": {k: str(v) for k, v in vars(args).items() if k != "out"}, "limits": limits.as_dict(),
              "load_average_start": os.getloadavg()}
    result["hub_fixture"] = measure_fixture(args, limits, timings)
    result["subset"] = measure_subset(args, limits, timings)
    result["timings_s"] = timings
    result["load_average_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str))
    plot(result, args.out.with_suffix(".png"))
    print_table(result)
    print(f"\nwrote {args.out} and {args.out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
