"""Read-side release commands: list, show, verify, diff."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from factory.errors import FactoryError
from factory.lake import connect
from factory.release.create import MANIFEST, load_manifest, resolve_releases_dir
from factory.release.files import listed_files, sha256_file


def list_releases(*, lake=None, releases_dir=None) -> list[dict]:
    """Releases recorded in ops.releases plus folders under the releases dir; `where` says which."""
    out: dict[str, dict] = {}
    try:
        con = connect(lake, read_only=True)
    except FactoryError:
        con = None
    if con is not None:
        try:
            for name, snap, views, path, rows, created in con.execute(
                    "SELECT name, snapshot_id, views::VARCHAR, path, row_counts::VARCHAR, created_at "
                    "FROM ops.releases ORDER BY created_at, name").fetchall():
                out[name] = {"name": name, "snapshot_id": snap, "views": json.loads(views), "path": path,
                             "row_counts": json.loads(rows), "created_at": str(created), "where": "lake"}
        finally:
            con.close()
    try:
        root = resolve_releases_dir(releases_dir, lake)
    except FactoryError:   # no lake named and no releases folder: only what a lake recorded (none here)
        root = None
    if root is not None and root.is_dir():
        for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if d.name in out:
                out[d.name]["where"] = "lake+dir"
                continue
            try:
                m = json.loads((d / MANIFEST).read_text())
            except (OSError, json.JSONDecodeError):
                m = {}
            out[d.name] = {"name": d.name, "snapshot_id": m.get("snapshot_id"), "views": list(m.get("views", {})),
                           "path": str(d), "row_counts": {v: i["rows"] for v, i in m.get("views", {}).items()},
                           "created_at": m.get("created_at"), "where": "dir"}
    return list(out.values())


def locate_release(name: str, releases_dir=None, lake=None) -> Path:
    """The folder of release ``name``: RELEASES/NAME (--releases-dir, $FACTORY_RELEASES, the user config, else
    LAKE/releases), else the folder the lake's ops.releases recorded for it -- wherever `factory release list`
    finds it. Unknown: an error listing the known releases, the closest name and the ways to name another folder."""
    from factory.errors import unknown

    try:
        root = resolve_releases_dir(releases_dir, lake)
    except FactoryError:
        root = None
    if root is not None and (root / name).is_dir():
        return root / name
    known = list_releases(lake=lake, releases_dir=releases_dir)
    for r in known:
        if r["name"] == name and r.get("path") and Path(r["path"]).is_dir():
            return Path(r["path"])
    where = f"looked in {root / name}" if root is not None else "no lake or releases folder named"
    found = [f"{r['name']} ({r['path']})" if r["name"] == name else r["name"] for r in known]
    msg = unknown("release", name, [r["name"] for r in known], none_hint="`factory release create`")
    if any(r["name"] == name for r in known):
        msg = f"release {name!r} is recorded in the lake but its folder is gone ({', '.join(found)})"
    raise FactoryError(f"{msg}; {where}; name the folder with --releases-dir DIR (or $FACTORY_RELEASES) "
                       f"or the lake that recorded it with --lake DIR")


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
    problems = []
    expected = {f["path"]: f for f in m["files"]}
    present = set(listed_files(path)) - {MANIFEST}
    for extra in sorted(present - expected.keys()):
        problems.append(f"{extra}: not in the manifest")
    for rel, entry in sorted(expected.items()):
        f = path / rel
        if rel not in present:
            problems.append(f"{rel}: missing")
            continue
        if f.stat().st_size != entry["bytes"] or sha256_file(f) != entry["sha256"]:
            problems.append(f"{rel}: sha256 differs from the manifest")
            continue
        if entry["rows"] is not None and pq.ParquetFile(f).metadata.num_rows != entry["rows"]:
            problems.append(f"{rel}: {pq.ParquetFile(f).metadata.num_rows} rows, manifest says {entry['rows']}")
    if problems:
        raise FactoryError(f"release {name!r} failed verification:\n  " + "\n  ".join(problems))
    return {"name": name, "files": len(expected), "rows": sum(v["rows"] for v in m["views"].values())}


def _glob(path: Path, info: dict) -> str:
    return str(path / "data" / info["config_name"] / "*.parquet")


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
    con = duckdb.connect()
    try:
        for view in sorted(set(ma["views"]) | set(mb["views"])):
            ia, ib = ma["views"].get(view), mb["views"].get(view)
            if ia is None or ib is None:
                out[view] = {"status": "only in " + (b if ia is None else a),
                             "rows": (ib or ia)["rows"]}
                continue
            out[view] = _diff_view(con, _glob(pa_, ia), _glob(pb_, ib), ia, ib)
    finally:
        con.close()
    return out


def _diff_view(con: duckdb.DuckDBPyConnection, glob_a: str, glob_b: str, ia: dict, ib: dict) -> dict:
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

    for side, glob in (("ra", glob_a), ("rb", glob_b)):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {side} AS SELECT {k}, {digest(content)} AS h, "
                    f"{digest(provenance)} AS p FROM read_parquet('{glob}')")
    added = con.execute(f"SELECT count(*) FROM rb ANTI JOIN ra USING ({k})").fetchone()[0]
    removed = con.execute(f"SELECT count(*) FROM ra ANTI JOIN rb USING ({k})").fetchone()[0]
    changed = con.execute(f"SELECT count(*) FROM ra JOIN rb USING ({k}) WHERE ra.h <> rb.h").fetchone()[0]
    moved = con.execute(f"SELECT count(*) FROM ra JOIN rb USING ({k}) WHERE ra.h = rb.h AND ra.p <> rb.p").fetchone()[0]
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
