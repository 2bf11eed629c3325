"""The first hour, scripted (#43): in a fresh folder, the main job on a small slice (`factory demo` with its quick
options: no SmolLM2, the tiny RM, HumanEval + MBPP), then every next step the README and the demo's own output
suggest, run as written, and the typos a newcomer makes. Each command's exit code and time go to the transcript
(printed; `pytest -s` shows it)."""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

# the demo on a slice and ~20 CLI calls (55 s at load 3, 186 s at load 17 on 2 cores): run with the slow tests
pytestmark = pytest.mark.slow

DEMO = ["factory", "demo", "--out", "demo", "--data-dir", "data", "--sample-problems", "0", "--rm-model", "tiny",
        "--rm-steps", "2", "--train-problems", "40"]


@pytest.fixture(scope="module")
def walk(tmp_path_factory, shared_data):
    home = tmp_path_factory.mktemp("walk")
    (home / "data").mkdir()
    (home / "data" / "mbpp").symlink_to(shared_data / "mbpp")      # a train-split source with references
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTORY_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", HOME=str(home / "home"),
               XDG_CACHE_HOME=str(home / "home" / ".cache"))
    transcript: list[str] = []

    def sh(cmd: list[str] | str, expect: int = 0):
        argv = shlex.split(cmd) if isinstance(cmd, str) else cmd
        t = time.perf_counter()
        out = subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True, timeout=1800)
        dt = time.perf_counter() - t
        transcript.append(f"$ {shlex.join(argv)}\n  -> exit {out.returncode} in {dt:.1f}s")
        assert out.returncode == expect, f"{shlex.join(argv)}: exit {out.returncode}\n{out.stdout[-3000:]}\n" \
                                         f"{out.stderr[-3000:]}"
        return out

    demo = sh(DEMO)
    yield {"home": home, "env": env, "sh": sh, "demo": demo, "transcript": transcript}
    load = os.getloadavg()[0]
    print(f"\nnewcomer walk (load average {load:.1f} on {os.cpu_count()} cores):\n" + "\n".join(transcript))


def test_the_demo_releases_a_train_split_and_says_what_it_keeps_out(walk):
    out = walk["demo"].stdout
    splits = re.search(r"splits: +gold.rl_problems in demo-v1: (.+)", out).group(1)
    counts = dict((k, int(v)) for k, v in re.findall(r"(\w+) (\d+)", splits))
    assert counts.get("train", 0) > 0 and counts.get("test", 0) > 0, out[-3000:]
    assert "kept out of training" in out and "unvalidated" in out, out[-3000:]
    # the verl export holds a train file of those rows
    verl = walk["home"] / "demo" / "exports" / "verl"
    import pyarrow.parquet as pq
    assert pq.ParquetFile(verl / "train.parquet").metadata.num_rows == counts["train"]


def test_every_command_the_demo_prints_works_as_written(walk):
    out = walk["demo"].stdout
    suggested = re.findall(r"\((factory [^)]+)\)", out)      # "(factory status --lake ...)" and friends
    lines = re.findall(r"^  (?:query|python|duckdb): +(.+)$", out, flags=re.M)
    suggested += [m.split("  #")[0].strip() for m in lines]
    assert len(suggested) >= 4, suggested
    for cmd in suggested:
        walk["sh"](cmd)


def test_readme_next_steps_work_after_the_demo(walk):
    sh = walk["sh"]
    status = sh("factory status --lake demo/lake")
    assert "silver.problems" in status.stdout and "last runs" in status.stdout
    listed = sh("factory release list --lake demo/lake")
    assert "demo-v1" in listed.stdout
    # the release the demo wrote (under demo/releases) is found where `release list` finds it
    exported = sh("factory export demo-v1 --format verl --out out/verl --lake demo/lake")
    assert "train.parquet" in exported.stdout
    sh("factory release verify demo-v1 --lake demo/lake")
    sh("factory export demo-v1 --format trl --out out/trl --lake demo/lake --releases-dir demo/releases")


def test_readme_duckdb_snippet_runs_as_written_after_the_demo(walk):
    text = (REPO_ROOT / "README.md").read_text()
    section = text.split("Pass rates in plain DuckDB", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.+?)\n```", section, flags=re.S)
    old_cwd, old_path = os.getcwd(), os.environ["PATH"]
    buf = io.StringIO()
    try:
        os.chdir(walk["home"])
        os.environ["PATH"] = walk["env"]["PATH"]
        with contextlib.redirect_stdout(buf):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(old_cwd)
        os.environ["PATH"] = old_path
    assert "humaneval" in buf.getvalue() and "reference" in buf.getvalue(), buf.getvalue()
    walk["transcript"].append("$ python <README's DuckDB snippet>\n  -> ran")


def test_print_init_names_this_venv_and_refuses_a_missing_lake(walk):
    sh = walk["sh"]
    missing = sh("factory shell --print-init --lake no/such/lake", expect=2)
    assert "no lake at" in missing.stderr and missing.stdout == ""
    init = sh("factory shell --print-init --lake demo/lake").stdout
    import duckdb_extension_sqlite
    loads = re.findall(r"LOAD '([^']+)'", init)
    assert len(loads) == 2
    pkg = Path(duckdb_extension_sqlite.__file__).resolve().parent
    sqlite = [Path(p) for p in loads if "sqlite" in Path(p).name]
    # the link is this installation's own (its folder is named after the file it points to): another venv's run
    # cannot re-point it
    assert sqlite and sqlite[0].resolve().is_relative_to(pkg), (sqlite, pkg)
    assert sqlite[0].parent.name != f"v{__import__('duckdb').__version__}"


def test_typos_get_the_known_names_and_the_closest(walk):
    sh = walk["sh"]
    err = sh("factory export demo-v2 --format verl --out out/x --lake demo/lake", expect=2).stderr
    assert "unknown release 'demo-v2'; did you mean 'demo-v1'?" in err and "--releases-dir" in err, err
    err = sh("factory stauts --lake demo/lake", expect=2).stderr
    assert "did you mean 'status'?" in err, err
    err = sh("factory export demo-v1 --format verll --out out/y --lake demo/lake", expect=2).stderr
    assert "did you mean 'verl'?" in err, err
    err = sh("factory execute --select reference --source humanevl --lake demo/lake", expect=2).stderr
    assert "did you mean 'humaneval'?" in err and "mbpp" in err, err
    err = sh("factory recipe show klaer", expect=2).stderr
    assert "did you mean 'klear'?" in err, err


def test_the_demo_refuses_to_wipe_a_folder_it_did_not_write(walk, tmp_path):
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    err = walk["sh"](["factory", "demo", "--out", str(mine), "--sample-problems", "0"], expect=2).stderr
    assert "thesis.tex" in err and "--force" in err, err
    assert (mine / "thesis.tex").read_text() == "years of work"
