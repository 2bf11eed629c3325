"""Benchmark decontamination by hashed word n-gram overlap (default 9-grams, AceReason/Klear style).

Texts use the ``words-v1`` tokenisation of :mod:`factory.dedup.shingle` (NFKC, casefold, ``\\w+``)
and 64-bit n-gram hashes; a text with fewer than ``n`` tokens contributes one n-gram made of all
its tokens (so it matches only an equally short identical text). Matching is one DuckDB hash join
of problem n-grams against the distinct benchmark n-grams.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .lsh import _arrow, _conn, _register
from .shingle import RECIPE, WordHasher, shingle_hashes, tokenize

OUTPUT_COLUMNS = ("problem_id", "benchmark", "benchmark_id", "matched_ngrams", "benchmark_ngrams",
                  "example_span")


@dataclass(frozen=True)
class DecontamParams:
    """``n``: words per n-gram. Rule: a (problem, benchmark item) pair is contaminated when it
    shares ``>= min_matches`` distinct n-grams (1 = any match). ``max_benchmark_df``: ignore
    n-grams found in more than this many benchmark items (templated boilerplate such as
    "write a python function to count the number of" occurs in 14 MBPP items); None keeps all."""

    n: int = 9
    min_matches: int = 1
    max_benchmark_df: int | None = None
    recipe: str = RECIPE

    def as_dict(self) -> dict:
        return asdict(self)


def _csr_to_rows(offsets: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counts = np.diff(offsets)
    doc = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    pos = np.arange(hashes.size, dtype=np.int64) - np.repeat(offsets[:-1], counts)
    return doc, pos


def _span(tokens: list[str], positions: list[int], n: int) -> str:
    """Tokens of the first contiguous run of matched n-gram start positions."""
    pos = sorted(positions)
    end = pos[0]
    for p in pos[1:]:
        if p != end + 1:
            break
        end = p
    return " ".join(tokens[pos[0] : end + n])


def decontaminate(
    problems: pa.Table,
    benchmarks: pa.Table,
    params: DecontamParams = DecontamParams(),
    con: duckdb.DuckDBPyConnection | None = None,
) -> tuple[pa.Table, dict]:
    """Flag problems that share word n-grams with benchmark items.

    ``problems``: ``problem_id, text``; ``benchmarks``: ``benchmark, benchmark_id, text``.
    Returns ``(table, stats)``; table columns :data:`OUTPUT_COLUMNS`, one row per contaminated
    (problem, benchmark item) pair: ``matched_ngrams`` distinct shared n-grams,
    ``benchmark_ngrams`` distinct n-grams of the benchmark item, ``example_span`` the normalised
    words of the first contiguous matched run in the problem.
    """
    con = _conn(con)
    hasher = WordHasher()
    p_texts = problems["text"].to_pylist()
    p_off, p_h = shingle_hashes(p_texts, params.n, hasher, unique=False)
    b_off, b_h = shingle_hashes(benchmarks["text"].to_pylist(), params.n, hasher, unique=True)
    p_doc, p_pos = _csr_to_rows(p_off, p_h)
    b_doc, _ = _csr_to_rows(b_off, b_h)
    prob = _register(con, pa.table({"pidx": p_doc, "pos": p_pos, "h": p_h.view(np.int64)}), "prob")
    bench = _register(con, pa.table({"bidx": b_doc, "h": b_h.view(np.int64)}), "bench")
    df = "" if params.max_benchmark_df is None else \
        f"WHERE h NOT IN (SELECT h FROM {bench} GROUP BY h HAVING count(*) > {int(params.max_benchmark_df)})"
    try:
        hits = _arrow(con.execute(f"""
            WITH b AS (SELECT bidx, h FROM {bench} {df})
            SELECT p.pidx, b.bidx, count(DISTINCT p.h)::BIGINT AS matched, list(p.pos ORDER BY p.pos) AS positions
            FROM {prob} p JOIN b USING (h)
            GROUP BY p.pidx, b.bidx HAVING count(DISTINCT p.h) >= {int(params.min_matches)}
            ORDER BY p.pidx, b.bidx
        """))
    finally:
        con.unregister(prob)
        con.unregister(bench)
    pidx = hits["pidx"].to_numpy()
    bidx = hits["bidx"].to_numpy()
    tok_cache: dict[int, list[str]] = {}
    spans = []
    for pi, positions in zip(pidx.tolist(), hits["positions"].to_pylist()):
        if pi not in tok_cache:
            tok_cache[pi] = tokenize(p_texts[pi])
        spans.append(_span(tok_cache[pi], positions, params.n))
    table = pa.table({
        "problem_id": problems["problem_id"].take(pa.array(pidx, pa.int64())),
        "benchmark": benchmarks["benchmark"].take(pa.array(bidx, pa.int64())),
        "benchmark_id": benchmarks["benchmark_id"].take(pa.array(bidx, pa.int64())),
        "matched_ngrams": hits["matched"],
        "benchmark_ngrams": pa.array(np.diff(b_off)[bidx].astype(np.int64)),
        "example_span": pa.array(spans, pa.string()),
    })
    stats = {
        "n_problems": problems.num_rows,
        "n_benchmark_items": benchmarks.num_rows,
        "n_problem_ngrams": int(p_h.size),
        "n_benchmark_ngrams": int(b_h.size),
        "n_flagged_pairs": table.num_rows,
        "n_flagged_problems": len(set(pidx.tolist())),
        "params": params.as_dict(),
    }
    return table, stats
