"""`factory release create` / `reproduce`: freeze a lake snapshot into an immutable release folder.

Layout of ``RELEASES/NAME``::

    README.md                      dataset card (HF YAML front matter: one config per view)
    manifest.json                  snapshot id, per-file sha256 + rows, schema hashes, versions, licenses, runs
    data/<view>/part-00000.parquet shards in primary-key order
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import os
import uuid
from pathlib import Path

import duckdb

import factory
from factory.lake.catalog import Catalog, default_catalog, sql_references
from factory.errors import FactoryError
from factory.lake import connect, current_snapshot, resolve_lake_dir
from factory.release.locate import MANIFEST, check_name, load_manifest, resolve_releases_dir
from factory.release.card import dataset_card, decontamination_figures
from factory.release.files import (
    DEFAULT_SHARD_ROWS, READ_ROWS, ShardWriter, freeze, remove_tree, schema_hash, select_sql, sha256_file,
    view_dirname,
)
from factory.release.ordered import ordered_batches, sortable
from factory.lake.commit import config_hash, git_sha, stage_run, utcnow
from factory.lake.templating import DEFAULTS

README = "README.md"
FORMAT = "code-rl-factory/release/v1"


def check_views(views: list[str], catalog: Catalog) -> list[str]:
    if not views:
        raise FactoryError("name at least one --view (e.g. --view gold.rl_problems)")
    for v in views:
        catalog[v]  # raises FactoryError for an unknown view
    out = list(dict.fromkeys(views))
    dirs = [view_dirname(v) for v in out]
    if dup := {d for d in dirs if dirs.count(d) > 1}:
        raise FactoryError(f"views {out} share the folder name(s) {sorted(dup)}; release them separately")
    return out


def package_versions() -> dict:
    out = {"factory": factory.__version__}
    for pkg in ("duckdb", "pyarrow", "datasketch", "polars"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = None
    out["datasketch_scheme"] = _datasketch_scheme()
    return out


def _datasketch_scheme() -> str | None:
    """MinHash hash scheme in use: the constructor default, 'affine32' in datasketch 2.x."""
    try:
        from datasketch import MinHash
    except ImportError:
        return None
    default = inspect.signature(MinHash.__init__).parameters.get("scheme")
    if default is None:
        return "legacy"  # 1.x has no scheme parameter
    return default.default or "affine32"


def _source_licenses(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    return dict(con.execute("SELECT source, list(DISTINCT coalesce(license, 'unknown') ORDER BY coalesce(license, "
                            "'unknown')) FROM silver.problems GROUP BY source ORDER BY source").fetchall())


def _source_revisions(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """source -> the Hub revisions its bronze rows came from (hf-* ingests, docs/hub.md); {} for other lakes."""
    try:
        return dict(con.execute("SELECT source, list(DISTINCT source_revision ORDER BY source_revision) FROM "
                                "bronze.raw_records WHERE source_revision IS NOT NULL GROUP BY source ORDER BY source"
                                ).fetchall())
    except duckdb.Error:   # a lake made before the column
        return {}


def _curation(con: duckdb.DuckDBPyConnection) -> list[dict] | None:
    """The per-source funnel at the release's snapshot (None for a lake made before the exclusion views)."""
    from factory.release.funnel import curation_funnel
    try:
        return [{k: (int(v) if isinstance(v, int) else v) for k, v in r.items()} for r in curation_funnel(con)]
    except duckdb.Error:
        return None


ANSWER_VIEWS = ("gold.answer_tasks", "gold.r1ci_tasks")   # final-answer tasks: scored by their answer, not tests


def release_reward(con: duckdb.DuckDBPyConnection, recipe: dict | None, views=()) -> dict:
    """The reward spec `factory export` writes into every ground truth: the recipe's kind (binary = 1.0 only when
    every test passes, soft = the fraction passed; a plain release is soft) and which tests are reward tests
    (curate's ``reward_tests`` of the latest curate run: hidden, or all). A release of final-answer tasks only
    is binary on the final answer."""
    if views and set(views) <= set(ANSWER_VIEWS):
        return {"kind": "binary", "tests": "final answer"}

    spec = dict((recipe or {}).get("reward") or {})
    row = con.execute("SELECT config FROM ops.runs WHERE stage = 'curate' AND status = 'success' "
                      "ORDER BY finished_at DESC LIMIT 1").fetchone()
    overrides = (json.loads(row[0]) if row and row[0] else {}).get("overrides") or {}
    tests = spec.get("tests") or overrides.get("reward_tests") or DEFAULTS["reward_tests"]
    return {"kind": spec.get("kind") or "soft", "tests": str(tests),
            **({"source": spec["source"]} if spec.get("source") else {})}


