"""Problem-level hold-out shared by RM training and best-of-N evaluation (no lake or DuckDB needed)."""
from __future__ import annotations

import hashlib


def is_heldout(problem_id: str, fraction: float) -> bool:
    """Deterministic: the same problems are held out from RM training and used in BoN eval."""
    return int(hashlib.sha256(problem_id.encode()).hexdigest()[:8], 16) / 2**32 < fraction
