"""The trainer launch lines, read from docs/trainers.md and docs/serve.md and checked against the installed trainers (verl
0.9.1, TRL 1.16, OpenRLHF 0.11.2): every verl config key exists in verl's own ppo_trainer config, every reward
manager named is one verl's reward loop registers, and each named reward function loads the way that trainer
loads it and scores a correct answer 1.0 and a wrong one 0.0 (verl's sandbox_fusion line against a real
`factory serve`)."""
from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.serve.conftest import ROOT

README = (ROOT / "docs" / "trainers.md").read_text() + (ROOT / "docs" / "serve.md").read_text()  # trainers + serve tables
KEY_VALUE = re.compile(r"^([a-z_][\w]*(?:\.[\w]+)+)=(\S+)$")
SHELL = re.compile(r"\$\((python -c '[^']*')\)")

GOOD = "```python\nprint(int(input()) * 2)\n```"
BAD = "```python\nprint(int(input()) + 1)\n```"
TRUTH = json.dumps({"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]})


def _row(first_cell: str) -> str:
    """The docs' table row whose first cell starts with ``first_cell`` (one line)."""
    rows = [line for line in README.splitlines() if line.startswith(f"| {first_cell}")]
    assert len(rows) == 1, (first_cell, rows)
    return rows[0]


def _shell(text: str) -> str:
    """$(python -c '...') replaced by what it prints, run the way a shell would (this interpreter as python)."""
    def run(m):
        cmd = m.group(1)[len("python -c '"):-1]
        return subprocess.run([sys.executable, "-c", cmd], check=True, capture_output=True, text=True,
                              cwd=ROOT).stdout.strip()
    return SHELL.sub(run, text)


def _overrides(row: str) -> dict[str, str]:
    """Every ``a.b.c=value`` token of the row's code spans (Hydra overrides)."""
    out = {}
    for span in re.findall(r"`([^`]+)`", _shell(row)):
        for token in span.split():
            m = KEY_VALUE.match(token)
            if m:
                out[m.group(1)] = m.group(2)
    return out


def _verl_dir() -> Path:
    import verl
    return Path(verl.__file__).parent


def _verl_config():
    from omegaconf import OmegaConf
    return OmegaConf.load(_verl_dir() / "trainer" / "config" / "_generated_ppo_trainer.yaml")


def _registered_reward_managers() -> set[str]:
    """Names verl's reward loop registers (``@register("...")`` in verl/experimental/reward_loop/reward_manager):
    read from the source, since importing that package needs verl's full dependency set."""
    names = set()
    for f in (_verl_dir() / "experimental" / "reward_loop" / "reward_manager").glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "register", "register_manager") and node.args and isinstance(node.args[0], ast.Constant):
                names.add(node.args[0].value)
    return names


def _check_verl_keys(overrides: dict[str, str]) -> None:
    from omegaconf import OmegaConf

    cfg = _verl_config()
    missing = [k for k in overrides if OmegaConf.select(cfg, k, default="<missing>") == "<missing>"]
    assert not missing, f"keys not in verl {_verl_version()}'s ppo_trainer config: {missing}"
    registered = _registered_reward_managers()
    for key in ("reward.reward_manager.name", "reward_model.reward_manager"):
        if key in overrides:
            assert overrides[key] in registered, (key, overrides[key], sorted(registered))


def _verl_version() -> str:
    import verl
    return verl.__version__


def test_verl_trainer_uses_the_reward_loop_registry():
    """What the checks below rely on: verl 0.9.1 resolves `reward.reward_manager.name` in the reward loop's
    registry (no `batch` manager there), and the default manager is one of its names."""
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    assert "experimental.reward_loop.reward_manager import get_reward_manager_cls" in inspect.getsource(
        resolve_reward_manager_cls)
    registered = _registered_reward_managers()
    assert {"naive", "dapo"} <= registered and "batch" not in registered, registered
    assert _verl_config().reward.reward_manager.name in registered


def test_readme_verl_custom_reward_line():
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    overrides = _overrides(_row("verl 0.9 |"))
    assert "reward.custom_reward_function.path" in overrides and "reward.custom_reward_function.name" in overrides
    _check_verl_keys(overrides)
    cfg = OmegaConf.merge(_verl_config(), OmegaConf.from_dotlist([f"{k}={v}" for k, v in overrides.items()]))
    fn = get_custom_reward_fn(cfg)             # verl's own loader: the file by path, the function by name
    # called the way verl's registered manager calls it (keyword names read from its source)
    name = OmegaConf.select(cfg, "reward.reward_manager.name")
    source = (_verl_dir() / "experimental" / "reward_loop" / "reward_manager" / f"{name}.py").read_text()
    call = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute) and n.func.attr == "compute_score")
    keywords = {k.arg for k in call.keywords if k.arg}
    assert keywords == {"data_source", "solution_str", "ground_truth", "extra_info"}, keywords
    args = {"data_source": "codecontests", "ground_truth": TRUTH, "extra_info": {}}
    assert fn(solution_str=GOOD, **args) == 1.0 and fn(solution_str=BAD, **args) == 0.0


