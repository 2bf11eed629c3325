"""`factory export NAME --format F --out DIR`: trainer datasets cut from a verified release.

Formats (files under DIR, plus export.json describing them):

- ``verl``: train.parquet / test.parquet (problems whose split is 'test'), verl RL rows: data_source, prompt
  (chat messages), ability='code', reward_model {style='rule', ground_truth=JSON}, extra_info.
- ``trl``: train.parquet (+ test.parquet for pairs of test problems) in TRL's *conversational* form:
  prompt=[user msg], chosen=[assistant msg], rejected=[assistant msg], margin=pass-rate difference.
- ``trl-grpo``: train.parquet / test.parquet prompt-only rows (prompt=[user msg]); the extra columns
  (ground_truth, entry_point, ...) reach GRPOTrainer reward functions as keyword arguments.
- ``openrlhf``: rm/train.parquet (+ rm/test.parquet) of chat-message pairs (prompt=[user], chosen/rejected=
  [assistant], margin; train with --data.prompt_key prompt --data.apply_chat_template) and
  prompts/train.parquet / prompts/test.parquet (``input`` = [user msg], ``label`` = JSON ground truth for a
  reward_func via --data.label_key label, ``datasource`` = source, the key OpenRLHF's PromptDataset reads).
- ``hf``: the release's views as a Hugging Face dataset folder: data/<config>/{train,test}-*.parquet and a
  README.md card whose configs name the splits; ``datasets.load_dataset(DIR, "rl_problems")`` gives train/test.
- ``acecode``: train.parquet shaped like TIGER-Lab/AceCode-87K: id, source, question, test_cases (assert
  strings; problems without assert/check tests are left out), inferences, context_messages.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from fnmatch import fnmatch
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from factory.errors import FactoryError
from factory.release.card import dataset_card
from factory.release.create import ANSWER_VIEWS
from factory.release.export_stream import iter_batches, streamable, write_streamed
from factory.release.locate import load_manifest
from factory.release.manage import verify_release
from factory.release.export_rows import RM_COLUMNS, check_truth, pair_rows, problem_rows, release_reward, user_turn
from factory.release.prompts import assert_cases, problem_prompt
from factory.streaming.background import Beside, read_ahead

FORMATS = ("verl", "trl", "trl-grpo", "openrlhf", "acecode", "hf")
MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
S, I, F = pa.string(), pa.int64(), pa.float64()
PAIR = [("prompt", MESSAGES), ("chosen", MESSAGES), ("rejected", MESSAGES), ("margin", F), ("pair_id", S)]

SCHEMAS: dict[str, dict[str, pa.Schema]] = {
    "verl": {"*.parquet": pa.schema([
        ("data_source", S), ("prompt", MESSAGES), ("ability", S),
        ("reward_model", pa.struct([("style", S), ("ground_truth", S)])),
        ("extra_info", pa.struct([("index", I), ("split", S), ("problem_id", S), ("source_id", S),
                                  ("entry_point", S), ("test_format", S), ("n_tests", I)]))])},
    "trl": {"*.parquet": pa.schema([*PAIR, ("problem_id", S)])},
    "trl-grpo": {"*.parquet": pa.schema([("prompt", MESSAGES), ("ground_truth", S), ("data_source", S),
                                         ("problem_id", S), ("entry_point", S), ("test_format", S),
                                         ("split", S)])},
    "openrlhf": {"rm/*.parquet": pa.schema(PAIR),
                 "prompts/*.parquet": pa.schema([("input", MESSAGES), ("label", S), ("datasource", S),
                                                 ("problem_id", S)])},
    "acecode": {"train.parquet": pa.schema([
        ("id", S), ("source", S), ("question", S), ("test_cases", pa.list_(S)),
        ("inferences", pa.list_(pa.struct([("model_name", S), ("completion_id", I), ("completion", S),
                                           ("pass_rate", F)]))),
        ("context_messages", MESSAGES)])},
}


def view_rows(path: Path, manifest: dict, view: str) -> list[dict] | None:
    """A released view's rows (dicts, primary-key order), or None when the release does not hold the view."""
    info = manifest["views"].get(view)
    if info is None:
        return None
    glob = path / "data" / info["config_name"] / "*.parquet"
    order = ", ".join(info["primary_key"]) or "ALL"
    with duckdb.connect() as con:
        cur = con.execute(f"SELECT * FROM read_parquet('{glob}') ORDER BY {order}")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


