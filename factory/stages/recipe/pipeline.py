"""The one runner of a recipe's pipeline: walks the declared steps in order, asks each whether its outputs are
current, runs the stage otherwise (each stage commits through the one commit path), and records every step in
``ops.pipeline_steps``.

Stages never call each other; this module is the only place that knows the order (the recipe file says it) and
the only place that calls a stage for a recipe. A step kind's runner is ``fn(ctx, step) -> dict`` with
``summary`` (text) and optionally ``status`` (``idle`` when it had nothing to do); a stage that is not in
:data:`RUNNERS` runs through its module's ``run_step(lake, **params)`` (declare its inputs/outputs in the recipe,
or once with :func:`register_step`).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from factory.errors import FactoryError
from factory.recipes.pipeline import STEP_KINDS, Step, last_changes, register_step_kind, step_config_hash, step_state

# steps whose configuration includes the whole recipe (their output depends on every rule and threshold)
RECIPE_BOUND = ("curate", "filter", "release", "export")


@dataclass
class Context:
    recipe: object
    lake: object = None
    data_dir: str | None = None
    releases_dir: str | None = None
    export_dir: str | None = None
    date: str | None = None
    release: bool = True
    log: object = print
    decided: dict | None = None
    releases: list = field(default_factory=list)
    exports: list = field(default_factory=list)


RUNNERS: dict = {}


def register_step(kind: str, fn, inputs=(), outputs=(), help: str = "") -> None:
    """Make ``kind`` a step a recipe can name: ``fn(ctx, step) -> {summary, status?}``; inputs/outputs are
    catalog names (the default declaration of the kind)."""
    if kind not in STEP_KINDS:
        register_step_kind(kind, inputs, outputs, help)
    RUNNERS[kind] = fn


def _runner(stage: str):
    if stage in RUNNERS:
        return RUNNERS[stage]
    module = importlib.import_module(f"factory.stages.{stage.replace('-', '_')}")
    fn = getattr(module, "run_step", None)
    if fn is None:
        raise FactoryError(f"stage {stage!r} has no pipeline runner: add run_step(lake, **params) to "
                           f"{module.__name__} or register_step({stage!r}, ...) in factory.stages.recipe.pipeline")
    return lambda ctx, step: fn(ctx.lake, **step.params) or {}


def _candidates(ctx) -> list[str]:
    from factory.lake import connect

    r = ctx.recipe
    where = "WHERE source IN (SELECT unnest(?::VARCHAR[]))" if r.sources else ""
    with connect(ctx.lake, read_only=True) as con:
        return [x[0] for x in con.execute(f"SELECT problem_id FROM silver.problems {where} ORDER BY problem_id",
                                          [r.sources] if r.sources else []).fetchall()]


def data_files(data_dir, sources: list[str] | None) -> list:
    """(adapter, source, files) per known dataset under data_dir, only the recipe's sources when it names any."""
    from factory.ingest.adapters import KNOWN_DATASETS

    root = Path(data_dir)
    if not root.is_dir():
        raise FactoryError(f"--data-dir {root} does not exist")
    out = []
    for known in KNOWN_DATASETS:
        if sources and known.source not in sources:
            continue
        folder = root / known.folder
        if files := sorted(f for pattern in known.files for f in folder.glob(pattern)) if folder.is_dir() else []:
            out.append((known.adapter, known.source, files))
    return out


# -- the registered step kinds ------------------------------------------------------------------------------
def _ingest(ctx, step):
    from factory.stages.ingest import ingest_source

    data_dir = step.params.get("data_dir") or ctx.data_dir
    sources = step.params.get("sources") or ctx.recipe.sources or None
    if not data_dir:
        n = len(_candidates(ctx))
        return {"status": "idle", "summary": f"no --data-dir: the lake's {n} problems are the input "
                                             "(pass --data-dir DIR to ingest new or changed files)"}
    found = data_files(data_dir, sources)
    if not found:
        raise FactoryError(f"step {step.name}: no known dataset under {data_dir}"
                           + (f" for sources {sources}" if sources else ""))
    done = []
    for adapter, source, files in found:
        res = ingest_source(adapter, files, lake=ctx.lake, source=source)
        done.append(f"{res.source}: {res.status} {res.problems} problems")
    return {"summary": "; ".join(done)}


