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
    assert tests.endswith("python -m pytest -q")
    # then, as its own step, the slow tests the default run leaves out (#43: the default suite <= 20 min)
    assert ci[ci.index(tests) + 1:][-1].startswith("timeout 1800 python -m pytest -q -m slow")
    assert "pip install torch==2.13.0" in main_job and "factory demo" in main_job


def test_readme_is_a_map_not_a_manual():
    """README: what it is, the two commands, a DuckDB pass-rate query, the architecture, links (#35: <= ~200 lines);
    every doc it links to exists."""
    text = (REPO_ROOT / "README.md").read_text()
    assert text.count("\n") <= 200, text.count("\n")
    heads = re.findall(r"^## (.+)$", text, flags=re.M)
    assert heads[0] == "Two commands" and "Architecture" in heads and any("DuckDB" in h for h in heads), heads
    links = re.findall(r"\]\((docs/[^)]+)\)", text)
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

    text = (REPO_ROOT / "README.md").read_text()
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
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(old_cwd)
        os.environ["PATH"] = old_path
    table = out.getvalue()
    row = next(line for line in table.splitlines() if "humaneval" in line and "reference" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[:2] == ["humaneval", "reference"] and float(cells[4]) == 1.0 and int(cells[3]) >= 160, cells
