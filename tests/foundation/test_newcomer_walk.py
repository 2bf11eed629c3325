"""The first hour, scripted (#43): in a fresh folder, the main job on a small slice (`factory demo` with its quick
options: no SmolLM2, the tiny RM, HumanEval + MBPP), then every next step the README and the demo's own output
suggest, run as written, and the typos a newcomer makes. Each command's exit code and time go to the transcript:
a Markdown file written as the walk goes (`newcomer-walk.md` in the walk's pytest temp folder, or the path in
$NEWCOMER_WALK_TRANSCRIPT), with the load average at the start and at the end; printed at the end (`pytest -s`
shows it). docs/newcomer-walk.md is one such transcript."""
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
    transcript = Transcript(Path(os.environ.get("NEWCOMER_WALK_TRANSCRIPT") or home / "newcomer-walk.md").resolve(),
                            {str(home): "$WALK", str(tmp_path_factory.getbasetemp()): "$PYTEST_TMP"})

    def sh(cmd: list[str] | str, expect: int = 0):
        argv = shlex.split(cmd) if isinstance(cmd, str) else cmd
        t = time.perf_counter()
        out = subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True, timeout=1800)
        transcript.command(argv, out.returncode, time.perf_counter() - t, expect)
        assert out.returncode == expect, f"{shlex.join(argv)}: exit {out.returncode}\n{out.stdout[-3000:]}\n" \
                                         f"{out.stderr[-3000:]}"
        return out

    demo = sh(DEMO)
    transcript.output("What the demo printed (stdout)", demo.stdout)
    yield {"home": home, "env": env, "sh": sh, "demo": demo, "transcript": transcript}
    transcript.close()
    print("\n" + transcript.path.read_text() + f"\n(transcript: {transcript.path})")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


class Transcript:
    """The walk as a newcomer would tell it: each command, its exit code (and the one expected) and its seconds,
    in a Markdown file rewritten after every command, so a walk that fails half-way still leaves its part."""

    def __init__(self, path: Path, short: dict[str, str]):
        self.path, self.short, self.rows, self.outputs, self.t0 = path, short, [], [], time.perf_counter()
        self.head = (f"# Newcomer walk ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
                     "Written by `tests/foundation/test_newcomer_walk.py` as it runs (`NEWCOMER_WALK_TRANSCRIPT="
                     "docs/newcomer-walk.md python -m pytest -q -m slow -s tests/foundation/test_newcomer_walk.py`)"
                     ": the README's main job on a slice, then what the demo's output and the README suggest next, "
                     "then the typos a newcomer makes (those exit 2 by design).\n\n"
                     f"Load average (1/5/15 min) at the start: {_load()}, on {os.cpu_count()} cores; "
                     f"Python {sys.version.split()[0]}. `$WALK` is a fresh temp folder (every command's working "
                     "directory) holding only `data/mbpp`, a link to the shared MBPP; `$PYTEST_TMP` is pytest's "
                     "temp folder.\n\n| # | command | exit (expected) | seconds |\n|---|---|---|---|\n")
        self.tail = ""
        self._write()

    def _short(self, text: str) -> str:
        for long, short in sorted(self.short.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(long, short)
        return text

    def command(self, argv: list[str], code: int, seconds: float, expect: int = 0):
        mark = "" if code == expect else " **unexpected**"
        cmd = self._short(shlex.join(argv)).replace("|", "\\|")
        self.rows.append(f"| {len(self.rows) + 1} | `{cmd}` | {code} ({expect}){mark} | {seconds:.1f} |\n")
        self._write()

    def append(self, line: str):              # a step that is not a command (the README's Python snippet)
        self.rows.append(f"| {len(self.rows) + 1} | {line} | | |\n")
        self._write()

    def output(self, title: str, text: str):
        self.outputs.append(f"\n## {title}\n\n```\n{self._short(text).rstrip()}\n```\n")
        self._write()

    def close(self):
        self.tail = (f"\nTotal {time.perf_counter() - self.t0:.0f} s for {len(self.rows)} steps; load average at "
                     f"the end: {_load()}.\n")
        self._write()

    def _write(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(self.head + "".join(self.rows) + self.tail + "".join(self.outputs))


def test_the_demo_releases_a_train_split_and_says_what_it_keeps_out(walk):
    out = walk["demo"].stdout
    splits = re.search(r"splits: +gold.rl_problems in demo-v1: (.+)", out).group(1)
    counts = dict((k, int(v)) for k, v in re.findall(r"(\w+) (\d+)", splits))
    assert counts.get("train", 0) > 0 and counts.get("test", 0) > 0, out[-3000:]
    assert "kept out of training" in out and "unvalidated" in out, out[-3000:]
    # the reward model's line reads as a share on a stated number of held-out pairs, not a raw float32
    rm_line = re.search(r"held-out pair accuracy (\S+) on (\d+) pairs \(untrained (\S+)\)", out)
    assert rm_line and all(re.fullmatch(r"\d\.\d{3}|n/a", rm_line.group(g)) for g in (1, 3)), out[-3000:]
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
    text = (REPO_ROOT / "docs" / "querying.md").read_text()
    section = text.split("Pass rates in plain DuckDB", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.+?)\n```", section, flags=re.S)
    old_cwd, old_path = os.getcwd(), os.environ["PATH"]
    buf = io.StringIO()
    try:
        os.chdir(walk["home"])
        os.environ["PATH"] = walk["env"]["PATH"]
        with contextlib.redirect_stdout(buf):
            exec(compile(code, "docs/querying.md", "exec"), {})
    finally:
        os.chdir(old_cwd)
        os.environ["PATH"] = old_path
    assert "humaneval" in buf.getvalue() and "reference" in buf.getvalue(), buf.getvalue()
    walk["transcript"].append("docs/querying.md's DuckDB snippet (Python, run in-process): ran, printed pass rates")


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


def test_the_walk_leaves_a_transcript_a_person_can_read(walk):
    """Last in the module: the Markdown transcript on disk holds every step so far (the demo and the commands of
    the tests above), each with its exit code and seconds, the load average at the start and the demo's output."""
    text = walk["transcript"].path.read_text()
    assert re.search(r"Load average \(1/5/15 min\) at the start: [\d.]+/[\d.]+/[\d.]+, on \d+ cores", text), text
    rows = re.findall(r"^\| (\d+) \| `(.+)` \| (\d+) \((\d+)\)(.*?) \| ([\d.]+) \|$", text, flags=re.M)
    assert len(rows) >= 19 and rows[0][1].startswith("factory demo --out demo"), rows
    assert all(code == expect and not extra for _, _, code, expect, extra, _ in rows), rows
    assert {"0", "2"} == {code for _, _, code, _, _, _ in rows}           # typos exit 2, the rest 0
    assert "$WALK/demo/lake" in text and str(walk["home"]) not in text    # temp paths shortened
    assert "splits:   gold.rl_problems in demo-v1: test" in text        # the demo's own output
