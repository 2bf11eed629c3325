"""LSH candidate pairs from a band table with a DuckDB ``GROUP BY`` (no in-memory LSH index).

Band tables have columns ``(doc_id, band, band_hash)``. A bucket is one ``(band, band_hash)`` value shared by >= 2
documents. Buckets up to ``max_bucket`` members emit all pairs; larger buckets (templated boilerplate) emit only
star edges to their smallest ``doc_id``, which keeps the pair count linear; the resulting clusters are then
transitive through that anchor. Pairs are ``(doc_id_a < doc_id_b)`` and distinct over bands.
"""
from __future__ import annotations

import contextlib
import itertools

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .shingle import cores, pool_map

_counter = itertools.count()


def _conn(con: duckdb.DuckDBPyConnection | None) -> duckdb.DuckDBPyConnection:
    return con if con is not None else duckdb.connect()


def _arrow(result) -> pa.Table:
    """Arrow table of an executed DuckDB result (``to_arrow_table`` where available)."""
    return (getattr(result, "to_arrow_table", None) or result.fetch_arrow_table)()


@contextlib.contextmanager
def _registered(con: duckdb.DuckDBPyConnection, **tables: pa.Table):
    """The tables registered in ``con`` under fresh names (yielded in order) for the block, unregistered after."""
    names = [f"_dedup_{stem}_{next(_counter)}" for stem in tables]
    for name, table in zip(names, tables.values()):
        con.register(name, table)
    try:
        yield names
    finally:
        for name in names:
            con.unregister(name)


def candidate_pairs(bands: pa.Table, con: duckdb.DuckDBPyConnection | None = None, max_bucket: int = 200) -> pa.Table:
    """Candidate pairs ``(doc_id_a, doc_id_b, n_bands)`` within one band table.

    ``n_bands`` is the number of bands the pair shares (0 < n_bands <= bands; for star edges of
    oversized buckets it counts only those buckets). Integer and string ids take the NumPy path
    (:func:`_candidate_pairs_numpy`), others the DuckDB query; both give the same table.
    """
    return (_candidate_pairs_numpy(bands, int(max_bucket)) if _numpy_ok(bands)
            else _candidate_pairs_sql(bands, con, max_bucket))


def _numpy_ok(bands: pa.Table) -> bool:
    t = bands.schema.field("doc_id").type
    ok_type = pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
    return ok_type and all(bands[c].null_count == 0 for c in ("doc_id", "band", "band_hash"))


