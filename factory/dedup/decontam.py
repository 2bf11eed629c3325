"""Benchmark decontamination by hashed word n-gram overlap (default 9-grams).

Texts use the ``words-v1`` tokenisation of :mod:`factory.dedup.shingle` (NFKC, casefold, ``\\w+``) and 64-bit n-gram
hashes; a text with fewer than ``n`` tokens contributes one n-gram made of all its tokens (so it matches only an equally
short identical text). Matching is one DuckDB hash join of problem n-grams against the distinct benchmark n-grams; every
(problem, benchmark item) pair that shares at least one n-gram is returned, with the evidence for and against it.

Two rules decide which pairs are contaminated (``DecontamParams.rule``):

* ``literal``: any ``min_matches`` shared n-grams (AceReason / Klear: "9-gram overlap"). A single shared stock
  phrase ("there is at most one edge between any pair of vertices", "the quick brown fox jumps over the lazy
  dog", "1 1 1 1 1 1 1 output 0") is enough.
* ``evidence`` (default): only *informative* n-grams count, and they must cover a share of the benchmark item.
  An n-gram is informative when it is not stock text and not example data:

  - stock: found in more than ``stock_df`` task families across the whole corpus (problems and benchmark items
    together; a family is the task lineage - MBPP / sanitized MBPP / MBPP+ task, HumanEval / HumanEval+,
    LeetCode slug - so one task in three datasets counts once), or a source's template (``template_df``: in
    more than ``max(template_min_df, template_df x problems of the source)`` problems of one source), or in
    more than ``max_benchmark_df`` benchmark items;
  - example data: fewer than ``min_content`` of its ``n`` words are words of letters (``1 1 1 1 1 1 1 output
    0``, ``nums 1 2 3 4 output 1 explanation``).

  A pair is contaminated when the shared informative n-grams are at least ``min_coverage`` of the benchmark item's
  informative n-grams. Two tasks of one dataset (lineage ids in the same namespace, e.g. two MBPP task ids) are distinct
  tasks by the dataset's own account: a one-sentence MBPP task differs from another one in a single word ("area of a
  pentagon" / "area of a rectangle"), so between them only a near-whole copy (``same_dataset_coverage``) counts.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .lsh import _arrow, _conn, _registered
from .shingle import RECIPE, WordHasher, shingle_hashes, tokenize

RULES = ("evidence", "literal")
_ROW_TYPES = {"matched_ngrams": pa.int64(), "benchmark_ngrams": pa.int64(), "example_span": pa.string(),
              "informative_ngrams": pa.int64(), "benchmark_informative": pa.int64(), "coverage": pa.float64(),
              "phrases": pa.int64(), "literal": pa.bool_(), "evidence": pa.bool_(), "contaminated": pa.bool_(),
              "reason": pa.string()}
OUTPUT_COLUMNS = ("problem_id", "benchmark", "benchmark_id", *_ROW_TYPES)


@dataclass(frozen=True)
class DecontamParams:
    """The two rules' parameters, as the module docstring names them; ``n``: words per n-gram; ``rule``: which rule
    sets ``contaminated`` (both are always computed); ``template_df`` / ``max_benchmark_df`` None: no such check."""

    n: int = 9
    rule: str = "evidence"
    min_matches: int = 1
    stock_df: int = 4
    min_content: int = 5
    min_coverage: float = 0.25
    same_dataset_coverage: float = 0.9
    template_df: float | None = 0.002
    template_min_df: int = 2
    max_benchmark_df: int | None = None
    ignore_numeric: bool = True      # False: no example-value check (min_content not applied)
    recipe: str = RECIPE

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"decontamination rule must be one of {RULES}, got {self.rule!r}")
        if self.n < 1:
            raise ValueError("n must be >= 1")

    def as_dict(self) -> dict:
        return asdict(self)


def _codes(values: list, prefix: str) -> np.ndarray:
    """Integer code per row for a label (problem and benchmark sides never share a code)."""
    codes: dict = {}
    return np.array([codes.setdefault(prefix + str(s), len(codes)) for s in values] or [], dtype=np.int64) \
        + (0 if prefix == "p:" else 1 << 40)


def _families(table: pa.Table, ids: str, side: str) -> list:
    """Task family per row: the ``family`` column where given (a lineage id), else the row itself."""
    own = [f"{side}:{i}" for i in table[ids].to_pylist()]
    return ([f"f:{f}" if f else o for f, o in zip(table["family"].to_pylist(), own)]
            if "family" in table.column_names else own)


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


def _content(tokens_per_doc: list[list[str]], n: int) -> np.ndarray:
    """Per shingle (in :func:`shingle_hashes` order, repeats kept): how many of its words are made of letters
    (at least two). A text shorter than ``n`` has one shingle over all its tokens."""
    parts = []
    for toks in tokens_per_doc:
        if not toks:
            continue
        word = np.fromiter((len(t) >= 2 and t.isalpha() for t in toks), dtype=np.int64, count=len(toks))
        if len(toks) < n:
            parts.append(np.array([word.sum()], dtype=np.int64))
            continue
        c = np.concatenate([[0], np.cumsum(word)])
        parts.append(c[n:] - c[:-n])
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _same_dataset(a: str, b: str) -> bool:
    """Two different task lineages of one dataset (``f:mbpp:654`` / ``f:mbpp:458``)."""
    return a != b and a.startswith("f:") and b.startswith("f:") and a[2:].split(":", 1)[0] == b[2:].split(":", 1)[0]


def _shingled(texts: list, n: int, hasher: WordHasher) -> tuple:
    """(tokens per text, then per shingle in :func:`shingle_hashes` order: hash, text, position, content)."""
    toks = [tokenize(t) for t in texts]
    offsets, hashes = shingle_hashes(texts, n, hasher, unique=False)
    counts = np.diff(offsets)
    doc = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    pos = np.arange(hashes.size, dtype=np.int64) - np.repeat(offsets[:-1], counts)
    return toks, hashes, doc, pos, _content(toks, n)


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs of n-gram start positions as (first, last)."""
    runs = itertools.groupby(enumerate(sorted(set(positions))), lambda ip: ip[1] - ip[0])   # a run: p - i constant
    return [(run[0][1], run[-1][1]) for run in (list(r) for _, r in runs)]


