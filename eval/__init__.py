"""Evaluation: unbiased pass@k and reward-model best-of-N tables."""
from eval.passk import estimate_pass_at_k, pass_at_k, pass_at_k_table
from eval.bon import bon_at_k, bon_table

__all__ = ["estimate_pass_at_k", "pass_at_k", "pass_at_k_table", "bon_at_k", "bon_table"]
