"""LSH candidate pairs from a band table with a DuckDB ``GROUP BY`` (no in-memory LSH index).

Band tables have columns ``(doc_id, band, band_hash)``. A bucket is one ``(band, band_hash)``
value shared by >= 2 documents. Buckets up to ``max_bucket`` members emit all pairs; larger
buckets (templated boilerplate) emit only star edges to their smallest ``doc_id``, which keeps
the pair count linear; the resulting clusters are then transitive through that anchor.
Pairs are ``(doc_id_a < doc_id_b)`` and distinct over bands.
"""
from __future__ import annotations

import itertools

import duckdb
import pyarrow as pa

_counter = itertools.count()


def _conn(con: duckdb.DuckDBPyConnection | None) -> duckdb.DuckDBPyConnection:
    return con if con is not None else duckdb.connect()


def _arrow(result) -> pa.Table:
    """Arrow table of an executed DuckDB result (``to_arrow_table`` where available)."""
    f = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
    return f()


def _register(con: duckdb.DuckDBPyConnection, table: pa.Table, stem: str) -> str:
    name = f"_dedup_{stem}_{next(_counter)}"
    con.register(name, table)
    return name


def candidate_pairs(
    bands: pa.Table, con: duckdb.DuckDBPyConnection | None = None, max_bucket: int = 200
) -> pa.Table:
    """Candidate pairs ``(doc_id_a, doc_id_b, n_bands)`` within one band table.

    ``n_bands`` is the number of bands the pair shares (0 < n_bands <= bands; for star edges of
    oversized buckets it counts only those buckets).
    """
    con = _conn(con)
    t = _register(con, bands, "bands")
    try:
        sql = f"""
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
        """
        return _arrow(con.execute(sql))
    finally:
        con.unregister(t)


def cross_candidate_pairs(
    new_bands: pa.Table, existing_bands: pa.Table, con: duckdb.DuckDBPyConnection | None = None
) -> pa.Table:
    """Pairs ``(doc_id_a, doc_id_b, n_bands)`` with ``a`` in ``new_bands`` and ``b`` in
    ``existing_bands`` that share a bucket (join on ``(band, band_hash)``); old signatures are
    only read, never recomputed. Rows of ``new_bands`` whose doc_id is already in
    ``existing_bands`` are ignored (anti-join), so re-submitting old docs is harmless."""
    con = _conn(con)
    n = _register(con, new_bands, "new")
    e = _register(con, existing_bands, "old")
    try:
        sql = f"""
        WITH fresh AS (SELECT * FROM {n} ANTI JOIN (SELECT DISTINCT doc_id FROM {e}) o USING (doc_id))
        SELECT f.doc_id AS doc_id_a, o.doc_id AS doc_id_b, count(*)::INTEGER AS n_bands
        FROM fresh f JOIN {e} o USING (band, band_hash)
        GROUP BY f.doc_id, o.doc_id ORDER BY doc_id_a, doc_id_b
        """
        return _arrow(con.execute(sql))
    finally:
        con.unregister(n)
        con.unregister(e)
