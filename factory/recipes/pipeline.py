"""A recipe's pipeline: an ordered graph of stage steps, each with its inputs and outputs named in
data_catalog.yaml terms, and whether a step's outputs are current.

This module only *declares* (no stage is imported here): what each step kind reads and writes, how a recipe's
``pipeline:`` list is read and validated, the graph (text and graphviz dot) and the lake state a step depends on.
The one runner that walks the steps and calls the stages is :mod:`factory.stages.recipe.pipeline`.

A step in a recipe file::

    pipeline:
      - stage: decontam                      # a registered step kind (STEP_KINDS) or any stage module with
        n: 9                                 # run_step(lake, **params) - then `inputs`/`outputs` are required
        name: decontam                       # optional, unique (default: the stage name)
        inputs: [silver.problems]            # optional: catalog tables/views it reads (default: the kind's)
        outputs: [silver.contamination]      # optional: catalog tables/views it writes (default: the kind's)
        source: "section 3.1: 9-gram overlap"

Currency: a step is *current* when the lake state of its inputs and outputs is the one recorded right after its
last run with the same configuration (``ops.pipeline_steps``). The state of a table is the id of the last stage
run that changed it (``ops.runs.row_counts``); a view stands for the tables its SQL reads; tables many stages
append to (``SHARED_OUTPUTS``) count as inputs only. A step whose state and configuration match is skipped, recorded.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from factory.errors import FactoryError
from factory.lake.commit import config_hash


@dataclass(frozen=True)
class StepKind:
    """What a kind of step reads and writes (catalog names) and where else its input or output lives."""
    kind: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    help: str
    external_in: str | None = None    # e.g. "--data-dir files"
    external_out: str | None = None   # e.g. "releases/NAME"


STEP_KINDS: dict[str, StepKind] = {}


def register_step_kind(kind: str, inputs, outputs, help: str, external_in: str | None = None,
                       external_out: str | None = None) -> None:
    """Declare a step kind (its runner is registered in factory.stages.recipe.pipeline, or is the stage
    module's ``run_step``)."""
    STEP_KINDS[kind] = StepKind(kind, tuple(inputs), tuple(outputs), help, external_in, external_out)


for _k in (
    ("ingest", (), ("bronze.raw_records", "silver.problems", "silver.tests", "silver.programs"),
     "the recipe's sources from --data-dir (unchanged files: no-op)", "--data-dir files"),
    ("dedup", ("silver.problems",), ("silver.signature_sets", "silver.minhash_bands", "silver.dedup_pairs",
                                     "silver.dedup_clusters"), "exact + MinHash-LSH near duplicates"),
    ("decontam", ("silver.problems", "silver.tests"), ("silver.contamination",),
     "n-gram / shared-test / lineage overlap with the benchmark sources"),
    ("dedup-embed", ("silver.problems",), ("silver.problem_embeddings", "silver.embedding_clusters"),
     "embedding-similarity dedup (needs the `embed` extra)"),
    ("hidden-tests", ("silver.problems", "silver.tests", "silver.programs"), ("silver.tests",),
     "hidden tests for public-only problems, expected outputs from the reference"),
    ("gentests", ("silver.problems", "silver.tests", "silver.programs"), ("silver.test_generators", "silver.tests",
                                                                          "silver.llm_calls"),
     "LLM-written input generators, outputs from the reference (test synthesis)"),
    ("synth", ("silver.problems",), ("silver.synth_attempts", "silver.tests", "silver.llm_calls"),
     "LLM-synthesised tests for problems without enough tests"),
    ("sample", ("silver.problems", "silver.tests"), ("silver.programs", "silver.llm_calls"),
     "n programs per problem from the recipe's named model (transformers / vllm / openai backend)"),
    ("execute", ("silver.programs", "silver.tests", "silver.checkers", "silver.time_limits"),
     ("silver.executions",), "references and the named models' samples in the sandbox (local or Ray)"),
    ("judge-quality", ("silver.problems",), ("silver.quality_votes", "silver.llm_calls"),
     "LLM-judge quality votes (needs judge models)"),
    ("curate", ("silver.problems", "silver.tests", "silver.executions", "silver.contamination",
                "silver.dedup_clusters", "silver.checkers"), ("gold.rl_problems", "gold.model_pass_rates", "gold.model_difficulty",
                                            "gold.clean_problems"),
     "score: pass rates, difficulty, exclusions (the recipe's curate parameters)"),
    ("filter", ("gold.rl_problems", "gold.clean_problems", "gold.model_pass_rates", "gold.model_difficulty",
                "silver.contamination", "silver.dedup_clusters"),
     ("gold.recipe_decisions", "gold.recipe_rules", "gold.recipe_problems"),
     "the recipe's rules in order (sql/rules), curriculum stages"),
    ("release", ("gold.recipe_problems", "gold.recipe_decisions", "gold.recipe_rules"), ("ops.releases",),
     "freeze the kept rows as NAME-<date> (and one release per curriculum stage)", None, "releases/NAME-<date>"),
    ("export", ("ops.releases",), (), "the release in a trainer's format, with the recipe's reward spec",
     "releases/NAME-<date>", "exports/NAME-<date>/FORMAT"),
):
    register_step_kind(*_k)

STEP_KEYS = {"stage", "name", "inputs", "outputs", "source"}


@dataclass
class Step:
    name: str
    stage: str
    params: dict
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    source: str | None = None
    external_in: str | None = None
    external_out: str | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "stage": self.stage, "params": self.params, "inputs": list(self.inputs),
                "outputs": list(self.outputs), "source": self.source}


