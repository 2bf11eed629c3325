"""Dataset factory for code reinforcement learning."""

__version__ = "0.1.0"