def _candidate_pairs_numpy(bands: pa.Table, max_bucket: int) -> pa.Table:
    """The query of :func:`_candidate_pairs_sql` on ranks of the ids (Arrow's id order = DuckDB's ORDER BY
    for integers and byte-wise strings): per band, rows sorted by ``band_hash``; runs of >= 2 rows are
    buckets; small buckets give every pair of rows with distinct ids, large ones an edge from every other row
    to the smallest id; ``np.unique`` over ``a * n_ids + b`` counts bands and orders by ``(a, b)``."""
    ids = bands["doc_id"].combine_chunks()
    uniq = pc.unique(ids)
    sorted_ids = uniq.take(pc.sort_indices(uniq))
    n_ids = len(sorted_ids)
    rank = pc.index_in(ids, value_set=sorted_ids).to_numpy(zero_copy_only=False).astype(np.int64)
    band = bands["band"].to_numpy()
    bh = bands["band_hash"].to_numpy()
    by_band = np.argsort(band, kind="stable")
    groups = np.split(by_band, np.flatnonzero(np.diff(band[by_band])) + 1)
    k = cores()
    codes = [c for part in pool_map(lambda g: _bucket_codes(g, bh, rank, n_ids, max_bucket),
                                    [groups[i::k] for i in range(k)]) for c in part]
    pair, n_bands = np.unique(np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64), return_counts=True)
    out_t = pa.string() if pa.types.is_large_string(ids.type) else ids.type  # DuckDB VARCHAR comes back as string
    return pa.table({"doc_id_a": sorted_ids.take(pa.array(pair // max(n_ids, 1))).cast(out_t),
                     "doc_id_b": sorted_ids.take(pa.array(pair % max(n_ids, 1))).cast(out_t),
                     "n_bands": pa.array(n_bands.astype(np.int32))})


def _bucket_codes(groups: list, bh: np.ndarray, rank: np.ndarray, n_ids: int, max_bucket: int) -> list:
    """Pair codes ``a * n_ids + b`` (id ranks, ``a < b``) of the buckets of each band's rows in ``groups``."""
    codes = []
    for rows in groups:
        if rows.size < 2:
            continue
        o = np.argsort(bh[rows])
        h, r = bh[rows][o], rank[rows][o]
        start = np.flatnonzero(np.concatenate(([True], h[1:] != h[:-1])))
        size = np.diff(np.append(start, h.size))
        small = (size >= 2) & (size <= max_bucket)
        if small.any():  # every pair of positions i < j inside a run
            s0, sz = start[small], size[small]
            pos = np.repeat(s0 - np.cumsum(sz) + sz, sz) + np.arange(int(sz.sum()))  # positions in the runs
            left = np.repeat(s0 + sz, sz) - pos - 1  # partners after each position
            i = np.repeat(pos, left)
            first = np.cumsum(left) - left
            j = np.repeat(pos + 1 - first, left) + np.arange(int(left.sum()))
            a, b = np.minimum(r[i], r[j]), np.maximum(r[i], r[j])
            keep = a != b
            codes.append(a[keep] * n_ids + b[keep])
        big = size > max_bucket
        if big.any():  # star edges to the run's smallest id
            s0, sz = start[big], size[big]
            anchor = np.minimum.reduceat(r, start)[big]
            pos = np.repeat(s0 - np.cumsum(sz) + sz, sz) + np.arange(int(sz.sum()))
            anc = np.repeat(anchor, sz)
            keep = r[pos] != anc
            codes.append(anc[keep] * n_ids + r[pos][keep])
    return codes


def _candidate_pairs_sql(bands: pa.Table, con: duckdb.DuckDBPyConnection | None = None,
                         max_bucket: int = 200) -> pa.Table:
    """The reference DuckDB query of :func:`candidate_pairs` (any id type)."""
    con = _conn(con)
    with _registered(con, bands=bands) as (t,):
        return _arrow(con.execute(f"""
        WITH buckets AS (
            SELECT band, band_hash, count(*) AS n, min(doc_id) AS anchor
            FROM {t} GROUP BY band, band_hash HAVING count(*) > 1
        ), members AS (
            SELECT m.doc_id, m.band, m.band_hash, k.n, k.anchor
            FROM {t} m JOIN buckets k USING (band, band_hash)
        ), edges AS (
            SELECT x.doc_id AS doc_id_a, y.doc_id AS doc_id_b
            FROM members x JOIN members y USING (band, band_hash)
            WHERE x.n <= {int(max_bucket)} AND x.doc_id < y.doc_id
            UNION ALL
            SELECT anchor AS doc_id_a, doc_id AS doc_id_b
            FROM members WHERE n > {int(max_bucket)} AND doc_id <> anchor
        )
        SELECT doc_id_a, doc_id_b, count(*)::INTEGER AS n_bands
        FROM edges GROUP BY doc_id_a, doc_id_b ORDER BY doc_id_a, doc_id_b
        """))


def cross_candidate_pairs(new_bands: pa.Table, existing_bands: pa.Table,
                          con: duckdb.DuckDBPyConnection | None = None) -> pa.Table:
    """Pairs ``(doc_id_a, doc_id_b, n_bands)`` with ``a`` in ``new_bands`` and ``b`` in ``existing_bands`` that share a
    bucket (join on ``(band, band_hash)``); old signatures are only read, never recomputed. Rows of ``new_bands`` whose
    doc_id is already in ``existing_bands`` are ignored (anti-join), so re-submitting old docs is harmless."""
    con = _conn(con)
    with _registered(con, new=new_bands, old=existing_bands) as (n, e):
        return _arrow(con.execute(f"""
        WITH fresh AS (SELECT * FROM {n} ANTI JOIN (SELECT DISTINCT doc_id FROM {e}) o USING (doc_id))
        SELECT f.doc_id AS doc_id_a, o.doc_id AS doc_id_b, count(*)::INTEGER AS n_bands
        FROM fresh f JOIN {e} o USING (band, band_hash)
        GROUP BY f.doc_id, o.doc_id ORDER BY doc_id_a, doc_id_b
        """))