def _stage_runs(con: duckdb.DuckDBPyConnection) -> list[dict]:
    rows = con.execute("SELECT run_id, stage, config_hash, git_sha, finished_at, row_counts::VARCHAR "
                       "FROM ops.runs WHERE status = 'success' ORDER BY started_at, run_id").fetchall()
    return [{"run_id": r[0], "stage": r[1], "config_hash": r[2], "git_sha": r[3],
             "finished_at": r[4].isoformat() if r[4] else None, "row_counts": json.loads(r[5] or "{}")} for r in rows]


def write_views(con: duckdb.DuckDBPyConnection, views: list[str], root: Path, shard_rows: int,
                catalog: Catalog, row_filters: dict | None = None) -> dict:
    """Write every view's shards under root/data; returns {view: {rows, columns, column_comments, schema_hash,
    files}} (column_comments: data_catalog.yaml's description of each column, for the manifest and the card; not
    in the Parquet files, whose bytes `reproduce` compares). ``row_filters`` {view: SQL predicate} releases only
    the matching rows of a view."""
    out = {}
    for view in views:
        spec = catalog[view]
        folder = root / "data" / view_dirname(view)
        columns, shards, splits = _write_view(con, spec, (row_filters or {}).get(view), folder, shard_rows, catalog)
        files = [{"path": s["path"].relative_to(root).as_posix(), "rows": s["rows"],
                  "bytes": s["path"].stat().st_size, "sha256": sha256_file(s["path"])} for s in shards]
        out[view] = {"config_name": view_dirname(view), "primary_key": list(spec.primary_key),
                     "rows": sum(f["rows"] for f in files), "columns": [list(c) for c in columns],
                     "column_comments": {c.name: c.comment for c in spec.columns if c.comment},
                     "schema_hash": schema_hash(columns), "files": files, "splits": splits}
    return out


# Views with a `split` column are written as train-*.parquet and test-*.parquet (split = 'test'; every other
# value, NULL included, is train), so `datasets` sees real splits; other views are one train split.
_SPLIT_RANK = ("__release_split", "CASE WHEN split = 'test' THEN 1 ELSE 0 END")   # train rows sort first
_SPLITS = ("train", "test")


def stored_sources(name: str, catalog: Catalog, seen: frozenset = frozenset()) -> set[str]:
    """The stored tables (written rows, or materialized from SQL) a catalog entry's rows come from: itself when
    it is one, else those of every entry its SQL reads."""
    spec = catalog[name]
    if spec.kind == "table":
        return {name}
    out: set[str] = set()
    for ref in sql_references(spec.sql_text()) - seen - {name}:
        if ref in catalog.tables:
            out |= stored_sources(ref, catalog, seen | {name})
    return out


def _write_view(con: duckdb.DuckDBPyConnection, spec, where: str | None, folder: Path,
                shard_rows: int, catalog: Catalog) -> tuple[list[tuple[str, str]], list[dict], dict]:
    """One view's shards: every split from one query in (split, primary key) order, cut where the split changes.
    Returns (columns, shards, {split: rows}); a split without rows has no file, an empty view is one empty train
    file."""
    _sql, columns = select_sql(con, spec, where)
    split = _SPLIT_RANK if "split" in dict(columns) else (_SPLIT_RANK[0], "0")   # no split column: all train
    sql, _ = select_sql(con, spec, where, first=split)
    types = dict(columns)
    if spec.primary_key and sortable([types.get(k, "") for k in spec.primary_key]):
        schema, reader = ordered_batches(con, sql.rsplit(" ORDER BY ", 1)[0], [split[0], *spec.primary_key],
                                         tables=stored_sources(spec.name, catalog))
    else:   # no key, or key types Arrow and Python may order differently from DuckDB: DuckDB's ORDER BY
        result = con.execute(sql).to_arrow_reader(READ_ROWS)
        schema, reader = result.schema, result
    rank = schema.get_field_index(_SPLIT_RANK[0])
    schema = schema.remove(rank)
    shards, splits = [], {}
    writer, current = None, None
    try:
        for batch in reader:
            ranks = batch.column(rank).to_numpy(zero_copy_only=False)
            batch = batch.drop_columns([_SPLIT_RANK[0]])
            start = 0
            while start < batch.num_rows:
                r = int(ranks[start])
                stop = start + int((ranks[start:] == r).argmin()) if (ranks[start:] != r).any() else batch.num_rows
                if r != current:
                    if writer is not None:
                        shards += writer.close()
                    writer, current = ShardWriter(folder, schema, shard_rows, prefix=_SPLITS[r]), r
                writer.write(batch.slice(start, stop - start))
                start = stop
        if writer is None:   # no rows: one empty train file
            writer = ShardWriter(folder, schema, shard_rows, prefix="train")
        shards += writer.close()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        getattr(reader, "close", lambda: None)()   # a sort's spill folder goes with its reader
    for s in shards:
        name = s["path"].name.rsplit("-", 1)[0]
        splits[name] = splits.get(name, 0) + s["rows"]
    return columns, shards, splits