def _span(tokens: list[str], positions: list[int], n: int) -> str:
    """Tokens of the longest contiguous run of matched n-gram start positions (the first of equal ones)."""
    first, last = max(_runs(positions), key=lambda r: (r[1] - r[0], -r[0]))
    return " ".join(tokens[first : last + n])


def _reason(row: dict, params: DecontamParams) -> str:
    n = params.n
    span = row["example_span"]
    quote = f"'{span[:160]}{'...' if len(span) > 160 else ''}'"
    if row["informative_ngrams"] == 0:
        what = "only stock phrasing or example values" if row["phrases"] == 1 else "only stock/example text"
        return (f"shares {row['matched_ngrams']} {n}-gram(s), {what} ({row['phrases']} phrase(s), e.g. {quote}) "
                f"- no informative {n}-gram")
    return (f"shares {row['informative_ngrams']} of the benchmark item's {row['benchmark_informative']} "
            f"informative {n}-grams ({row['coverage']:.0%}; {row['matched_ngrams']} shared in all, "
            f"{row['phrases']} phrase(s)); longest shared passage {quote}")


def decontaminate(problems: pa.Table, benchmarks: pa.Table, params: DecontamParams = DecontamParams(),
                  con: duckdb.DuckDBPyConnection | None = None) -> tuple[pa.Table, dict]:
    """Pairs of problems and benchmark items that share word n-grams, with the evidence.

    ``problems``: ``problem_id, text`` (optional ``source``, ``family``); ``benchmarks``: ``benchmark,
    benchmark_id, text`` (optional ``family``). ``family`` is a task lineage id (None: the row is its own
    family); document frequencies for stock text count families over problems and benchmarks together.

    Returns ``(table, stats)``; table columns :data:`OUTPUT_COLUMNS`, one row per (problem, benchmark item)
    sharing at least one n-gram: ``matched_ngrams`` distinct shared n-grams, ``benchmark_ngrams`` distinct
    n-grams of the item, ``informative_ngrams`` / ``benchmark_informative`` the same for informative n-grams,
    ``coverage`` their ratio, ``phrases`` contiguous runs of shared n-grams in the problem, ``example_span`` the
    normalised words of the longest (informative where any) shared run, ``literal`` / ``evidence`` the two
    rules, ``contaminated`` the one ``params.rule`` names, ``reason`` a sentence for a person.
    """
    con = _conn(con)
    hasher = WordHasher()
    n = params.n
    p_toks, p_h, p_doc, p_pos, p_content = _shingled(problems["text"].to_pylist(), n, hasher)
    _, b_h, b_doc, _, b_content = _shingled(benchmarks["text"].to_pylist(), n, hasher)
    p_src = _codes(problems["source"].to_pylist() if "source" in problems.column_names
                   else ["problems"] * problems.num_rows, "p:")
    b_src = _codes(benchmarks["benchmark"].to_pylist(), "b:")
    p_fams, b_fams = _families(problems, "problem_id", "p"), _families(benchmarks, "benchmark_id", "b")
    fams = _codes(p_fams + b_fams, "f:")   # one code space: a family shared by both sides has one code
    p_fam, b_fam = fams[:problems.num_rows], fams[problems.num_rows:]
    prob_rows = pa.table({"pidx": p_doc, "pos": p_pos, "h": p_h.view(np.int64), "src": p_src[p_doc],
                          "fam": p_fam[p_doc], "content": p_content})
    bench_rows = pa.table({"bidx": b_doc, "h": b_h.view(np.int64), "src": b_src[b_doc], "fam": b_fam[b_doc],
                           "content": b_content})
    need = min(int(params.min_content), n) if params.ignore_numeric else 0
    with _registered(con, prob=prob_rows, bench=bench_rows) as (prob, bench):
        stock = [f"""SELECT h FROM (SELECT h, fam FROM {prob} UNION SELECT h, fam FROM {bench})
                     GROUP BY h HAVING count(*) > {int(params.stock_df)}"""]
        if params.max_benchmark_df is not None:
            stock.append(f"SELECT h FROM {bench} GROUP BY h "
                         f"HAVING count(DISTINCT bidx) > {int(params.max_benchmark_df)}")
        if params.template_df is not None:
            stock.append(template_sql(prob, bench, params))
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE _decontam_stock AS {' UNION '.join(stock)}")
            con.execute(f"""CREATE OR REPLACE TEMP TABLE _decontam_b AS
                SELECT DISTINCT bidx, h, content >= {need} AND h NOT IN (SELECT h FROM _decontam_stock) AS inf
                FROM {bench}""")
            hits = _arrow(con.execute(f"""
                WITH m AS (
                    SELECT p.pidx, b.bidx, count(DISTINCT p.h)::BIGINT AS matched,
                           count(DISTINCT p.h) FILTER (WHERE b.inf)::BIGINT AS inf_matched,
                           list(p.pos ORDER BY p.pos) AS positions,
                           list(p.pos ORDER BY p.pos) FILTER (WHERE b.inf) AS inf_positions
                    FROM {prob} p JOIN _decontam_b b USING (h)
                    GROUP BY p.pidx, b.bidx
                ), bi AS (
                    SELECT bidx, count(*)::BIGINT AS b_all, count(*) FILTER (WHERE inf)::BIGINT AS b_inf
                    FROM _decontam_b GROUP BY bidx
                )
                SELECT m.*, bi.b_all, bi.b_inf FROM m JOIN bi USING (bidx) ORDER BY m.pidx, m.bidx
            """))
            n_stock = con.execute("SELECT count(*) FROM _decontam_stock").fetchone()[0]
        finally:
            con.execute("DROP TABLE IF EXISTS _decontam_stock")
            con.execute("DROP TABLE IF EXISTS _decontam_b")
    pidx = hits["pidx"].to_numpy()
    bidx = hits["bidx"].to_numpy()
    rows = []
    for pi, bi, matched, inf_matched, positions, inf_positions, b_all, b_inf in zip(*(hits[c].to_pylist() for c in (
            "pidx", "bidx", "matched", "inf_matched", "positions", "inf_positions", "b_all", "b_inf"))):
        coverage = inf_matched / b_inf if b_inf else 0.0
        need_cov = params.same_dataset_coverage if _same_dataset(p_fams[pi], b_fams[bi]) else params.min_coverage
        evidence = inf_matched > 0 and coverage >= need_cov
        literal = matched >= params.min_matches
        row = {"matched_ngrams": matched, "benchmark_ngrams": b_all, "informative_ngrams": inf_matched,
               "benchmark_informative": b_inf, "coverage": round(coverage, 4), "phrases": len(_runs(positions)),
               "example_span": _span(p_toks[pi], inf_positions or positions, n),
               "literal": literal, "evidence": evidence,
               "contaminated": literal if params.rule == "literal" else evidence}
        row["reason"] = _reason(row, params)
        rows.append(row)
    table = pa.table({
        "problem_id": problems["problem_id"].take(pa.array(pidx, pa.int64())),
        "benchmark": benchmarks["benchmark"].take(pa.array(bidx, pa.int64())),
        "benchmark_id": benchmarks["benchmark_id"].take(pa.array(bidx, pa.int64())),
        **{k: pa.array([r[k] for r in rows], t) for k, t in _ROW_TYPES.items()}})
    problems_with = lambda key: {pi for pi, r in zip(pidx.tolist(), rows) if r[key]}  # noqa: E731
    stats = {"n_problems": problems.num_rows, "n_benchmark_items": benchmarks.num_rows,
             "n_problem_ngrams": int(p_h.size), "n_benchmark_ngrams": int(np.unique(b_h).size),
             "n_pairs": table.num_rows, "n_flagged_pairs": sum(r["contaminated"] for r in rows),
             "n_flagged_problems": len(problems_with("contaminated")),
             "n_literal_problems": len(problems_with("literal")), "n_evidence_problems": len(problems_with("evidence")),
             "n_stock_ngrams": int(n_stock), "params": params.as_dict()}
    return table, stats
