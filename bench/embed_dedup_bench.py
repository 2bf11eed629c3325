"""Embedding dedup benchmark on real data: MiniLM throughput, pair search (NumPy vs DuckDB SQL vs vss HNSW),
pairs per threshold, MBPP vs MBPP+ recall, overlap with the MinHash near-dup pairs.

    nice python bench/embed_dedup_bench.py [--lake /tmp/embed_bench_lake] [--sizes 1000,3000]

Ingests humaneval + mbpp + mbppplus + the three LeetCodeDataset files into a lake (kept between runs: a re-run
reuses the stored embeddings), runs `factory dedup-embed` at 0.85 / 0.9 / 0.95 and `factory dedup` (MinHash),
and writes ``bench/results/embed_dedup.json``.

Pair search variants (all on the same unit vectors, cosine >= 0.9 for timing):
- numpy: factory.dedup.embed.similar_pairs, 2048 x 2048 tiles of the upper triangle (exact)
- duckdb_array_cosine: self-join of FLOAT[384] on a.i < b.i with array_cosine_similarity (exact)
- duckdb_vss_hnsw: vss extension (pip package duckdb-extension-vss, loaded by file path): HNSW index build +
  one top-k index scan per vector (approximate, at most k neighbours per vector)
- duckdb_vss_join: the extension's vss_join macro (brute force max_by over the cross product), smallest size only
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from factory.dedup.embed import Encoder, problem_text, similar_pairs, statement_text, text_hash  # noqa: E402
from factory.stages.dedup import run_dedup  # noqa: E402
from factory.stages.dedup_embed import run_embedding_dedup  # noqa: E402
from factory.stages.ingest import ingest_source  # noqa: E402
from factory.lake import CATALOG_FILE, _packaged_extension, connect  # noqa: E402
from factory.lake.commit import stage_run  # noqa: E402

DATA = Path(os.environ.get("FACTORY_SHARED_DATA", ROOT.parent / "shared" / "data"))
SOURCES = [("humaneval", None, "humaneval"), ("mbpp", "mbpp/mbpp.jsonl", "mbpp"),
           ("mbppplus", "mbppplus/MbppPlus.jsonl.gz", "mbppplus")] + [
    ("leetcode", f"leetcodedataset/LeetCodeDataset-{v}.jsonl.gz", f"leetcode-{v}")
    for v in ("v0.2.0-train", "v0.2.0-test", "v0.3.1-test")]
THRESHOLDS = (0.85, 0.9, 0.95)
SEARCH_THRESHOLD = 0.9
HNSW_K = 10


def build_lake(lake: Path) -> None:
    if not (lake / CATALOG_FILE).is_file():
        with stage_run("init", {}, lake=lake, create=True) as run:
            run.materialize()
    for adapter, rel, source in SOURCES:
        r = ingest_source(adapter, [DATA / rel] if rel else None, lake=lake, source=source)
        print(f"  ingest {source:<24} {r.status:<10} problems={r.problems}", flush=True)


def lake_vectors(lake: Path, model: str) -> tuple[list[str], list[str], list[str], np.ndarray]:
    """problem ids, sources, source ids and the stored unit vectors of every problem's statement."""
    con = connect(lake, read_only=True)
    try:
        probs = con.execute("SELECT problem_id, source, source_id, question FROM silver.problems "
                            "ORDER BY problem_id").fetchall()
        con.register("_want", pa.table({"problem_id": [r[0] for r in probs],
                                        "text_hash": [text_hash(problem_text(r[3], "statement")) for r in probs]}))
        t = con.execute("SELECT e.problem_id, e.embedding FROM silver.problem_embeddings e JOIN _want w "
                        "USING (problem_id, text_hash) WHERE e.model = ? ORDER BY e.problem_id",
                        [model]).to_arrow_table()
    finally:
        con.close()
    assert t["problem_id"].to_pylist() == [r[0] for r in probs], "run dedup-embed first: embeddings missing"
    flat = pa.compute.list_flatten(t["embedding"]).to_numpy().astype(np.float32)
    return [r[0] for r in probs], [r[1] for r in probs], [r[2] for r in probs], flat.reshape(t.num_rows, -1)


def throughput(lake: Path, n: int = 256) -> dict:
    """texts/s of the bundled MiniLM (batch 64) on short (MBPP) and long (LeetCode) statements."""
    con = connect(lake, read_only=True)
    try:
        rows = {s: [statement_text(r[0]) for r in con.execute(
            "SELECT question FROM silver.problems WHERE source = ? ORDER BY problem_id LIMIT ?", [s, n]).fetchall()]
            for s in ("mbpp", "leetcode-v0.2.0-train")}
    finally:
        con.close()
    t0 = time.perf_counter()
    enc = Encoder()
    out = {"model": enc.label, "load_s": round(time.perf_counter() - t0, 2), "batch_size": 64}
    for source, texts in rows.items():
        t0 = time.perf_counter()
        enc.encode(texts, 64)
        dt = time.perf_counter() - t0
        out[source] = {"texts": len(texts), "mean_chars": round(float(np.mean([len(t) for t in texts])), 1),
                       "seconds": round(dt, 2), "texts_per_s": round(len(texts) / dt, 1)}
    return out


