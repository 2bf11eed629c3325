"""`factory dedup`: exact + MinHash-LSH near dedup of problems, the lake side of factory.dedup (one transaction).

dedup: problems are documents (text = question, code = first reference program). Band hashes are stored per
parameter set, so a later run signs only problems it has not seen (incremental), joins them against the stored
bands, verifies candidates by exact Jaccard and re-clusters everything. The run report (ops.runs.message)
holds the counts and the recall curve of the chosen bands x rows: theoretical and measured on planted pairs.
"""
from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING

from factory.errors import FactoryError

if TYPE_CHECKING:
    from factory.dedup import MinHashParams


_DOCS_SQL = """
    SELECT p.problem_id AS doc_id, p.source, p.question AS text,
           (SELECT code FROM silver.programs r WHERE r.problem_id = p.problem_id AND r.origin = 'reference'
            ORDER BY r.program_id LIMIT 1) AS code,
           (SELECT count(*) FROM silver.tests t WHERE t.problem_id = p.problem_id) AS n_tests
    FROM silver.problems p ORDER BY p.problem_id
"""


def run_dedup(lake=None, params: MinHashParams | None = None, prefer: list[str] | None = None,
              full: bool = False, recall_pairs: int = 30) -> dict:
    """Dedup every problem in the lake; returns the run report (also stored in ops.runs.message)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from factory.dedup import MinHashParams, dedup, dedup_incremental
    from factory.dedup.cluster import with_source_priority
    from factory.dedup.lsh import _registered
    from factory.ingest.normalize import stable_hash
    from factory.lake.commit import stage_run, utcnow

    params = params or MinHashParams()
    params_hash = stable_hash(params.as_dict())
    config = {"params": params.as_dict(), "prefer": prefer or [], "full": full}
    with stage_run("dedup", config, lake=lake) as run:
        con = run.con
        docs = with_source_priority(con.execute(_DOCS_SQL).to_arrow_table(), prefer or [])
        if docs.num_rows == 0:
            raise FactoryError("no problems in the lake: ingest something first")
        known = con.execute("SELECT DISTINCT problem_id FROM silver.minhash_bands WHERE params_hash = ? AND "
                            "problem_id IN (SELECT problem_id FROM silver.problems)", [params_hash]).fetchall()
        known_ids = pa.array([r[0] for r in known], pa.string())
        run.delete("silver.minhash_bands", "params_hash = ? AND problem_id NOT IN "
                   "(SELECT problem_id FROM silver.problems)", [params_hash])
        run.delete("silver.dedup_pairs", "problem_id_a NOT IN (SELECT problem_id FROM silver.problems) OR "
                   "problem_id_b NOT IN (SELECT problem_id FROM silver.problems) OR params_hash <> ?", [params_hash])
        is_known = pc.is_in(docs["doc_id"], value_set=known_ids)
        incremental = not full and len(known_ids) > 0
        if incremental:
            new_docs = docs.filter(pc.invert(is_known))
            old_docs = docs.filter(is_known)
            old_bands = con.execute("SELECT problem_id AS doc_id, band, band_hash FROM silver.minhash_bands "
                                    "WHERE params_hash = ?", [params_hash]).to_arrow_table()
            old_clusters = con.execute("SELECT problem_id AS doc_id, cluster_id FROM silver.dedup_clusters "
                                       "WHERE problem_id IN (SELECT problem_id FROM silver.problems)").to_arrow_table()
            result = dedup_incremental(new_docs, old_bands, old_docs, old_clusters, params)
            mode = f"incremental: {new_docs.num_rows} new problems signed, {old_docs.num_rows} reused"
        else:
            run.delete("silver.minhash_bands", "params_hash = ?", [params_hash])
            run.delete("silver.dedup_pairs", "true")
            result = dedup(docs, params, progress=False)
            mode = f"full: {docs.num_rows} problems signed"
        now = utcnow()
        if not con.execute("SELECT 1 FROM silver.signature_sets WHERE params_hash = ?", [params_hash]).fetchone():
            run.write("silver.signature_sets", [{"params_hash": params_hash, "params": json.dumps(params.as_dict()),
                                                 "created_at": now}])
        bands = result.bands
        run.write("silver.minhash_bands", pa.table({
            "params_hash": pa.array([params_hash] * bands.num_rows, pa.string()),
            "problem_id": bands["doc_id"].cast(pa.string()), "band": bands["band"].cast(pa.int16()),
            "band_hash": bands["band_hash"].cast(pa.int64())}))
        pairs = result.pairs
        # one row per unordered pair and kind
        a, b = pairs["doc_id_a"].cast(pa.string()), pairs["doc_id_b"].cast(pa.string())
        pair_rows = pa.table({"params_hash": pa.array([params_hash] * len(a), pa.string()),
                              "problem_id_a": pc.min_element_wise(a, b), "problem_id_b": pc.max_element_wise(a, b),
                              "kind": pairs["kind"].cast(pa.string()), "jaccard": pairs["jaccard"].cast(pa.float64())})
        with _registered(con, new_pairs=pair_rows) as (name,):
            fresh = con.execute(f"SELECT DISTINCT * FROM {name} n WHERE NOT EXISTS (SELECT 1 FROM silver.dedup_pairs "
                                "d WHERE d.params_hash = n.params_hash AND d.problem_id_a = n.problem_id_a AND "
                                "d.problem_id_b = n.problem_id_b AND d.kind = n.kind)").to_arrow_table()
        run.write("silver.dedup_pairs", fresh)
        run.delete("silver.dedup_clusters", "true")
        cl = result.clusters
        run.write("silver.dedup_clusters", pa.table({
            "problem_id": cl["doc_id"].cast(pa.string()), "cluster_id": cl["cluster_id"].cast(pa.string()),
            "cluster_size": cl["cluster_size"].cast(pa.int64()), "is_keeper": cl["is_keeper"]}))
        curve = _recall_curve(lake, docs["text"].to_pylist()[:2000], params, recall_pairs)
        report = {
            "mode": mode, "params_hash": params_hash, "problems": docs.num_rows,
            "pairs_by_kind": dict(con.execute("SELECT kind, count(*) FROM silver.dedup_pairs GROUP BY kind "
                                              "ORDER BY kind").fetchall()),
            "clusters": cl.filter(pc.and_(cl["is_keeper"], pc.greater(cl["cluster_size"], 1))).num_rows,
            "removed": int(cl.num_rows - pc.sum(cl["is_keeper"]).as_py()),
            "recall_curve": [{k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}
                             for row in curve],
            "timings_s": {k: round(v, 2) for k, v in result.stats.items() if k.endswith("_s")},
        }
        run.summary = json.dumps(report)
    report["run_id"] = run.run_id
    return report


RECALL_CACHE = "cache/recall_curve"   # under the lake directory: one JSON file per (texts, parameters)


def _recall_curve(lake, texts: list[str], params: MinHashParams, pairs: int) -> list[dict]:
    """The planted-pair recall curve, computed once per (texts, MinHash parameters, pairs per target): later runs
    over the same problems read LAKE/cache/recall_curve/KEY.json (the curve is deterministic in those inputs)."""
    from factory.dedup import recall_curve
    from factory.ingest.normalize import stable_hash
    from factory.lake import resolve_lake_dir

    key = stable_hash("recall_curve/1", params.as_dict(), pairs, texts)
    path = resolve_lake_dir(lake) / RECALL_CACHE / f"{key}.json"
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text())
    rows = recall_curve(texts, params, pairs_per_target=pairs).to_pylist()
    with contextlib.suppress(OSError):   # a read-only lake directory: no cache, same curve
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(rows))
        os.replace(tmp, path)
    return rows


def register(sub, add_lake) -> None:
    """Add `dedup` to the `factory` parser."""
    p = sub.add_parser("dedup", help="exact + MinHash-LSH near dedup of problems (incremental)")
    add_lake(p)
    p.add_argument("--bands", type=int, default=18)
    p.add_argument("--rows", type=int, default=7)
    p.add_argument("--ngram", type=int, default=3, help="word n-gram shingle size")
    p.add_argument("--threshold", type=float, default=0.8, help="exact Jaccard a candidate must reach")
    p.add_argument("--num-perm", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--prefer", default="", help="comma-separated source priority for keepers")
    p.add_argument("--full", action="store_true", help="recompute every signature")
    p.set_defaults(fn=cmd_dedup)


def cmd_dedup(args) -> None:
    from factory.dedup import MinHashParams

    params = MinHashParams(num_perm=args.num_perm, bands=args.bands, rows=args.rows, ngram=args.ngram,
                           threshold=args.threshold, seed=args.seed)
    report = run_dedup(args.lake, params, [s for s in args.prefer.split(",") if s], full=args.full)
    print(f"{report['mode']}; pairs {report['pairs_by_kind']}; {report['clusters']} duplicate clusters, "
          f"{report['removed']} problems removed (run {report['run_id']})")
    print("recall curve (P[candidate] vs exact Jaccard):  J  theory  measured  pairs")
    for row in report["recall_curve"]:
        print(f"  {row['jaccard']:.2f}  {row['theoretical']:.3f}  {row['measured']:.3f}  {row['n_pairs']}")
