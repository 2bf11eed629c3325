"""The README's two commands are the ones CI and newcomers run."""
from __future__ import annotations

import re

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
    assert "pip install torch==2.13.0" in main_job and "factory demo" in main_job