def test_readme_verl_sandbox_fusion_line_against_a_real_server(server):
    from verl.utils.reward_score import default_compute_score

    row = _row("verl 0.9 built-in code reward")
    overrides = _overrides(row)
    assert {"reward.sandbox_fusion.url", "reward.sandbox_fusion.max_concurrent"} <= set(overrides)
    _check_verl_keys(overrides)
    url = overrides["reward.sandbox_fusion.url"].replace("http://HOST:8080", server.url)
    # what verl's load_reward_manager builds from these keys: a semaphore of max_concurrent, the URL, the memory
    sem = threading.Semaphore(int(overrides["reward.sandbox_fusion.max_concurrent"]))
    memory = int(overrides.get("reward.sandbox_fusion.memory_limit_mb", 1024))
    scores = [default_compute_score("codecontests", answer, TRUTH, sandbox_fusion_url=url, concurrent_semaphore=sem,
                                    memory_limit_mb=memory) for answer in (GOOD, BAD)]
    scores = [s[0] if isinstance(s, tuple) else s for s in scores]
    scores = [s["score"] if isinstance(s, dict) else s for s in scores]
    assert scores == [1.0, 0.0]


def _dotted(name: str):
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def test_readme_trl_line():
    from trl import GRPOTrainer

    row = _row("TRL")
    m = re.search(r"GRPOTrainer\(reward_funcs=\[([\w.]+)\]", row)
    assert m, row
    assert "reward_funcs" in inspect.signature(GRPOTrainer.__init__).parameters
    fn = _dotted(m.group(1))
    # TRL 1.16 calls reward_func(prompts=, completions=, completion_ids=, **dataset columns, trainer_state=,
    # log_extra=, log_metric=) (GRPOTrainer._calculate_rewards)
    src = inspect.getsource(GRPOTrainer._calculate_rewards)
    assert re.search(r"reward_func\(\s*prompts=prompts,\s*completions=completions,\s*completion_ids=", src)
    completions = [[{"role": "assistant", "content": c}] for c in (GOOD, BAD)]
    got = fn(prompts=[[{"role": "user", "content": "double it"}]] * 2, completions=completions,
             completion_ids=[[1], [2]], ground_truth=[TRUTH, TRUTH], trainer_state=None,
             log_extra=lambda *a, **k: None, log_metric=lambda *a, **k: None)
    assert list(got) == [1.0, 0.0]


def _openrlhf_flags(cli: str) -> set[str]:
    import openrlhf
    source = (Path(openrlhf.__file__).parent / "cli" / cli).read_text()
    return set(re.findall(r'add_argument\(\s*"(--[\w.]+)"', source))


def test_readme_openrlhf_line():
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    row = _shell(_row("OpenRLHF"))
    rm, rl = row.split("RL:", 1)[0], row.split("RL:", 1)[1]
    rm_flags = set(re.findall(r"(--[\w.]+)", rm))
    rl_flags = set(re.findall(r"(--[\w.]+)", rl))
    assert rm_flags and rm_flags <= _openrlhf_flags("train_rm.py"), rm_flags - _openrlhf_flags("train_rm.py")
    assert rl_flags and rl_flags <= _openrlhf_flags("train_ppo_ray.py"), rl_flags - _openrlhf_flags("train_ppo_ray.py")
    path = re.search(r"--reward\.remote_url (\S+)", rl).group(1).rstrip("`")
    assert path.endswith(".py") and Path(path).is_file(), path
    executor = SingleTurnAgentExecutor(remote_rm_url=path)     # OpenRLHF loads reward_func from the file
    assert executor.reward_func is not None
    got = [asyncio.run(executor._fetch_rewards_via_func(["PROMPT" + c], ["PROMPT"], [TRUTH]))[0]["rewards"]
           for c in (GOOD, BAD)]
    assert [float(x.reshape(-1)[0]) if hasattr(x, "reshape") else float(x[0]) for x in got] == [1.0, 0.0]


@pytest.mark.parametrize("row", ["verl 0.9 |", "verl 0.9 built-in code reward"])
def test_no_unknown_reward_manager_anywhere_in_the_row(row):
    """A reward manager name anywhere in the line (e.g. `reward_model.reward_manager=batch`) is a registered one."""
    text = _row(row)
    registered = _registered_reward_managers()
    for name in re.findall(r"reward_manager(?:\.name)?=(\w+)", text):
        assert name in registered, (name, sorted(registered))
