"""Releases are found where `factory release list` finds them (#43: the demo writes them to demo/releases, and
`factory export demo-v1 --lake demo/lake` said "unknown release"): under RELEASES/NAME, else the folder the lake's
ops.releases recorded. An unknown name lists the known ones, suggests the closest and names --releases-dir."""
from __future__ import annotations

import os
import subprocess
import sys


def _cli(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTORY_")}
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def test_export_and_verify_find_the_release_the_lake_recorded(releases, tmp_path):
    lake = str(releases.lake)
    assert not (releases.lake / "releases" / "r1").exists()          # not under the lake's default folder
    listed = _cli("release", "list", "--lake", lake)
    assert listed.returncode == 0 and "r1" in listed.stdout, listed.stderr
    out = _cli("export", "r1", "--format", "trl", "--out", str(tmp_path / "trl"), "--lake", lake)   # r1: pairs
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "trl" / "export.json").is_file()
    verified = _cli("release", "verify", "r1", "--lake", lake)
    assert verified.returncode == 0 and "release r1 OK" in verified.stdout, verified.stderr
    shown = _cli("release", "show", "r1", "--lake", lake)
    assert shown.returncode == 0 and str(releases.root / "r1") in shown.stdout, shown.stderr


def test_an_unknown_release_lists_the_known_and_the_closest(releases, tmp_path):
    out = _cli("export", "r11", "--format", "verl", "--out", str(tmp_path / "x"), "--lake", str(releases.lake))
    assert out.returncode == 2
    err = out.stderr.strip()
    assert err.startswith("error: unknown release 'r11'; did you mean 'r1'?") and "known: " in err, err
    assert "r1" in err and "r2" in err and "--releases-dir" in err, err
    assert not (tmp_path / "x").exists()