def parse_step(raw, where: str, catalog=None) -> Step:
    """One `pipeline:` entry -> Step (validated: known stage, catalog names)."""
    from factory.lake.catalog import default_catalog
    from factory.recipes.preflight import installed

    if not isinstance(raw, dict) or not isinstance(raw.get("stage"), str):
        raise FactoryError(f"{where}: a step is a mapping with `stage: KIND` (one of {', '.join(STEP_KINDS)}, or "
                           "a stage module with run_step(lake, **params) and its `inputs:`/`outputs:`)")
    stage = raw["stage"]
    kind = STEP_KINDS.get(stage)
    if kind is None:
        if not installed(f"factory.stages.{stage.replace('-', '_')}"):
            raise FactoryError(f"{where}: unknown stage {stage!r}; registered steps: {', '.join(STEP_KINDS)} "
                               f"(or a module factory/stages/{stage.replace('-', '_')}.py with run_step)")
        if "inputs" not in raw or "outputs" not in raw:
            raise FactoryError(f"{where}: stage {stage!r} is not a registered step kind: give its `inputs:` and "
                               "`outputs:` (catalog tables/views) so the runner can tell whether it is current")
    catalog = catalog or default_catalog()
    io = {}
    for key in ("inputs", "outputs"):
        names = raw.get(key, getattr(kind, key, ()))
        if isinstance(names, str) or not isinstance(names, (list, tuple)):
            raise FactoryError(f"{where}: `{key}` must be a list of catalog tables/views")
        if unknown := [n for n in names if n not in catalog.tables]:
            raise FactoryError(f"{where}: {key} {unknown} are not declared in data_catalog.yaml")
        io[key] = tuple(names)
    name = raw.get("name", stage)
    if not isinstance(name, str) or not name:
        raise FactoryError(f"{where}: `name` must be a non-empty string")
    params = {k: v for k, v in raw.items() if k not in STEP_KEYS}
    return Step(name=name, stage=stage, params=params, inputs=io["inputs"], outputs=io["outputs"],
                source=raw.get("source"), external_in=getattr(kind, "external_in", None),
                external_out=getattr(kind, "external_out", None))


def parse_pipeline(raw_steps: list | None, prepare: list | None, where: str, models: list[str]) -> list[Step]:
    """The recipe's steps: its `pipeline:` list as written, or (older files with `prepare:`) ingest, the prepare
    stages, a sample step per named model, execute, curate, filter, release, export."""
    if raw_steps:
        steps = [parse_step(r, f"{where}: pipeline[{i}]") for i, r in enumerate(raw_steps)]
    else:
        raw = [{"stage": "ingest"}] + [dict(p) for p in (prepare or [])]
        raw += [{"stage": "sample", "name": f"sample-{i + 1}" if len(models) > 1 else "sample", "model": m}
                for i, m in enumerate(models)]
        raw += [{"stage": "execute", "models": list(models)}, {"stage": "curate"}, {"stage": "filter"},
                {"stage": "release"}, {"stage": "export"}]
        steps = [parse_step(r, f"{where}: prepare[{i}]") for i, r in enumerate(raw)]
    names = [s.name for s in steps]
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise FactoryError(f"{where}: pipeline step names must be unique, repeated: {dup} (give one a `name:`)")
    for needed in ("filter", "release"):
        if needed not in {s.stage for s in steps}:
            raise FactoryError(f"{where}: a pipeline needs a `{needed}` step")
    return steps


