"""The README's two commands are the ones CI and newcomers run."""
from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO_ROOT


def readme_commands() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_ci_runs_the_readme_test_command():
    main_job, tests = readme_commands()
    ci = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in ci
    assert tests.endswith("python -m pytest -q") and tests.startswith("bash install.sh all ")
    # then, as its own step, the slow tests the default run leaves out (#43: the default suite <= 20 min)
    assert ci[ci.index(tests) + 1:][-1].startswith("timeout 1800 python -m pytest -q -m slow")
    assert main_job.startswith("bash install.sh demo ") and "factory demo" in main_job
    # the install script puts the CPU torch first, before any extra could pull a CUDA build
    install = (REPO_ROOT / "install.sh").read_text()
    assert install.index("pip install torch==2.13.0") < install.index('pip install -e ".[$extra]"')


FIRST_SCREEN = 45   # lines: what a newcomer sees without scrolling


def test_readme_first_screen_says_what_it_is_both_commands_and_the_path():
    """#49: one sentence on what it is, the two commands with what each does and how long, the path from raw
    problems to a trainer file, all on the first screen; no dated figure or load-average caveat anywhere in the
    README (those live in the docs page that produced them); every doc it links to exists."""
    text = (REPO_ROOT / "README.md").read_text()
    first = "\n".join(text.splitlines()[:FIRST_SCREEN])
    main_job, tests = readme_commands()
    assert main_job in first and tests in first
    assert all(layer in first for layer in ("bronze", "silver", "gold", "release", "trainer"))
    assert re.search(r"^## Two commands", first, flags=re.M)
    assert text.count("\n") <= 80, text.count("\n")
    dated = re.findall(r"\b20\d\d-\d\d-\d\d\b|load(?: average)? ~?\d|tokens/s", text)
    assert not dated, dated
    assert max(len(line) for line in text.splitlines() if not line.startswith("|")) <= 120
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert len(set(links)) >= 8
    missing = [link for link in links if not (REPO_ROOT / link).is_file()]
    assert not missing, missing


def test_readme_pass_rate_query_runs_in_plain_duckdb(tmp_path):
    """The README's plain-DuckDB block, run as written (from the folder the demo ran in: its lake is demo/lake) on
    a real lake: HumanEval's references, executed and curated, all pass."""
    import contextlib
    import io
    import os
    import subprocess
    import sys

    text = (REPO_ROOT / "docs" / "querying.md").read_text()
    section = text.split("Pass rates in plain DuckDB", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.+?)\n```", section, flags=re.S)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for cmd in (["init"], ["ingest", "humaneval"], ["execute", "--select", "reference"], ["curate"]):
        subprocess.run(["factory", *cmd, "--lake", str(tmp_path / "demo" / "lake")], check=True, env=env,
                       cwd=tmp_path, capture_output=True)
    old_cwd, old_path = os.getcwd(), os.environ["PATH"]
    out = io.StringIO()
    try:
        os.chdir(tmp_path)
        os.environ["PATH"] = env["PATH"]
        with contextlib.redirect_stdout(out):
            exec(compile(code, "docs/querying.md", "exec"), {})
    finally:
        os.chdir(old_cwd)
        os.environ["PATH"] = old_path
    table = out.getvalue()
    row = next(line for line in table.splitlines() if "humaneval" in line and "reference" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[:2] == ["humaneval", "reference"] and float(cells[4]) == 1.0 and int(cells[3]) >= 160, cells
