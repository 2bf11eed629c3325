"""Deduplication and decontamination core (pure compute: Arrow/NumPy in, Arrow out): exact keys, MinHash signatures
(bit-identical to datasketch affine32), LSH candidates, verification, clusters, the :func:`dedup` /
:func:`dedup_incremental` pipelines, :func:`decontaminate` and the LSH recall curve; ``_LAZY`` names each export's
submodule."""
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