def _need(rows, view: str, fmt: str) -> list[dict]:
    if rows is None:
        raise FactoryError(f"--format {fmt} needs {view} in the release")
    return rows


def _by_split(rows: list[dict], problems: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {"train.parquet": [], "test.parquet": []}
    for r, p in zip(rows, problems):
        out["test.parquet" if p.get("split") == "test" else "train.parquet"].append(r)
    return {k: v for k, v in out.items() if v}   # no zero-row files: `datasets` cannot load them


def _acecode_rows(problems: list[dict], pairs: list[dict] | None, programs: list[dict] | None) -> list[dict]:
    inferences: dict[str, dict[str, dict]] = {}
    for p in pairs or []:
        for side in ("chosen", "rejected"):
            inferences.setdefault(p["problem_id"], {})[p[f"{side}_program_id"]] = {
                "model_name": p["model"], "completion": p[side], "pass_rate": p[f"{side}_pass_rate"]}
    for g in programs or []:
        if g.get("reported_pass_rate") is not None:
            inferences.setdefault(g["problem_id"], {}).setdefault(g["program_id"], {
                "model_name": g.get("model") or g["origin"], "completion": g["code"],
                "pass_rate": g["reported_pass_rate"]})
    out = []
    for p in problems:
        cases = assert_cases(p)
        if not cases:
            continue
        progs = inferences.get(p["problem_id"], {})
        prompt = problem_prompt(p)
        out.append({"id": p["problem_id"], "source": p["source"], "question": prompt, "test_cases": cases,
                    "inferences": [{**progs[k], "completion_id": i} for i, k in enumerate(sorted(progs))],
                    "context_messages": user_turn(prompt)})
    return out


def build_export(path: Path, manifest: dict, fmt: str) -> dict[str, list[dict]]:
    """{relative file: rows} for a format, read from a release folder."""
    for view in ANSWER_VIEWS:   # final-answer tasks (factory.answers.tasks), code first
        answers = view_rows(path, manifest, view)
        if answers is not None:
            from factory.answers.tasks import export_files
            rest = {**manifest, "views": {k: v for k, v in manifest["views"].items() if k != view}}
            code = {"gold.rl_problems", "gold.recipe_problems", "gold.rm_pairs", "gold.r1ci_tasks"} & set(rest["views"])
            return export_files(fmt, answers, manifest, build_export(path, rest, fmt) if code else None, view=view)
    problems = view_rows(path, manifest, "gold.rl_problems")
    if problems is None:   # a recipe's release (`factory recipe run`): the same RL rows, the recipe's tests
        problems = view_rows(path, manifest, "gold.recipe_problems")
    pairs = view_rows(path, manifest, "gold.rm_pairs")
    reward = release_reward(manifest)   # every ground truth carries it: the reward obeys it per item
    if fmt in ("verl", "trl-grpo"):
        problems = _need(problems, "gold.rl_problems", fmt)
        return _by_split(problem_rows(fmt, problems, reward), problems)
    if fmt == "trl":
        pairs = _need(pairs, "gold.rm_pairs", fmt)
        return _by_split(pair_rows(pairs), pairs)
    if fmt == "openrlhf":
        if problems is None and pairs is None:
            raise FactoryError("--format openrlhf needs gold.rm_pairs and/or gold.rl_problems in the release")
        out = {}
        if pairs is not None:   # chat messages: --data.prompt_key prompt --data.apply_chat_template
            rows = [{k: r[k] for k in RM_COLUMNS} for r in pair_rows(pairs)]
            out.update({f"rm/{k}": v for k, v in _by_split(rows, pairs).items()})
        if problems is not None:
            rows = problem_rows(fmt, problems, reward)
            out.update({f"prompts/{k}": v for k, v in _by_split(rows, problems).items()})
        return out
    if fmt == "acecode":
        problems = _need(problems, "gold.rl_problems", fmt)
        return {"train.parquet": _acecode_rows(problems, pairs, view_rows(path, manifest, "silver.programs"))}
    raise FactoryError(f"unknown export format {fmt!r} (one of: {', '.join(FORMATS)})")


def _schema_for(fmt: str, rel: str) -> pa.Schema:
    for pattern, schema in SCHEMAS[fmt].items():
        if fnmatch(rel, pattern):
            return schema
    raise FactoryError(f"{fmt} export has no schema for {rel}")


def export_release(name: str, fmt: str, out: str | os.PathLike, *, releases_dir=None,
                   validate: bool = True) -> dict:
    """Verify release NAME, write the format's files under OUT, validate them; returns export.json's content."""
    if fmt not in FORMATS:
        raise FactoryError(f"unknown export format {fmt!r} (one of: {', '.join(FORMATS)})")
    path, manifest = load_manifest(name, releases_dir)
    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()):
        raise FactoryError(f"--out {out} is not empty")
    streamed = fmt != "hf" and streamable(manifest, fmt)   # a batch at a time: memory bounded by one row group
    # the release's files are checked (sha256, rows) on a second thread while the export is built from them:
    # nothing is moved into place before the check passed, and its error is the one raised when both fail
    verified = Beside(verify_release, name, releases_dir=releases_dir, name="verify-release")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:  # written and validated aside, then moved into place: a failed export leaves nothing behind
        try:
            files = {} if fmt == "hf" or streamed else {rel: rows for rel, rows
                                                        in build_export(path, manifest, fmt).items() if rows}
            meta = {"format": fmt, "release": name, "snapshot_id": manifest["snapshot_id"], "files": {},
                    "reward": release_reward(manifest)}
            if set(ANSWER_VIEWS) & set(manifest["views"]):   # the answer reward their truths name
                from factory.answers.tasks import reward_kind
                meta["answer_reward"] = {"kind": reward_kind(manifest), "scored_by": "factory.reward.compute_score"
                                         " / trl_reward / reward_func -> factory.answers.r1ci.answer_reward"}
            if fmt == "hf":
                meta["files"], meta["configs"] = _write_hf(path, manifest, staging)
            if streamed:
                meta["files"] = write_streamed(path, manifest, fmt, staging, _schema_for)
            if fmt != "hf" and not (files or meta["files"]):
                raise FactoryError(f"release {name!r} has no rows for the {fmt} format (nothing written)")
        except Exception:
            verified.result()   # a release that fails its check: that error, not what its bytes caused
            raise
        verified.result()
        for rel, rows in files.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(rows, schema=_schema_for(fmt, rel)), target, compression="zstd")
            meta["files"][rel] = len(rows)
        (staging / "export.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        if validate:   # a streamed export's ground truths were checked row by row as they were written
            meta["validation"] = validate_export(staging, fmt, content=not streamed)
        if out.exists():
            out.rmdir()   # checked empty above
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return meta


def _write_hf(path: Path, manifest: dict, staging: Path) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The release's data files (already split into train-*/test-* per view) and its dataset card: a folder
    `datasets.load_dataset(folder, config)` reads, one config per view, with real train/test splits."""
    files, configs = {}, {}
    kept = {v: i for v, i in manifest["views"].items() if i["rows"]}
    for info in kept.values():
        for f in info["files"]:
            target = staging / f["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path / f["path"], target)
            files[f["path"]] = f["rows"]
        configs[info["config_name"]] = dict(info.get("splits") or {"train": info["rows"]})
    if not files:
        raise FactoryError(f"release {manifest['name']!r} has no rows (nothing to export)")
    (staging / "README.md").write_text(dataset_card({**manifest, "views": kept}))
    return files, configs


def _validate_hf(out: Path, meta: dict) -> dict:
    import datasets

    with tempfile.TemporaryDirectory() as cache:
        for config, splits in meta["configs"].items():
            ds = datasets.load_dataset(str(out), config, cache_dir=cache)
            got = {k: v.num_rows for k, v in ds.items()}
            if got != splits:
                raise FactoryError(f"hf export: config {config} loads as {got}, the release has {splits}")
    return {"files": meta["files"], "loader": "datasets (configs and splits from the card)"}


def validate_export(out: str | os.PathLike, fmt: str, content: bool = True) -> dict:
    """Check every file against the documented schema (pyarrow), decode every row group, and load it with
    `datasets` when installed. ``content``: also check every row's format rules (:func:`check_truth`; False
    where the writer already checked each row it wrote)."""
    out = Path(out)
    try:
        meta = json.loads((out / "export.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise FactoryError(f"{out} is not an export folder ({exc})") from None
    if meta.get("format") != fmt:
        raise FactoryError(f"{out} holds a {meta.get('format')!r} export, not {fmt!r}")
    if fmt == "hf":
        return _validate_hf(out, meta)
    result = {"files": {}, "loader": "pyarrow"}
    for rel, n in meta["files"].items():
        want = _schema_for(fmt, rel)
        pf = pq.ParquetFile(out / rel)   # read a batch at a time: an export can hold GBs of tests
        schema = pf.schema_arrow
        for field in want:
            if field.name not in schema.names:
                raise FactoryError(f"{rel}: column {field.name!r} missing ({fmt} format)")
            if schema.field(field.name).type != field.type:
                raise FactoryError(f"{rel}: column {field.name!r} is {schema.field(field.name).type}, "
                                   f"{fmt} expects {field.type}")
        if pf.metadata.num_rows != n:
            raise FactoryError(f"{rel}: {pf.metadata.num_rows} rows, export.json says {n}")
        start = 0
        for batch in read_ahead(iter_batches(out / rel), name="validate-export"):   # decoding overlaps the checks
            if content:
                _check_content(fmt, rel, pa.Table.from_batches([batch]), start)
            start += batch.num_rows
        result["files"][rel] = n
    loaded = _load_with_datasets(out, meta["files"])
    if loaded is not None:
        result["loader"] = "datasets"
        for rel, (n, expected, columns) in loaded.items():
            if n != expected or set(columns) != set(_schema_for(fmt, rel).names):
                raise FactoryError(f"{rel}: datasets loaded {n} rows with columns {columns}")
            if expected != meta["files"][rel]:
                result.setdefault("datasets_checked_rows", {})[rel] = expected
    return result


def _check_content(fmt: str, rel: str, table: pa.Table, start: int = 0) -> None:
    """Format rules beyond types: JSON ground truths parse, prompts are non-empty, tests exist (``table``: rows
    from row ``start`` of the file)."""
    col = {"trl-grpo": "ground_truth", "openrlhf": "label"}.get(fmt)   # verl's is in reward_model
    truths = ([r["ground_truth"] for r in table.column("reward_model").to_pylist()] if fmt == "verl" else
              table.column(col).to_pylist() if col in table.column_names else [])
    for i, t in enumerate(truths, start):
        check_truth(rel, i, json.loads(t))
    if fmt == "acecode":
        for i, cases in enumerate(table.column("test_cases").to_pylist(), start):
            if not cases:
                raise FactoryError(f"{rel} row {i}: no test_cases")


DATASETS_CHECK_ENV = "FACTORY_EXPORT_DATASETS_CHECK_MB"


def datasets_check_bytes() -> int:
    """How much of a file `datasets` loads to check it ($FACTORY_EXPORT_DATASETS_CHECK_MB, default 256 MB): its
    builder holds about the bytes it converts (3.5 GB for a 3 GB verl file), so a bigger file is checked on its
    first row groups up to this size; pyarrow has already checked every row group's schema and content."""
    raw = os.environ.get(DATASETS_CHECK_ENV, "256")
    try:
        mb = float(raw)
    except ValueError:
        raise FactoryError(f"${DATASETS_CHECK_ENV}={raw!r}: expected a number of MB") from None
    if mb <= 0:
        raise FactoryError(f"${DATASETS_CHECK_ENV}={raw!r}: expected a positive number of MB")
    return int(mb * 2 ** 20)


