"""Releases (immutable, manifest-checked snapshots of lake views) and trainer exports cut from them."""
from factory.release.create import create_release, reproduce_release
from factory.release.export import FORMATS, export_release, validate_export
from factory.release.locate import list_releases, load_manifest, resolve_releases_dir
from factory.release.manage import diff_releases, show_release, verify_release

__all__ = ["create_release", "load_manifest", "reproduce_release", "resolve_releases_dir", "diff_releases",
           "list_releases", "show_release", "verify_release", "FORMATS", "export_release", "validate_export"]
