"""Evaluation, imported as `factory_eval` (the folder is the card's `eval/`): unbiased pass@k and reward-model best-of-N tables."""
from factory_eval.passk import estimate_pass_at_k, pass_at_k, pass_at_k_table
from factory_eval.bon import bon_at_k, bon_table

__all__ = ["estimate_pass_at_k", "pass_at_k", "pass_at_k_table", "bon_at_k", "bon_table"]
