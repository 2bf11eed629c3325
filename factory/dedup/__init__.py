"""Deduplication and decontamination core (pure compute: Arrow/NumPy in, Arrow out).

- exact keys: :func:`normalize_text`, :func:`normalize_code`, :func:`exact_hashes`
- near dups: :class:`MinHashParams`, :func:`signatures` (bit-identical to datasketch affine32),
  :func:`band_table`, :func:`candidate_pairs` (DuckDB GROUP BY), :func:`verify_pairs`,
  :func:`clusters`, and the pipelines :func:`dedup` / :func:`dedup_incremental`
- decontamination: :func:`decontaminate`
- recall curve: :func:`recall_curve`, :func:`plant_pairs`, :func:`planted_precision_recall`
"""
from .cluster import clusters, keeper_rank, union_find
from .decontam import DecontamParams, decontaminate
from .exact import exact_hashes, exact_pairs, normalize_code, normalize_text
from .lsh import candidate_pairs, cross_candidate_pairs
from .minhash import MinHashParams, band_hashes, band_table, permutations, signatures
from .pipeline import DedupResult, compute_bands, dedup, dedup_incremental
from .recall import plant_pairs, planted_precision_recall, recall_curve
from .shingle import shingle_hash32, shingle_hashes, shingle_strings, tokenize
from .verify import exact_jaccard, verify_pairs

__all__ = [
    "DecontamParams", "DedupResult", "MinHashParams", "band_hashes", "band_table", "candidate_pairs",
    "clusters", "compute_bands", "cross_candidate_pairs", "decontaminate", "dedup", "dedup_incremental",
    "exact_hashes", "exact_jaccard", "exact_pairs", "keeper_rank", "normalize_code", "normalize_text",
    "permutations", "plant_pairs", "planted_precision_recall", "recall_curve", "shingle_hash32",
    "shingle_hashes", "shingle_strings", "signatures", "tokenize", "union_find", "verify_pairs",
]
