"""Thin training modules: RL losses/advantages/rewards + GRPO loop (`train.rl`), Bradley-Terry RM (`train.rm`)."""
