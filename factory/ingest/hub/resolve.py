"""``hf://datasets/ORG/NAME[@REVISION][/SUBDIR]`` -> files on disk and the exact commit they came from.

Resolution goes through huggingface_hub's own cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub``), laid out as ``datasets--ORG--NAME/{refs/<branch>, snapshots/<commit>/..., blobs/}``:

- offline (``HF_HUB_OFFLINE=1``): ``snapshot_download(..., local_files_only=True)`` reads ``refs/<branch>`` (or takes
  a 40-hex revision as is) and returns ``snapshots/<commit>``; nothing is fetched;
- online: ``snapshot_download(..., allow_patterns=<the adapter's files>)`` downloads only what the adapter reads
  into the same cache (an LCB ingest never pulls 4 GB of other releases, a DeepCoder ``taco`` ingest never pulls
  ``lcbv5``).

A Hub-layout folder on disk (a snapshot folder, a ``git clone`` of the dataset repo, or ``local_dir`` of
``snapshot_download``) resolves the same way: its files are matched by the same patterns; its revision is the
snapshot's commit when the folder sits in a cache, the git HEAD of a clone, else ``local:<sha256 of the files>``.
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from factory.errors import FactoryError, InputError

_COMMIT = re.compile(r"[0-9a-f]{40}")
_URL = re.compile(r"hf:/+(?P<kind>datasets/)?(?P<org>[A-Za-z0-9][\w.-]*)/(?P<name>[\w.-]+?)(?:@(?P<rev>[^/]+))?"
                  r"(?:/(?P<sub>.*))?$")


@dataclass(frozen=True)
class HubRef:
    repo_id: str             # ORG/NAME
    revision: str | None     # branch, tag or commit as written (None: main)
    subdir: str | None       # a config folder (DeepCoder's taco/...) or a file pattern inside the repo

    @property
    def url(self) -> str:
        return f"hf://datasets/{self.repo_id}" + (f"@{self.revision}" if self.revision else "") + (
            f"/{self.subdir}" if self.subdir else "")


@dataclass(frozen=True)
class Resolved:
    root: Path               # the snapshot (or local) folder
    revision: str            # 40-hex commit, or local:<sha256> for an unversioned folder
    files: list[Path]        # the files the adapter reads, in a stable order
    url: str                 # what the user named (hf://... or the folder)
    repo_id: str | None

    def relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.name


def is_hub_url(text: str | os.PathLike) -> bool:
    return str(text).startswith("hf:/")   # hf:// (pathlib turns it into hf:/ when a caller made it a Path)


def parse_url(url: str) -> HubRef:
    m = _URL.match(url.rstrip("/"))
    if not m:
        raise InputError("not a Hub dataset URL; expected hf://datasets/ORG/NAME[@REVISION][/SUBDIR]", file=url)
    return HubRef(f"{m['org']}/{m['name']}", m["rev"] or None, (m["sub"] or "").strip("/") or None)


def hub_cache_dir() -> Path:
    """Where huggingface_hub keeps its cache, read from the environment now (not at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface" / "hub"


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _select(root: Path, patterns: list[str]) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel = Path(dirpath).relative_to(root)
        found += [Path(dirpath) / name for name in filenames
                  if any(fnmatch.fnmatchcase((rel / name).as_posix(), p) for p in patterns)]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def resolve_url(url: str, patterns: list[str]) -> Resolved:
    """Files of an ``hf://`` dataset matching ``patterns`` (relative to the repo root), from the cache or the Hub."""
    ref = parse_url(url)
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError as exc:   # pragma: no cover - huggingface_hub is a core dependency
        raise FactoryError("hf:// paths need the huggingface_hub package") from exc
    local_only = offline()
    try:
        folder = snapshot_download(ref.repo_id, repo_type="dataset", revision=ref.revision,
                                   cache_dir=str(hub_cache_dir()), allow_patterns=patterns,
                                   local_files_only=local_only)
    except LocalEntryNotFoundError as exc:
        where = hub_cache_dir() / f"datasets--{ref.repo_id.replace('/', '--')}"
        raise FactoryError(
            f"{url}: no cached snapshot of revision {ref.revision or 'main'} under {where}"
            + (" and HF_HUB_OFFLINE=1 forbids downloading it" if local_only else f" and the Hub is unreachable ({exc})")
        ) from None
    root = Path(folder)
    commit = root.name
    if not _COMMIT.fullmatch(commit):
        raise FactoryError(f"{url}: huggingface_hub returned {root}, which is not a snapshots/<commit> folder")
    files = _select(root, patterns)
    if not files:
        raise InputError(f"revision {commit} holds no file matching {', '.join(patterns)}", file=url)
    return Resolved(root, commit, files, ref.url, ref.repo_id)


def resolve_folder(folder: Path, patterns: list[str]) -> Resolved:
    """A Hub-layout folder on disk: the same file patterns; the revision from the cache, git, or the contents."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("not a folder (a Hub-layout dataset folder or an hf:// URL was expected)", file=str(folder))
    files = _select(folder, patterns)
    if not files:
        raise InputError(f"folder holds no file matching {', '.join(patterns)} (the dataset's published layout)",
                         file=str(folder))
    repo_id = revision = None
    parts = folder.absolute().parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and _COMMIT.fullmatch(parts[-1]):
        revision = parts[-1]
        m = re.fullmatch(r"datasets--(.+?)--(.+)", parts[-3])
        repo_id = f"{m[1]}/{m[2]}" if m else None
    elif (folder / ".git").exists():
        revision = _git_head(folder / ".git")
    if revision is None:
        digest = hashlib.sha256()
        for f in files:
            st = f.stat()
            digest.update(f"{f.relative_to(folder).as_posix()}\0{st.st_size}\0".encode())
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
        revision = "local:" + digest.hexdigest()
    return Resolved(folder, revision, files, str(folder), repo_id)


def _git_head(git: Path) -> str | None:
    """The commit a clone's HEAD points at (a loose or packed ref), without running git."""
    try:
        head = (git / "HEAD").read_text().strip()
        if _COMMIT.fullmatch(head):
            return head
        if head.startswith("ref: "):
            ref = head[5:]
            if (git / ref).is_file():
                return (git / ref).read_text().strip()
            packed = git / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    if line.endswith(" " + ref):
                        return line.split()[0]
    except OSError:
        return None
    return None
