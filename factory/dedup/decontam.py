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
    "write a python function to count the number of" occurs in 14 MBPP items); None keeps all.

    ``template_df`` / ``template_min_df``: a source's template text is not evidence of contamination. An n-gram
    found in more than ``max(template_min_df, template_df x problems of the source)`` problems of one source
    (problem side: the ``source`` column when given; benchmark side: ``benchmark``) is that site's boilerplate
    (LeetCode's "answer may be very large return it modulo 10^9 + 7", "constraints 1 nums length ...") and is
    dropped on both sides before matching (document-frequency filtering). A task copied from a benchmark keeps
    its own, rare n-grams, so it is still caught. ``template_df=None`` matches every n-gram.

    ``ignore_numeric``: an n-gram of digits only is example data ("nums = [1,0,0,1,0,1,0,0,0]"), not statement
    text, and is not matched either."""

    n: int = 9
    min_matches: int = 1
    max_benchmark_df: int | None = None
    template_df: float | None = 0.002
    template_min_df: int = 2
    ignore_numeric: bool = True
    recipe: str = RECIPE

    def as_dict(self) -> dict:
        return asdict(self)


def _source_codes(sources: list, prefix: str) -> np.ndarray:
    """Integer code per row for its source (problem and benchmark sources never share a code)."""
    codes: dict = {}
    return np.array([codes.setdefault(prefix + str(s), len(codes)) for s in sources] or [], dtype=np.int64) \
        + (0 if prefix == "p:" else 1 << 40)


def template_sql(prob: str, bench: str, params: DecontamParams) -> str:
    """Hashes of each source's template n-grams: in more than max(template_min_df, template_df x source size)
    distinct problems of one source (registered relations ``prob``/``bench`` with pidx/bidx, h, src)."""
    frac, floor = float(params.template_df), int(params.template_min_df)
    return f"""
        SELECT DISTINCT d.h FROM (
            SELECT src, h, count(DISTINCT pidx) AS df FROM {prob} GROUP BY src, h
            UNION ALL SELECT src, h, count(DISTINCT bidx) AS df FROM {bench} GROUP BY src, h) AS d
        JOIN (SELECT src, count(DISTINCT pidx) AS size FROM {prob} GROUP BY src
              UNION ALL SELECT src, count(DISTINCT bidx) AS size FROM {bench} GROUP BY src) AS s USING (src)
        WHERE d.df > greatest({floor}, {frac} * s.size)"""


def numeric_ngrams(texts: list, n: int, hasher: WordHasher) -> np.ndarray:
    """Hashes of the n-grams made of digit tokens only (runs of >= n numbers in the texts)."""
    runs = []
    for text in texts:
        run: list[str] = []
        for tok in tokenize(text) + [""]:
            if tok.isdigit():
                run.append(tok)
                continue
            if len(run) >= n:
                runs.append(" ".join(run))
            run = []
    if not runs:
        return np.zeros(0, dtype=np.uint64)
    _, hashes = shingle_hashes(runs, n, hasher, unique=True)
    return np.unique(hashes)


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
    p_src = _source_codes(problems["source"].to_pylist() if "source" in problems.column_names
                          else ["problems"] * problems.num_rows, "p:")
    b_src = _source_codes(benchmarks["benchmark"].to_pylist(), "b:")
    prob = _register(con, pa.table({"pidx": p_doc, "pos": p_pos, "h": p_h.view(np.int64),
                                    "src": p_src[p_doc] if p_doc.size else p_src[:0]}), "prob")
    bench = _register(con, pa.table({"bidx": b_doc, "h": b_h.view(np.int64),
                                     "src": b_src[b_doc] if b_doc.size else b_src[:0]}), "bench")
    drop = []
    if params.max_benchmark_df is not None:
        drop.append(f"SELECT h FROM {bench} GROUP BY h HAVING count(*) > {int(params.max_benchmark_df)}")
    if params.template_df is not None:
        drop.append(template_sql(prob, bench, params))
    numeric = None
    if params.ignore_numeric:
        numeric = _register(con, pa.table({"h": numeric_ngrams(benchmarks["text"].to_pylist(), params.n,
                                                               hasher).view(np.int64)}), "numeric")
        drop.append(f"SELECT h FROM {numeric}")
    where = f"WHERE h NOT IN ({' UNION '.join(drop)})" if drop else ""
    try:
        hits = _arrow(con.execute(f"""
            WITH b AS (SELECT bidx, h FROM {bench} {where})
            SELECT p.pidx, b.bidx, count(DISTINCT p.h)::BIGINT AS matched, list(p.pos ORDER BY p.pos) AS positions
            FROM {prob} p JOIN b USING (h)
            GROUP BY p.pidx, b.bidx HAVING count(DISTINCT p.h) >= {int(params.min_matches)}
            ORDER BY p.pidx, b.bidx
        """))
        n_template = con.execute(f"SELECT count(*) FROM ({template_sql(prob, bench, params)})").fetchone()[0] \
            if params.template_df is not None else 0
    finally:
        con.unregister(prob)
        con.unregister(bench)
        if numeric is not None:
            con.unregister(numeric)
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
        "n_template_ngrams": int(n_template),
        "params": params.as_dict(),
    }
    return table, stats
