"""End-to-end dedup of a problem table: exact keys + MinHash/LSH near-dups + clusters.

Input ``docs`` columns: ``doc_id`` (unique, any orderable type), ``text`` (problem statement),
optional ``code`` (reference solution, for exact code dedup), optional ``n_tests`` and
``source_priority`` (keeper rule, see :mod:`factory.dedup.cluster`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .cluster import clusters
from .exact import exact_hashes, exact_pairs
from .lsh import _conn, candidate_pairs, cross_candidate_pairs
from .minhash import MinHashParams, band_table, signatures
from .shingle import WordHasher
from .verify import verify_pairs


@dataclass
class DedupResult:
    """``clusters``: (doc_id, cluster_id, cluster_size, is_keeper), one row per document;
    ``pairs``: (doc_id_a, doc_id_b, kind, jaccard) evidence edges (jaccard null for exact kinds);
    ``bands``: (doc_id, band, band_hash) of the documents signed in this call (persist these);
    ``stats``: counts, seconds per step and ``params`` (``MinHashParams.as_dict()``)."""

    clusters: pa.Table
    pairs: pa.Table
    bands: pa.Table
    stats: dict = field(default_factory=dict)


def compute_bands(doc_ids: pa.Array, texts: list, params: MinHashParams, batch: int = 20000,
                  progress: bool = False) -> pa.Table:
    """Band table for many documents, signing ``batch`` texts at a time (bounded memory)."""
    hasher = WordHasher()
    rng = range(0, len(texts), batch)
    if progress:
        from tqdm import tqdm

        rng = tqdm(rng, desc="minhash", unit="batch")
    parts = [band_table(doc_ids.slice(i, batch), signatures(texts[i : i + batch], params, hasher), params) for i in rng]
    return pa.concat_tables(parts) if parts else band_table(doc_ids, np.zeros((0, params.num_perm), np.uint32), params)


def _pairs(t: pa.Table, kind: str, id_type: pa.DataType) -> pa.Table:
    n = t.num_rows
    jac = t["jaccard"] if "jaccard" in t.column_names else pa.nulls(n, pa.float64())
    return pa.table({"doc_id_a": t["doc_id_a"].cast(id_type), "doc_id_b": t["doc_id_b"].cast(id_type),
                     "kind": pa.array([kind] * n, pa.string()), "jaccard": jac.cast(pa.float64())})


def _timed(st: dict, key: str, fn, *args, **kw):
    """``fn(*args, **kw)``, its wall seconds stored as ``st[key]``."""
    t = time.perf_counter()
    out = fn(*args, **kw)
    st[key] = time.perf_counter() - t
    return out


def _exact_edges(ids, text_keys, code_keys, con, id_type) -> list[pa.Table]:
    """``exact_text`` edges, then ``exact_code`` ones where ``code_keys`` is given."""
    return [_pairs(exact_pairs(ids, keys, con), f"exact_{kind}", id_type)
            for kind, keys in (("text", text_keys), ("code", code_keys)) if keys is not None]


def dedup(docs: pa.Table, params: MinHashParams = MinHashParams(), con: duckdb.DuckDBPyConnection | None = None,
          max_bucket: int = 200, progress: bool = False) -> DedupResult:
    """Exact (text, and code if a ``code`` column exists) + near dedup of ``docs``."""
    con, t0, st = _conn(con), time.perf_counter(), {}
    ids, id_type = docs["doc_id"].combine_chunks(), docs.schema.field("doc_id").type
    texts = docs["text"].to_pylist()
    codes = docs["code"].to_pylist() if "code" in docs.column_names else None
    code_keys = None if codes is None else exact_hashes(codes, "code")
    edges = _exact_edges(ids, exact_hashes(texts, "text"), code_keys, con, id_type)
    st["exact_s"] = time.perf_counter() - t0
    bands = _timed(st, "minhash_s", compute_bands, ids, texts, params, progress=progress)
    cand = _timed(st, "lsh_s", candidate_pairs, bands, con, max_bucket)
    near = _timed(st, "verify_s", verify_pairs, cand, ids, texts, params.ngram, params.threshold)
    edges.append(_pairs(near, "near", id_type))
    pairs = pa.concat_tables(edges)
    cl = _timed(st, "cluster_s", clusters, pairs, docs)
    return _result(st, t0, docs.num_rows, bands, params, cand, pairs, cl)


def _result(st: dict, t0: float, n_docs, bands, params, cand, pairs, cl, **extra) -> DedupResult:
    """The result, ``st`` completed with the counts, ``extra``, ``total_s`` (since ``t0``) and ``params``."""
    kinds = pc.value_counts(pairs["kind"]).to_pylist() if pairs.num_rows else []
    st.update({"n_docs": n_docs, "n_signed": bands.num_rows // params.bands, "n_candidates": cand.num_rows,
               "n_pairs": {k["values"]: k["counts"] for k in kinds},
               "n_dup_clusters": int(pc.sum(pc.and_(cl["is_keeper"], pc.greater(cl["cluster_size"], 1))).as_py() or 0),
               "n_removed": int(cl.num_rows - pc.sum(cl["is_keeper"]).as_py())}, **extra)
    st["total_s"] = time.perf_counter() - t0
    st["params"] = params.as_dict()
    return DedupResult(cl, pairs, bands, st)


def dedup_incremental(new_docs: pa.Table, existing_bands: pa.Table, existing_docs: pa.Table,
                      existing_clusters: pa.Table | None = None, params: MinHashParams = MinHashParams(),
                      con: duckdb.DuckDBPyConnection | None = None, max_bucket: int = 200) -> DedupResult:
    """Dedup ``new_docs`` against themselves and against an existing corpus.

    Only new documents are signed; old ones are matched through ``existing_bands`` (join on ``(band, band_hash)``).
    ``existing_docs`` has ``doc_id, text`` (+ optional ``code``, ``text_key``/``code_key`` precomputed
    :func:`exact_hashes`, ``n_tests``, ``source_priority``); old texts are shingled only for old docs in candidate
    pairs. ``existing_clusters`` (``doc_id, cluster_id``) from the previous run are merged, so the returned
    ``clusters`` (over new + existing docs) equal a full :func:`dedup` of the union when the same ``params`` and no
    oversized buckets are involved. ``bands`` holds only the new rows to append.
    """
    con, t0, st = _conn(con), time.perf_counter(), {}
    id_type = new_docs.schema.field("doc_id").type
    old_ids = existing_docs["doc_id"].cast(id_type)
    if pc.any(pc.is_in(new_docs["doc_id"], value_set=old_ids)).as_py():
        raise ValueError("new_docs contains doc_ids that are already in existing_docs")
    new_ids = new_docs["doc_id"].combine_chunks()
    new_texts = new_docs["text"].to_pylist()
    # exact keys: new docs + old keys (precomputed if available)
    all_ids = pa.concat_arrays([new_ids, old_ids.combine_chunks()])
    def keys(kind):   # the column ``kind``, old rows' precomputed ``<kind>_key`` where given
        new_k = exact_hashes(new_docs[kind], kind)
        if f"{kind}_key" in existing_docs.column_names:
            old_k = existing_docs[f"{kind}_key"].combine_chunks()
        elif kind in existing_docs.column_names:
            old_k = exact_hashes(existing_docs[kind], kind)
        else:  # no old code: hash of "" never links
            old_k = exact_hashes([None] * existing_docs.num_rows, kind)
        return pa.concat_arrays([new_k, old_k.cast(pa.string())])
    edges = _exact_edges(all_ids, keys("text"), keys("code") if "code" in new_docs.column_names else None, con, id_type)
    edges = [e.filter(pc.invert(pc.and_(pc.is_in(e["doc_id_a"], value_set=old_ids),
                                        pc.is_in(e["doc_id_b"], value_set=old_ids)))) for e in edges]
    st["exact_s"] = time.perf_counter() - t0
    bands = _timed(st, "minhash_s", compute_bands, new_ids, new_texts, params)
    old_bands = existing_bands.select(["doc_id", "band", "band_hash"])
    old_bands = old_bands.set_column(0, "doc_id", old_bands["doc_id"].cast(id_type))
    cand = _timed(st, "lsh_s", lambda: pa.concat_tables([candidate_pairs(bands, con, max_bucket),
                                                         cross_candidate_pairs(bands, old_bands, con)]))
    t = time.perf_counter()
    involved = pc.unique(pa.concat_arrays([cand["doc_id_b"].combine_chunks(), cand["doc_id_a"].combine_chunks()]))
    old_needed = existing_docs.filter(pc.is_in(existing_docs["doc_id"].cast(id_type), value_set=involved))
    v_ids = pa.concat_arrays([new_ids, old_needed["doc_id"].cast(id_type).combine_chunks()])
    near = verify_pairs(cand, v_ids, new_texts + old_needed["text"].to_pylist(), params.ngram, params.threshold)
    st["verify_s"] = time.perf_counter() - t
    edges.append(_pairs(near, "near", id_type))
    pairs = pa.concat_tables(edges)
    meta_cols = [c for c in ("doc_id", "n_tests", "source_priority") if c in new_docs.column_names]
    old_meta = existing_docs.select([c for c in meta_cols if c in existing_docs.column_names])
    old_meta = old_meta.set_column(0, "doc_id", old_meta["doc_id"].cast(id_type))
    all_docs = pa.concat_tables([new_docs.select(meta_cols), old_meta], promote_options="permissive")
    cl_edges = pairs
    if existing_clusters is not None:
        prev = existing_clusters.select(["doc_id", "cluster_id"])
        prev = prev.filter(pc.not_equal(prev["doc_id"], prev["cluster_id"]))
        cl_edges = pa.concat_tables([pairs.select(["doc_id_a", "doc_id_b"]), pa.table({
            "doc_id_a": prev["cluster_id"].cast(id_type), "doc_id_b": prev["doc_id"].cast(id_type)})])
    cl = _timed(st, "cluster_s", clusters, cl_edges, all_docs)
    return _result(st, t0, all_docs.num_rows, bands, params, cand, pairs, cl, n_new_docs=new_docs.num_rows)
