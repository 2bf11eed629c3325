"""Thin training modules, imported as `factory_train` (the folder is the card's `train/`): RL losses/advantages/rewards + GRPO loop (`factory_train.rl`), Bradley-Terry RM (`factory_train.rm`)."""