def _prefix_file(path: Path, limit: int, folder: Path) -> tuple[Path, int]:
    """``path`` itself when its row groups fit in ``limit`` bytes, else a copy of its first row groups up to
    ``limit`` (at least one) in ``folder``; returns (file, rows in it)."""
    pf = pq.ParquetFile(path)
    meta = pf.metadata
    if sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) <= limit:
        return path, meta.num_rows
    out, rows, size = folder / path.name, 0, 0
    with pq.ParquetWriter(out, pf.schema_arrow) as writer:
        for i in range(meta.num_row_groups):
            if i and size + meta.row_group(i).total_byte_size > limit:
                break
            writer.write_table(pf.read_row_group(i))
            rows += meta.row_group(i).num_rows
            size += meta.row_group(i).total_byte_size
    return out, rows


def _load_with_datasets(out: Path, files: dict[str, int]) -> dict | None:
    """{file: (rows loaded, rows expected, columns)} as `datasets.load_dataset('parquet')` reads them (a big
    file: its first row groups, see :func:`datasets_check_bytes`), or None without datasets."""
    try:
        import datasets
    except ImportError:
        return None
    limit = datasets_check_bytes()
    loaded = {}
    with tempfile.TemporaryDirectory() as cache:
        for rel in files:
            sample, rows = _prefix_file(out / rel, limit, Path(cache))
            ds = datasets.load_dataset("parquet", data_files={"train": str(sample)}, split="train",
                                       cache_dir=str(Path(cache) / "hf"))
            loaded[rel] = (ds.num_rows, rows, list(ds.column_names))
            if sample != out / rel:
                sample.unlink()
    return loaded
