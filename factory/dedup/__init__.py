"""Deduplication and decontamination core (pure compute: Arrow/NumPy in, Arrow out).

- exact keys: :func:`normalize_text`, :func:`normalize_code`, :func:`exact_hashes`
- near dups: :class:`MinHashParams`, :func:`signatures` (bit-identical to datasketch affine32),
  :func:`band_table`, :func:`candidate_pairs` (DuckDB GROUP BY), :func:`verify_pairs`,
  :func:`clusters`, and the pipelines :func:`dedup` / :func:`dedup_incremental`
- decontamination: :func:`decontaminate`
- recall curve: :func:`recall_curve`, :func:`plant_pairs`, :func:`planted_precision_recall`
"""
_LAZY = {
    **dict.fromkeys(("clusters", "keeper_rank", "union_find"), "cluster"),
    **dict.fromkeys(("DecontamParams", "decontaminate"), "decontam"),
    **dict.fromkeys(("exact_hashes", "exact_pairs", "normalize_code", "normalize_text"), "exact"),
    **dict.fromkeys(("candidate_pairs", "cross_candidate_pairs"), "lsh"),
    **dict.fromkeys(("MinHashParams", "band_hashes", "band_table", "permutations", "signatures"), "minhash"),
    **dict.fromkeys(("DedupResult", "compute_bands", "dedup", "dedup_incremental"), "pipeline"),
    **dict.fromkeys(("plant_pairs", "planted_precision_recall", "recall_curve"), "recall"),
    **dict.fromkeys(("shingle_hash32", "shingle_hashes", "shingle_strings", "tokenize"), "shingle"),
    **dict.fromkeys(("exact_jaccard", "verify_pairs"), "verify"),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    """Submodules load on first use (the recall curve pulls in SciPy, the pipeline DuckDB): importing one engine
    or building the `factory` parser does not pay for the others."""
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
