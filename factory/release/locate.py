"""Where releases are and how to read one's manifest: the releases folder, the name check, the list of releases
(the lake's ops.releases plus the folders), one release's folder and its parsed manifest.json."""
from __future__ import annotations

import contextlib
import itertools
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from factory.errors import FactoryError, unknown
from factory.lake import connect, resolve_lake_dir
from factory.lake.connection import user_config

MANIFEST = "manifest.json"
_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def resolve_releases_dir(releases_dir: str | os.PathLike | None = None, lake=None) -> Path:
    """--releases-dir, else $FACTORY_RELEASES, else ``releases:`` in the user config, else LAKE/releases (the
    lake from --lake / $FACTORY_LAKE / config). Never the current directory."""
    chosen = releases_dir or os.environ.get("FACTORY_RELEASES") or user_config("releases")
    return Path(chosen).expanduser().resolve() if chosen else resolve_lake_dir(lake) / "releases"


def check_name(name: str) -> None:
    if not name or not set(name) <= _NAME_OK or name.startswith("."):
        raise FactoryError(f"bad release name {name!r}: use letters, digits, '.', '_' and '-'")


def list_releases(*, lake=None, releases_dir=None) -> list[dict]:
    """Releases recorded in ops.releases plus folders under the releases dir; `where` says which."""
    out: dict[str, dict] = {}
    with contextlib.suppress(FactoryError), connect(lake, read_only=True) as con:   # no lake: the folders only
        for name, snap, views, path, rows, created in con.execute(
                "SELECT name, snapshot_id, views::VARCHAR, path, row_counts::VARCHAR, created_at "
                "FROM ops.releases ORDER BY created_at, name").fetchall():
            out[name] = {"name": name, "snapshot_id": snap, "views": json.loads(views), "path": path,
                         "row_counts": json.loads(rows), "created_at": str(created), "where": "lake"}
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


def load_manifest(name: str, releases_dir=None, lake=None) -> tuple[Path, dict]:
    """(release folder, parsed manifest.json) of a release, or a FactoryError naming what is missing. The folder
    is found where `factory release list` finds it (:func:`locate_release`)."""
    check_name(name)
    path = locate_release(name, releases_dir, lake)
    try:
        return path, json.loads((path / MANIFEST).read_text())
    except FileNotFoundError:
        raise FactoryError(f"release {name!r} has no {MANIFEST} at {path}") from None
    except json.JSONDecodeError as exc:
        raise FactoryError(f"release {name!r}: {MANIFEST} is not valid JSON ({exc})") from None


def today() -> str:
    """The UTC date as YYYYMMDD, the date part of a cut release's name."""
    return datetime.now(timezone.utc).strftime("%Y%m%d")


def same_release(root: Path, base: str, content_hash: str, stage: str | None) -> str | None:
    """The release BASE or BASE.N under ``root`` cut from the same recipe content and stage, if any."""
    for path in sorted(root.glob(f"{base}*")):
        if path.name != base and not path.name.startswith(base + "."):
            continue
        try:
            recipe = json.loads((path / "manifest.json").read_text()).get("recipe") or {}
        except (OSError, ValueError):
            continue
        if recipe.get("content_hash") == content_hash and recipe.get("stage") == stage:
            return path.name
    return None


def free_name(root: Path, base: str) -> str:
    """BASE, or the first BASE.N (N >= 2) not yet under ``root``."""
    if not (root / base).exists():
        return base
    return next(f"{base}.{n}" for n in itertools.count(2) if not (root / f"{base}.{n}").exists())
