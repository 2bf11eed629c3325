"""Read-side release commands: list, show, verify, diff."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from factory.errors import FactoryError
from factory.release.locate import MANIFEST, load_manifest
from factory.release.files import listed_files, sha256_file


def show_release(name: str, *, releases_dir=None) -> str:
    """Human summary of a release's manifest."""
    path, m = load_manifest(name, releases_dir)
    lines = [f"release {m['name']}  ({path})",
             f"  snapshot {m['snapshot_id']}  created {m['created_at']}  git {m.get('git_sha') or '-'}  "
             f"config {m['config_hash']}",
             "  packages: " + ", ".join(f"{k}={v}" for k, v in sorted(m["packages"].items()))]
    for view, info in m["views"].items():
        lines.append(f"  {view:<24} rows={info['rows']:<8} files={len(info['files']):<4} "
                     f"schema={info['schema_hash'][:12]}")
    lines.append("  licenses: " + "; ".join(f"{s}: {', '.join(l)}" for s, l in m["source_licenses"].items()))
    lines.append(f"  stage runs at snapshot: {len(m['stage_runs'])}")
    return "\n".join(lines)


def verify_release(name: str, *, releases_dir=None) -> dict:
    """Recompute sha256 and row counts of every file; raise FactoryError naming each problem file."""
    path, m = load_manifest(name, releases_dir)
    expected = {f["path"]: f for f in m["files"]}
    present = set(listed_files(path)) - {MANIFEST}
    problems = [f"{extra}: not in the manifest" for extra in sorted(present - expected.keys())]
    for rel, entry in sorted(expected.items()):
        f = path / rel
        if rel not in present:
            problems.append(f"{rel}: missing")
        elif f.stat().st_size != entry["bytes"] or sha256_file(f) != entry["sha256"]:
            problems.append(f"{rel}: sha256 differs from the manifest")
        elif entry["rows"] is not None and pq.ParquetFile(f).metadata.num_rows != entry["rows"]:
            problems.append(f"{rel}: {pq.ParquetFile(f).metadata.num_rows} rows, manifest says {entry['rows']}")
    if problems:
        raise FactoryError(f"release {name!r} failed verification:\n  " + "\n  ".join(problems))
    return {"name": name, "files": len(expected), "rows": sum(v["rows"] for v in m["views"].values())}


# columns that say where a row came from, not what it is: a row whose only difference is one of these is
# reported apart ("provenance only"), not as changed
PROVENANCE_COLUMNS = frozenset({"run_id", "created_at", "executed_at", "ingested_at", "logged_at"})


def diff_releases(a: str, b: str, *, releases_dir=None) -> dict:
    """Per view: rows added / removed / changed (by primary key, content columns) and rows whose provenance
    alone differs, plus schema changes, from release A to B. Both releases are verified first."""
    for name in (a, b):
        try:
            verify_release(name, releases_dir=releases_dir)
        except FactoryError as exc:
            raise FactoryError(f"cannot diff: release {name!r} does not verify: {exc}") from None
    pa_, ma = load_manifest(a, releases_dir)
    pb_, mb = load_manifest(b, releases_dir)
    out = {}
    with duckdb.connect() as con:
        for view in sorted(set(ma["views"]) | set(mb["views"])):
            ia, ib = ma["views"].get(view), mb["views"].get(view)
            if ia is None or ib is None:
                out[view] = {"status": "only in " + (b if ia is None else a), "rows": (ib or ia)["rows"]}
                continue
            out[view] = _diff_view(con, pa_, pb_, ia, ib)
    return out


def _diff_view(con: duckdb.DuckDBPyConnection, root_a: Path, root_b: Path, ia: dict, ib: dict) -> dict:
    cols_a, cols_b = dict(map(tuple, ia["columns"])), dict(map(tuple, ib["columns"]))
    schema = {"added": sorted(cols_b.keys() - cols_a.keys()), "removed": sorted(cols_a.keys() - cols_b.keys()),
              "retyped": sorted(c for c in cols_a.keys() & cols_b.keys() if cols_a[c] != cols_b[c])}
    key = ib["primary_key"] or ia["primary_key"]
    if not key or not set(key) <= cols_a.keys() & cols_b.keys():
        raise FactoryError(f"cannot diff: no shared primary key ({key})")
    common = [c for c in ia["columns"] if c[0] in cols_b and c[0] not in schema["retyped"]]
    content = [c for c, _ in common if c not in PROVENANCE_COLUMNS]
    provenance = [c for c, _ in common if c in PROVENANCE_COLUMNS]
    k = ", ".join(f'"{c}"' for c in key)

    def digest(columns: list[str]) -> str:
        if not columns:
            return "''"
        return "md5(to_json(struct_pack(" + ", ".join(f'"{c}" := "{c}"' for c in columns) + ")))"

    for side, root, info in (("ra", root_a, ia), ("rb", root_b, ib)):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {side} AS SELECT {k}, {digest(content)} AS h, "
                    f"{digest(provenance)} AS p FROM read_parquet('{root}/data/{info['config_name']}/*.parquet')")
    added, removed, changed, moved = con.execute(
        "SELECT count(*) FILTER (ra.h IS NULL), count(*) FILTER (rb.h IS NULL), count(*) FILTER (ra.h <> rb.h), "
        f"count(*) FILTER (ra.h = rb.h AND ra.p <> rb.p) FROM ra FULL JOIN rb USING ({k})").fetchone()
    return {"rows_a": ia["rows"], "rows_b": ib["rows"], "added": added, "removed": removed, "changed": changed,
            "provenance_only": moved, "provenance_columns": provenance,
            "schema_changed": ia["schema_hash"] != ib["schema_hash"], "schema": schema}


def release_view_dir(release: str, view: str, releases_dir=None) -> Path:
    """Folder holding a release's Parquet shards of one view (errors if the release lacks the view)."""
    root, manifest = load_manifest(release, releases_dir)
    views = manifest.get("views", {})
    if view not in views:
        raise FactoryError(f"release {release!r} has no {view} (it has: {', '.join(sorted(views)) or 'nothing'})")
    files = views[view]["files"]
    if not files:
        raise FactoryError(f"release {release!r}: {view} is empty")
    return (root / files[0]["path"]).parent