def _data_state(ctx, step) -> dict:
    data_dir = step.params.get("data_dir") or ctx.data_dir
    if not data_dir:
        return {"data_dir": None}
    h = hashlib.sha256()
    for _, source, files in data_files(data_dir, step.params.get("sources") or ctx.recipe.sources or None):
        for f in files:
            st = f.stat()
            h.update(f"{source}|{f.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return {"data_dir": h.hexdigest()[:16]}


def _dedup(ctx, step):
    from factory.stages.dedup import run_dedup

    return {"summary": _short(run_dedup(ctx.lake))}


def _decontam(ctx, step):
    from factory.stages.decontam import run_decontam

    p = step.params
    rep = run_decontam(ctx.lake, benchmarks=p.get("benchmarks"), n=int(p.get("n", 9)),
                       max_benchmark_df=p.get("max_benchmark_df"), rule=p.get("rule", "evidence"),
                       min_matches=int(p.get("min_matches", 1)))
    return {"summary": _short({k: rep.get(k) for k in ("checked", "contaminated_by_source", "contaminated_by_method")})}


def _reported(module: str, fn: str, **fixed):
    """A runner calling ``factory.stages.<module>.<fn>(lake, **fixed, **step.params)``; its report, shortened, is
    the summary."""
    def run(ctx, step):
        call = getattr(importlib.import_module(f"factory.stages.{module}"), fn)
        return {"summary": _short(call(ctx.lake, **fixed, **step.params))}
    return run


def _hidden_tests(ctx, step):
    from factory.stages.hidden_tests import run_hidden_tests

    rep = run_hidden_tests(ctx.lake, **step.params)
    return {"summary": f"{rep.get('tests_added')} tests added to {rep.get('problems_with_tests')} of "
                       f"{rep.get('problems')} public-only problems"}


def _judge(ctx, step):
    if not step.params.get("judges"):
        return {"status": "idle", "summary": "no judges configured: the quality rule reads the votes already stored"}
    return _reported("judge_quality", "run_quality_votes")(ctx, step)


SAMPLE_KEYS = ("backend", "model", "n", "temperature", "top_p", "max_tokens", "seed", "limit", "base_url",
               "budget_tokens", "budget_calls")


def _sample_model(params: dict) -> str | None:
    """The model id a sample step stores its programs under (silver.programs.model)."""
    model = params.get("model")
    if not model and params.get("backend", "transformers") in ("transformers", "hf"):
        from factory.generation.hf_backend import DEFAULT_MODEL
        return DEFAULT_MODEL
    return model


def sample_coverage(ctx, step) -> dict:
    """What the lake already holds for a sample step: {model, n, selected, missing}: ``missing`` lists the selected
    problems (the recipe's candidates, the first ``limit`` of them when set) with fewer than ``n`` programs of the
    step's model (silver.programs, origin 'sample': sampled here or brought with `factory execute --samples`)."""
    from factory.lake import connect

    p = step.params
    if extra := sorted(set(p) - set(SAMPLE_KEYS)):
        raise FactoryError(f"step {step.name}: unknown sample parameters {extra}; known: {', '.join(SAMPLE_KEYS)}")
    model, n, limit = _sample_model(p), int(p.get("n", 4)), p.get("limit")
    ids = _candidates(ctx)[: int(limit)] if limit else _candidates(ctx)
    with connect(ctx.lake, read_only=True) as con:
        have = dict(con.execute(
            "SELECT problem_id, count(*) FROM silver.programs WHERE origin = 'sample' AND model = ? "
            "AND problem_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY problem_id", [model, ids]).fetchall())
    return {"model": model, "n": n, "selected": len(ids), "missing": [i for i in ids if have.get(i, 0) < n]}


def _sample(ctx, step):
    from factory.stages.sample import run_sample

    cover = sample_coverage(ctx, step)
    p = {k: v for k, v in step.params.items() if k != "limit"}
    ids = cover["missing"]   # problems that already hold n samples of the model are not sampled again
    rep = run_sample(ctx.lake, problem_ids=ids, **p)
    kept = cover["selected"] - len(ids)
    return {"summary": f"model {cover['model']}: {rep['programs']} new programs for {rep['problems']} problems "
                       f"({rep['new_calls']} new calls, {rep['cached_calls']} from silver.llm_calls); "
                       f"extraction {rep['statuses']}"
                       + (f"; {kept} problems already had {cover['n']} samples in the lake" if kept else "")}


def _execute(ctx, step):
    from factory.sandbox import Limits
    from factory.stages.execute import execute

    p = dict(step.params)
    limits = Limits(cpu_s=float(p.get("cpu_s", 4.0)), memory_mb=int(p.get("memory_mb", 1024)))
    kw = {k: p[k] for k in ("workers", "engine", "ray_address") if k in p}
    sources = ctx.recipe.sources or None
    parts = []
    for selection, model in [("reference", None)] + [("samples", m) for m in dict.fromkeys(p.get("models") or [])]:
        rep = execute(ctx.lake, selection=selection, model=model, sources=sources, limits=limits, **kw)
        parts.append(f"{model or selection}: {rep.programs} programs run")
    return {"summary": "; ".join(parts)}


def _curate(ctx, step):
    from factory.stages.curate import curate

    counts = curate(ctx.lake, overrides={**ctx.recipe.curate, **step.params})
    return {"summary": f"gold.rl_problems {counts.get('gold.rl_problems', '?')} rows"}


def _filter(ctx, step):
    from factory.stages.recipe.decide import decide, rules_table

    ctx.decided = decide(ctx.recipe, ctx.lake)
    ctx.log(rules_table(ctx.decided["rules"]))
    record = {k: ctx.decided[k] for k in ("recipe", "recipe_hash", "content_hash", "run_id", "candidates", "kept",
                                          "rules", "stages", "unhealthy_sources")}
    return {"summary": json.dumps(record, sort_keys=True, default=str)}


def _release(ctx, step):
    from factory.stages.recipe.decide import cut_releases

    if not ctx.release:
        return {"status": "skipped", "summary": "--no-release"}
    before = set(ctx.releases)
    names = cut_releases(ctx.recipe, ctx.decided, lake=ctx.lake, releases_dir=ctx.releases_dir, date=ctx.date,
                         log=ctx.log)
    ctx.releases = names
    return {"summary": ", ".join(names) or "no release (the recipe keeps no problems)", "names": names,
            "reused": before}


def export_root(ctx) -> Path:
    from factory.release.locate import resolve_releases_dir

    chosen = ctx.export_dir or os.environ.get("FACTORY_EXPORTS")
    return Path(chosen) if chosen else resolve_releases_dir(ctx.releases_dir, ctx.lake).parent / "exports"


def _export(ctx, step):
    from factory.release.export import export_release

    if not ctx.release:
        return {"status": "skipped", "summary": "--no-release"}
    fmt = step.params.get("format", "verl")
    root = export_root(ctx)
    parts, ran = [], False
    for name in ctx.releases:
        out = root / name / fmt
        meta_path = out / "export.json"
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        if meta.get("release") != name:   # not exported yet (or another release's export there)
            meta = export_release(name, fmt, out, releases_dir=ctx.releases_dir)
            ran = True
        ctx.exports.append({"release": name, "format": fmt, "path": str(out), "reward": meta.get("reward"),
                            "files": meta.get("files")})
        parts.append(f"{name} -> {out} (reward {json.dumps(meta.get('reward'), sort_keys=True)})")
    if not ctx.releases:
        return {"status": "idle", "summary": "nothing released (the recipe keeps no problems)"}
    return {"status": "ran" if ran else "current", "summary": "; ".join(parts)}


RUNNERS.update({"ingest": _ingest, "dedup": _dedup, "decontam": _decontam,
                "dedup-embed": _reported("dedup_embed", "run_embedding_dedup", progress=False),
                "hidden-tests": _hidden_tests, "gentests": _reported("gentests", "run_gentests"),
                "synth": _reported("synth", "run_synth"), "judge-quality": _judge, "sample": _sample,
                "execute": _execute, "curate": _curate, "filter": _filter, "release": _release, "export": _export})


def _short(obj) -> str:
    text = json.dumps(obj, sort_keys=True, default=str) if not isinstance(obj, str) else obj
    return text if len(text) <= 300 else text[:297] + "..."


# -- time and memory per step ------------------------------------------------------------------------------
def _rss_mb() -> int | None:
    """This process's resident set now (Linux /proc), in MiB."""
    with contextlib.suppress(OSError), open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return None


class RssSampler:
    """The peak resident set of this process during one step: sampled every ``interval`` seconds by a daemon
    thread (the kernel's own high-water mark covers the whole process and is left alone, so `/usr/bin/time`
    still reports the run's peak). Where /proc is missing, the process's peak so far (getrusage)."""

    def __init__(self, interval: float = 0.2):
        import threading

        self.interval, self.peak = interval, _rss_mb() or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            now = _rss_mb()
            if now is not None and now > self.peak:
                self.peak = now

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        now = _rss_mb()
        return _max_rss_mb("RUSAGE_SELF") if now is None else max(self.peak, now)


def _max_rss_mb(who: str) -> int:
    """getrusage's peak RSS of ``who`` in MiB (macOS counts bytes, Linux KiB): RUSAGE_SELF, or RUSAGE_CHILDREN (the
    largest peak of any finished child process so far: sandbox workers, judges)."""
    import resource
    import sys

    rss = resource.getrusage(getattr(resource, who)).ru_maxrss
    return int(rss / (1024 * 1024 if sys.platform == "darwin" else 1024))


# -- the walk -----------------------------------------------------------------------------------------------
def _previous(con, stage: str, chash: str) -> dict | None:
    """The newest ran/current record of this stage with this configuration (any recipe)."""
    row = con.execute("SELECT state, summary FROM ops.pipeline_steps WHERE stage = ? AND config_hash = ? "
                      "AND status IN ('ran', 'current') ORDER BY recorded_at DESC LIMIT 1",
                      [stage, chash]).fetchone()
    return None if row is None else {"state": json.loads(row[0]) if isinstance(row[0], str) else row[0],
                                     "summary": row[1]}


def run_pipeline(ctx: Context, steps: list[Step], skip: dict) -> list[dict]:
    """Walk the steps; returns one record per step {position, step, stage, status, summary, seconds}. The
    records go to ops.pipeline_steps in one transaction at the end; when a step fails, the records of the steps
    that ran before it are still written (so the next run resumes from them) and the error propagates."""
    from factory.lake import connect
    from factory.lake.catalog import default_catalog
    from factory.lake.commit import utcnow

    catalog = default_catalog()
    recipe = ctx.recipe
    run_id = f"{recipe.name}-{utcnow():%Y%m%dT%H%M%S}-{os.urandom(3).hex()}"
    records, rows = [], []
    try:
        for pos, step in enumerate(steps, 1):
            bound = {"recipe_hash": recipe.hash} if step.stage in RECIPE_BOUND else {}
            if step.stage == "export":
                bound["export_root"] = str(export_root(ctx))
            chash = step_config_hash(step, bound)
            external = _data_state(ctx, step) if step.stage == "ingest" else None
            t0 = time.perf_counter()
            sampler = RssSampler()
            state: dict = {}
            if step.name in skip:
                rec = {"status": "skipped", "summary": skip[step.name]}
                ctx.log(f"step {step.name}: skipped ({skip[step.name]})")
            else:
                with connect(ctx.lake, read_only=True) as con:
                    state = step_state(step, last_changes(con), catalog, external)
                    prev = _previous(con, step.stage, chash)
                if same := [r for r in rows if r["stage"] == step.stage and r["config_hash"] == chash
                            and r["status"] in ("ran", "current")]:   # an earlier step of this run (not recorded yet)
                    prev = {"state": json.loads(same[-1]["state"]), "summary": same[-1]["summary"]}
                current = prev is not None and prev["state"] == state and step.stage not in ("release", "export")
                if current and step.stage == "filter":
                    ctx.decided = json.loads(prev["summary"])
                    ctx.log(f"step {step.name}: current (same recipe and lake state) - kept {ctx.decided['kept']} "
                            f"of {ctx.decided['candidates']}")
                    from factory.stages.recipe.decide import rules_table
                    ctx.log(rules_table(ctx.decided["rules"]))
                covered = None
                if not current and step.stage == "sample":
                    cover = sample_coverage(ctx, step)
                    if not cover["missing"]:
                        current = True
                        covered = (f"model {cover['model']} already has >= {cover['n']} samples for each of the "
                                   f"{cover['selected']} selected problems in the lake: not sampled again")
                        prev = {"summary": covered}
                        ctx.log(f"step {step.name}: current - {covered}")
                if current:
                    rec = {"status": "current", "summary": prev["summary"]}
                    if step.stage != "filter" and covered is None:
                        ctx.log(f"step {step.name}: current (same configuration and lake state since its last "
                                "run), not run again")
                else:
                    ctx.log(f"step {step.name} ({step.stage}): running")
                    rec = dict(_runner(step.stage)(ctx, step) or {})
                    rec.setdefault("status", "ran")
                    with connect(ctx.lake, read_only=True) as con:
                        state = step_state(step, last_changes(con), catalog, external)
                    if step.stage != "filter":
                        ctx.log(f"step {step.name}: {rec['status']} - {rec.get('summary', '')}")
            rec.update(position=pos, step=step.name, stage=step.stage, seconds=round(time.perf_counter() - t0, 2),
                       peak_rss_mb=sampler.stop())
            ctx.log(f"step {step.name}: {rec['status']} in {rec['seconds']:.1f} s, peak RSS {rec['peak_rss_mb']} MB "
                    f"(sandbox processes: {_max_rss_mb('RUSAGE_CHILDREN')} MB)")
            records.append(rec)
            rows.append({"pipeline_run_id": run_id, "recipe": recipe.name, "position": pos, "step": step.name,
                         "stage": step.stage, "status": rec["status"], "config_hash": chash,
                         "state": json.dumps(state, sort_keys=True), "inputs": json.dumps(list(step.inputs)),
                         "outputs": json.dumps(list(step.outputs)), "summary": str(rec.get("summary") or ""),
                         "seconds": rec["seconds"], "recorded_at": utcnow()})
    except BaseException:
        if any(r["status"] == "ran" for r in rows):
            _record(ctx, recipe, rows)
        raise
    _record(ctx, recipe, rows)
    return records


def _record(ctx, recipe, rows: list[dict]) -> None:
    from factory.lake.commit import stage_run

    with stage_run("recipe", {"recipe": recipe.name, "pipeline_run_id": rows[0]["pipeline_run_id"] if rows else None,
                              "steps": len(rows)}, lake=ctx.lake) as run:
        run.write("ops.pipeline_steps", rows)
        run.summary = f"{recipe.name} pipeline: " + ", ".join(f"{r['step']} {r['status']}" for r in rows)