def create_release(name: str, views: list[str], *, lake=None, releases_dir=None,
                   shard_rows: int = DEFAULT_SHARD_ROWS, catalog: Catalog | None = None,
                   row_filters: dict | None = None, recipe: dict | None = None) -> dict:
    """Freeze the current snapshot's views into RELEASES/NAME, record it in ops.releases; returns the manifest.

    ``row_filters`` {view: SQL predicate} keeps only matching rows (stored in the manifest's config, so
    `reproduce` applies them too); ``recipe`` (from `factory recipe run`) goes into the manifest and the card."""
    catalog = catalog or default_catalog()
    check_name(name)
    views = check_views(list(views), catalog)
    if shard_rows < 1:
        raise FactoryError("--shard-rows must be >= 1")
    lake_dir = resolve_lake_dir(lake)
    root = resolve_releases_dir(releases_dir, lake)
    final = root / name
    if final.exists():
        raise FactoryError(f"release {name!r} already exists at {final} (releases are immutable)")
    with connect(lake_dir, read_only=True) as probe:
        snap = current_snapshot(probe)
        if probe.execute("SELECT 1 FROM ops.releases WHERE name = ?", [name]).fetchone():
            raise FactoryError(f"release {name!r} is already recorded in ops.releases")

    row_filters = {v: row_filters[v] for v in views if row_filters and row_filters.get(v)}
    config = {"views": views, "shard_rows": shard_rows, "format": FORMAT,
              **({"row_filters": row_filters} if row_filters else {})}
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{name}.tmp-{uuid.uuid4().hex[:8]}"
    renamed = False
    try:
        with connect(lake_dir, snapshot=snap) as con:
            written = write_views(con, views, tmp, shard_rows, catalog, row_filters)
            manifest = {
                "format": FORMAT, "name": name, "created_at": utcnow().isoformat(timespec="seconds"),
                "snapshot_id": snap, "lake": str(lake_dir), "views": written, "config": config,
                "config_hash": config_hash(config), "git_sha": git_sha(), "packages": package_versions(),
                "source_licenses": _source_licenses(con), "source_revisions": _source_revisions(con),
                "stage_runs": _stage_runs(con), "curation": _curation(con),
                "reward": release_reward(con, recipe, views), "decontamination": decontamination_figures(con),
                **({"recipe": recipe} if recipe is not None else {}),
            }
        (tmp / README).write_text(dataset_card(manifest))
        readme = {"path": README, "rows": None, "bytes": (tmp / README).stat().st_size,
                  "sha256": sha256_file(tmp / README)}
        manifest["files"] = sorted([f for w in written.values() for f in w["files"]] + [readme],
                                   key=lambda f: f["path"])
        data = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        (tmp / MANIFEST).write_bytes(data)
        freeze(tmp)
        row = {"name": name, "snapshot_id": snap, "views": json.dumps(views), "path": str(final),
               "manifest_sha256": hashlib.sha256(data).hexdigest(),
               "row_counts": json.dumps({v: w["rows"] for v, w in written.items()}), "created_at": utcnow()}
        with stage_run("release", {**config, "name": name, "snapshot_id": snap}, lake=lake_dir,
                       catalog=catalog) as run:
            run.write("ops.releases", [row])
            run.summary = f"release {name} of snapshot {snap}"
            if final.exists():
                raise FactoryError(f"release {name!r} appeared at {final} while writing")
            os.rename(tmp, final)
            renamed = True
    except BaseException:
        remove_tree(final if renamed else tmp)
        raise
    return manifest


def reproduce_release(name: str, out: str | os.PathLike, *, lake=None, releases_dir=None) -> dict:
    """Re-read the release's views at its snapshot (time travel) into OUT and compare every data file's sha256.

    Returns {"identical": bool, "files": n, "mismatches": [...]}; needs the same duckdb/pyarrow versions.
    """
    _path, manifest = load_manifest(name, releases_dir)
    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()):
        raise FactoryError(f"--out {out} is not empty")
    views = list(manifest["views"])
    catalog = default_catalog()
    recorded = manifest.get("lake")
    if lake is None and recorded and Path(recorded).is_dir():
        lake = recorded  # --lake, else the lake the release was cut from, else $FACTORY_LAKE / ./lake
    with connect(lake, snapshot=int(manifest["snapshot_id"])) as con:
        written = write_views(con, views, out, int(manifest["config"]["shard_rows"]), catalog,
                              manifest["config"].get("row_filters"))
    expected = {f["path"]: f["sha256"] for v in manifest["views"].values() for f in v["files"]}
    produced = {f["path"]: f["sha256"] for v in written.values() for f in v["files"]}
    mismatches = sorted(p for p in expected.keys() | produced.keys() if expected.get(p) != produced.get(p))
    versions = {k: v for k, v in package_versions().items() if manifest["packages"].get(k) != v}
    return {"identical": not mismatches, "files": len(produced), "mismatches": mismatches,
            "snapshot_id": manifest["snapshot_id"], "version_differences": versions}
