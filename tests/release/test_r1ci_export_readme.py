"""docs/trainers.md's "R1-Code-Interpreter tasks" commands, run as written in a fresh folder by a fresh user (no
FACTORY_* variables, no user config): exit 0 each, and their exports are RL sets the reward scores (#43)."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO_ROOT

pytest.importorskip("reasoning_gym")


def _section() -> str:
    text = (REPO_ROOT / "docs" / "trainers.md").read_text()
    return text.split("## R1-Code-Interpreter tasks", 1)[1].split("\n## ", 1)[0]


def test_readme_r1ci_commands_work_as_written(tmp_path):
    section = _section()
    (block,) = re.findall(r"```bash\n(.+?)\n```", section, flags=re.S)
    commands = [c for c in block.splitlines() if c.strip()]
    assert commands[0].startswith("factory init") and any("--view gold.answer_tasks" in c for c in commands)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTORY_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    times = []
    for cmd in commands:
        t0 = time.perf_counter()
        r = subprocess.run(shlex.split(cmd), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        times.append((cmd, r.returncode, round(time.perf_counter() - t0, 1)))
        assert r.returncode == 0, (cmd, r.stdout[-2000:], r.stderr[-2000:])
    print("\n".join(f"{rc} {s:6.1f}s  {c}" for c, rc, s in times))
    # 3 tasks x 50 items, each export one train file (ReasoningGym items carry no split)
    from factory.reward import compute_score, trl_reward

    verl = pq.read_table(tmp_path / "rg" / "verl" / "train.parquet").to_pylist()
    trl = pq.read_table(tmp_path / "rg" / "trl" / "train.parquet").to_pydict()
    assert len(verl) == 150 and len(trl["prompt"]) == 150
    assert {r["data_source"] for r in verl} == {f"reasoning-gym-{t}" for t in
                                               ("basic_arithmetic", "count_primes", "spell_backward")}
    for row in verl[::10]:
        truth = row["reward_model"]["ground_truth"]
        answer = json.loads(truth)["answer"]
        assert compute_score(row["data_source"], f"<<<{answer}>>>", truth, row["extra_info"]) == 1.0
        assert compute_score(row["data_source"], f"<<<{answer}x>>>", truth, row["extra_info"]) == 0.0
    answers = [json.loads(t)["answer"] for t in trl["ground_truth"]]
    assert trl_reward([[{"role": "assistant", "content": f"<<<{a}>>>"}] for a in answers], trl["ground_truth"]) \
        == [1.0] * 150


def test_readme_rollout_path_commands_parse():
    """The rollout path's commands (hours of SmolLM2 on CPU: not run here) are ones the CLI accepts: each parses
    up to a trailing --help (an unknown action or option exits 2 before --help is reached)."""
    section = _section()
    sample = re.search(r"`(factory interpreter-rollouts sample[^`]*)`", section).group(1)
    lake = shlex.split(sample)[shlex.split(sample).index("--lake") + 1]
    for action in ("sample", "curriculum", "release"):
        assert f"`{action}`" in section or action in sample
        done = subprocess.run([sys.executable, "-m", "factory.cli", "interpreter-rollouts", action, "--lake", lake,
                               "--help"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "--lake" in done.stdout, (action, done.stderr[-1000:])
