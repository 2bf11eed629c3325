"""The reward functions as each trainer loads them: verl's own get_custom_reward_fn (per item and batch names)
and OpenRLHF's load-by-file-path. Shared by the tests that score exports through every entry point."""
from __future__ import annotations

import importlib.util

import factory.reward as reward_module


def verl_reward_fn(name: str = "compute_score"):
    """`reward.custom_reward_function.{path,name}` resolved by verl 0.9's own loader."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    return get_custom_reward_fn(OmegaConf.create(
        {"reward": {"custom_reward_function": {"path": reward_module.__file__, "name": name}}}))


def openrlhf_reward_module():
    """factory/reward.py loaded from its file path, as OpenRLHF's `--reward.remote_url FILE` does."""
    spec = importlib.util.spec_from_file_location("reward_func", reward_module.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