def duckdb_searches(emb: np.ndarray, threshold: float, with_vss_join: bool) -> dict:
    import duckdb
    n, dim = emb.shape
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.register("_in", pa.table({"i": pa.array(np.arange(n)),
                                  "vec": pa.FixedSizeListArray.from_arrays(pa.array(emb.ravel()), dim)}))
    con.execute(f"CREATE TABLE v AS SELECT i, vec::FLOAT[{dim}] AS vec FROM _in")
    out = {}
    t0 = time.perf_counter()
    exact = con.execute("SELECT a.i, b.i FROM v a JOIN v b ON a.i < b.i "
                        "WHERE array_cosine_similarity(a.vec, b.vec) >= ?", [threshold]).fetchall()
    out["duckdb_array_cosine"] = {"seconds": round(time.perf_counter() - t0, 3), "pairs": len(exact)}
    truth = {(min(a, b), max(a, b)) for a, b in exact}
    vss = _packaged_extension("duckdb_extension_vss", "vss.duckdb_extension")
    if vss is None:
        out["duckdb_vss_hnsw"] = {"error": "duckdb-extension-vss==1.5.5 not installed"}
        return out
    con.execute(f"LOAD '{vss}'")
    t0 = time.perf_counter()
    con.execute("CREATE INDEX v_hnsw ON v USING HNSW (vec) WITH (metric = 'cosine')")
    build_s = time.perf_counter() - t0
    query = (f"SELECT i, array_cosine_similarity(vec, $1::FLOAT[{dim}]) FROM v "
             f"ORDER BY array_cosine_distance(vec, $1::FLOAT[{dim}]) LIMIT {HNSW_K + 1}")
    assert "HNSW_INDEX_SCAN" in con.execute("EXPLAIN " + query, [emb[0].tolist()]).fetchall()[0][1]
    t0 = time.perf_counter()
    found = set()
    for q in range(n):
        for j, cos in con.execute(query, [emb[q].tolist()]).fetchall():
            if j != q and cos >= threshold:
                found.add((min(q, j), max(q, j)))
    query_s = time.perf_counter() - t0
    out["duckdb_vss_hnsw"] = {"index_build_s": round(build_s, 3), "queries_s": round(query_s, 3),
                              "seconds": round(build_s + query_s, 3), "k": HNSW_K, "pairs": len(found),
                              "recall_vs_exact": round(len(found & truth) / max(len(truth), 1), 4)}
    if with_vss_join:
        con.execute("CREATE TABLE q AS SELECT i AS qi, vec AS qvec FROM v")
        t0 = time.perf_counter()
        rows = con.execute(f"SELECT left_tbl.qi, right_tbl.i, score FROM vss_join(q, v, qvec, vec, {HNSW_K + 1}, "
                           "metric := 'cosine')").fetchall()
        hits = {(min(a, b), max(a, b)) for a, b, s in rows if a != b and s >= threshold}
        out["duckdb_vss_join"] = {"seconds": round(time.perf_counter() - t0, 3), "k": HNSW_K, "pairs": len(hits),
                                  "recall_vs_exact": round(len(hits & truth) / max(len(truth), 1), 4)}
    con.close()
    return out


def search_timings(emb: np.ndarray, sizes: list[int]) -> list[dict]:
    rng = np.random.default_rng(0)
    order = rng.permutation(len(emb))
    out = []
    for n in sizes:
        sub = emb[np.sort(order[:n])]
        t0 = time.perf_counter()
        p = similar_pairs(sub, SEARCH_THRESHOLD)
        row = {"n": n, "threshold": SEARCH_THRESHOLD,
               "numpy_blocked": {"seconds": round(time.perf_counter() - t0, 3), "pairs": int(p.i.size)}}
        row.update(duckdb_searches(sub, SEARCH_THRESHOLD, with_vss_join=n == min(sizes)))
        print(f"  search n={n}: " + ", ".join(f"{k} {v.get('seconds')}s/{v.get('pairs')}" for k, v in row.items()
                                              if isinstance(v, dict)), flush=True)
        out.append(row)
    t0 = time.perf_counter()
    p = similar_pairs(emb, SEARCH_THRESHOLD)
    out.append({"n": len(emb), "threshold": SEARCH_THRESHOLD,
                "numpy_blocked": {"seconds": round(time.perf_counter() - t0, 3), "pairs": int(p.i.size)}})
    return out


def minhash_pairs(lake: Path) -> dict[str, set]:
    con = connect(lake, read_only=True)
    try:
        rows = con.execute("SELECT kind, problem_id_a, problem_id_b FROM silver.dedup_pairs").fetchall()
    finally:
        con.close()
    out: dict[str, set] = {}
    for kind, a, b in rows:
        out.setdefault(kind, set()).add((min(a, b), max(a, b)))
    return out