# -- the graph -------------------------------------------------------------------------------------------------
def edges(steps: list[Step]) -> list[tuple[str, str, str]]:
    """(producer step, consumer step, table) for each input a step reads that an earlier step writes (the latest
    such writer)."""
    out = []
    for i, step in enumerate(steps):
        for table in step.inputs:
            for prev in reversed(steps[:i]):
                if table in prev.outputs:
                    out.append((prev.name, step.name, table))
                    break
    return out


def graph_text(steps: list[Step], skipped: set[str] | None = None) -> str:
    """Each step in order: its stage, what it reads (and from which earlier step) and what it writes."""
    src = {}
    for a, b, t in edges(steps):
        src.setdefault(b, {})[t] = a
    lines = []
    for i, s in enumerate(steps, 1):
        params = ", ".join(f"{k}={json.dumps(v)}" for k, v in s.params.items())
        mark = "  [skipped: --skip]" if skipped and s.name in skipped else ""
        lines.append(f"{i:>2}. {s.name}" + (f" ({s.stage})" if s.stage != s.name else "")
                     + (f"  {params}" if params else "") + mark)
        reads = [f"{t} <- {src[s.name][t]}" if t in src.get(s.name, {}) else f"{t} (lake)" for t in s.inputs]
        if s.external_in:
            reads.insert(0, s.external_in)
        lines.append(f"      reads:  {', '.join(reads) or '-'}")
        writes = list(s.outputs) + ([s.external_out] if s.external_out else [])
        lines.append(f"      writes: {', '.join(writes) or '-'}")
        if s.source:
            lines.append(f"      source: {s.source}")
    return "\n".join(lines)


def graph_dot(steps: list[Step], name: str) -> str:
    """Graphviz dot of the step graph: one node per step, an edge per table handed from one step to the next."""
    q = json.dumps
    lines = [f"digraph {q(name)} {{", "  rankdir=LR;", "  node [shape=box];"]
    lines += [f"  {q(s.name)} [label={q(s.name + chr(10) + '(' + s.stage + ')')}];" for s in steps]
    lines += [f"  {q(a)} -> {q(b)} [label={q(t)}];" for a, b, t in edges(steps)]
    linked = {(a, b) for a, b, _ in edges(steps)}
    # order edges where no table links consecutive steps (dashed)
    lines += [f"  {q(prev.name)} -> {q(s.name)} [style=dashed];" for prev, s in zip(steps, steps[1:])
              if (prev.name, s.name) not in linked]
    return "\n".join(lines + ["}"])


# -- lake state ------------------------------------------------------------------------------------------------
def base_tables(names, catalog) -> list[str]:
    """Tables behind catalog names: a table is itself, a view the tables its SQL reads (recursively)."""
    out, seen = [], set()

    def visit(n):
        if n in seen or (spec := catalog.tables.get(n)) is None:
            return
        seen.add(n)
        if spec.kind == "table":   # a table, or a materialised transform: its own writes count, and what it reads
            out.append(n)
            if not spec.sql:
                return
        for d in spec.depends_on:
            visit(d)

    for n in names:
        visit(n)
    return sorted(set(out))


def last_changes(con) -> dict[str, str]:
    """{table: run id of the last successful stage run that changed it} from ops.runs.row_counts."""
    rows = con.execute("SELECT run_id, row_counts FROM ops.runs WHERE status = 'success' AND row_counts IS NOT NULL "
                       "ORDER BY started_at, finished_at, run_id").fetchall()
    last: dict[str, str] = {}
    for run_id, counts in rows:
        try:
            data = json.loads(counts) if isinstance(counts, str) else (counts or {})
        except ValueError:
            continue
        for table, c in data.items():
            if any(v for v in (c or {}).values()):
                last[table] = run_id
    return last


# tables several stages append to (ingest, sample, mutate, hidden-tests, synth, ...): another stage's rows there do
# not undo a step's own work, so as outputs they are not part of its state (as inputs they are)
SHARED_OUTPUTS = {"bronze.raw_records", "silver.programs", "silver.tests", "silver.llm_calls"}


def step_state(step: Step, last: dict[str, str], catalog, extra: dict | None = None) -> dict:
    """The lake state a step depends on: {table: last changing run} over its inputs and its own outputs (+ extra,
    e.g. the data dir's files)."""
    tables = sorted(set(base_tables(list(step.inputs), catalog))
                    | {t for t in base_tables(list(step.outputs), catalog) if t not in SHARED_OUTPUTS})
    return {**{t: last.get(t) for t in tables}, **(extra or {})}


def step_config_hash(step: Step, extra: dict | None = None) -> str:
    return config_hash({"stage": step.stage, "params": step.params, **(extra or {})})