def mbpp_links(ids, sources, source_ids, pairs: set) -> int:
    """MBPP+ problems directly paired with the MBPP problem of the same task id."""
    key = {pid: (s, sid.split("/")[-1]) for pid, s, sid in zip(ids, sources, source_ids)}
    linked = set()
    for a, b in pairs:
        (sa, ta), (sb, tb) = key[a], key[b]
        if {sa, sb} == {"mbpp", "mbppplus"} and ta == tb:
            linked.add(ta)
    return len(linked)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lake", default="/tmp/embed_bench_lake")
    ap.add_argument("--sizes", default="1000,3000")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "embed_dedup.json"))
    args = ap.parse_args()
    lake = Path(args.lake)
    res = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]}}
    print("lake:", lake, flush=True)
    build_lake(lake)

    print("dedup-embed runs", flush=True)
    res["stage_runs"] = []
    for th in sorted(THRESHOLDS, reverse=True):
        r = run_embedding_dedup(lake, th, progress=True)
        res["stage_runs"].append(r)
        print(f"  cos>={th}: {r['problems']} problems, embedded {r['embedded']} ({r['texts_per_s']}/s, "
              f"load {r['load_s']}s), {r['pairs']} pairs, {r['removed']} removed, search {r['search_s']}s", flush=True)
    print("MinHash dedup", flush=True)
    mh = run_dedup(lake, recall_pairs=0)
    res["minhash"] = {k: mh[k] for k in ("params_hash", "pairs_by_kind", "clusters", "removed", "timings_s")}

    ids, sources, source_ids, emb = lake_vectors(lake, res["stage_runs"][0]["model"])
    res["problems"] = len(ids)
    res["by_source"] = {s: sources.count(s) for s in sorted(set(sources))}
    print("throughput", flush=True)
    res["throughput"] = throughput(lake)
    print(" ", res["throughput"], flush=True)
    print("pair search", flush=True)
    res["pair_search"] = search_timings(emb, [int(s) for s in args.sizes.split(",") if int(s) <= len(ids)])

    mh_pairs = minhash_pairs(lake)
    mh_text = mh_pairs.get("near", set()) | mh_pairs.get("exact_text", set())   # statements alike
    mh_all = mh_text | mh_pairs.get("exact_code", set())                        # + same reference program
    n_plus = sources.count("mbppplus")
    recall = (lambda pairs: round(mbpp_links(ids, sources, source_ids, pairs) / max(n_plus, 1), 4))
    res["thresholds"] = []
    for th in THRESHOLDS:
        p = similar_pairs(emb, th)
        pairs = {(ids[i], ids[j]) for i, j in zip(p.i.tolist(), p.j.tolist())}
        cross = sum(sources[i] != sources[j] for i, j in zip(p.i.tolist(), p.j.tolist()))
        row = {"threshold": th, "pairs": len(pairs), "cross_source_pairs": cross,
               "mbppplus_problems": n_plus, "mbpp_recall": recall(pairs)}
        for name, ref in (("minhash_text_overlap", mh_text), ("minhash_all_overlap", mh_all)):
            row[name] = {"both": len(pairs & ref), "embedding_only": len(pairs - ref), "minhash_only": len(ref - pairs),
                         "minhash_pairs_found": round(len(pairs & ref) / max(len(ref), 1), 4)}
        res["thresholds"].append(row)
    res["minhash_mbpp_recall"] = {"text": recall(mh_text), "all": recall(mh_all)}

    print(f"\n{len(ids)} problems {res['by_source']}")
    tp = res["throughput"]
    print(f"embedding: load {tp['load_s']}s; " + "; ".join(
        f"{s}: {v['texts_per_s']} texts/s ({v['mean_chars']} chars)" for s, v in tp.items() if isinstance(v, dict)))
    print(f"\n{'n':>6} {'numpy s':>9} {'sql s':>9} {'hnsw s':>9} {'hnsw recall':>12} {'pairs':>6}")
    for row in res["pair_search"]:
        sql, hnsw = row.get("duckdb_array_cosine", {}), row.get("duckdb_vss_hnsw", {})
        print(f"{row['n']:>6} {row['numpy_blocked']['seconds']:>9} {sql.get('seconds', '-'):>9} "
              f"{hnsw.get('seconds', '-'):>9} {hnsw.get('recall_vs_exact', '-'):>12} "
              f"{row['numpy_blocked']['pairs']:>6}")
    print(f"\n{'cos>=':>6} {'pairs':>6} {'cross':>6} {'MBPP+ recall':>13} {'both':>6} {'emb only':>9} "
          f"{'mh only':>8}   (vs MinHash text pairs: near + exact_text)")
    for row in res["thresholds"]:
        o = row["minhash_text_overlap"]
        print(f"{row['threshold']:>6} {row['pairs']:>6} {row['cross_source_pairs']:>6} {row['mbpp_recall']:>13} "
              f"{o['both']:>6} {o['embedding_only']:>9} {o['minhash_only']:>8}")
    print(f"MinHash: {len(mh_text)} text pairs (J >= 0.8 or identical), {len(mh_all)} with identical reference code; "
          f"MBPP+ recall {res['minhash_mbpp_recall']}")
    Path(args.out).write_text(json.dumps(res, indent=1, default=str) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
