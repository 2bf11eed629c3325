"""Dedup benchmark: vectorised MinHash vs datasketch, LSH/cluster scaling, recall curve.

    python bench/dedup_bench.py                       # sizes 10000,100000
    python bench/dedup_bench.py --sizes 10000,100000,1000000

Writes ``bench/results/dedup_bench.json`` and ``bench/results/recall_curve.png``. Each corpus
size runs in its own subprocess so ``peak_rss_mb`` (ru_maxrss: Python + NumPy + DuckDB) is per size.
Synthetic corpora: real problem statements from the shared data, each synthetic document a copy
with ~50 % of its words replaced (distinct documents), plus ``--dup-rate`` planted near-duplicates
(1-4 % of words substituted) of earlier synthetic documents.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from harness import DATA, jsonl as jl, machine, median_time, parser, run, timed, write  # noqa: I001  (first: sys.path)

from factory.dedup import MinHashParams, clusters, compute_bands, candidate_pairs, recall_curve, signatures  # noqa: E402
from factory.dedup.shingle import cores, shingle_hash32, shingle_strings, tokenize  # noqa: E402
from factory.dedup.verify import verify_pairs  # noqa: E402



def real_texts() -> list[str]:
    """Problem statements from the shared datasets (read in place)."""
    out = [r["text"] for r in jl(DATA / "mbpp/mbpp.jsonl")]
    out += [r["prompt"] for r in json.loads((DATA / "mbpp_sanitized/sanitized-mbpp.json").read_text())]
    out += [r["prompt"] for r in jl(DATA / "humaneval/HumanEval.jsonl.gz")]
    for name in ("v0.2.0-train", "v0.2.0-test"):
        out += [r["query"].split("Please complete the following python code")[0]
                for r in jl(DATA / f"leetcodedataset/LeetCodeDataset-{name}.jsonl.gz")]
    out += [r["problem_description"] for r in jl(DATA / "leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz")]
    out += [r["description"] for r in jl(DATA / "codecontests_subset300/codecontests_subset300.jsonl")]
    return [t for t in out if t and t.strip()]


def synthetic(n: int, dup_rate: float, seed: int = 0) -> list[str]:
    """``n`` documents: heavy edits of real texts, ``dup_rate`` of them light edits of earlier ones."""
    rng = np.random.default_rng(seed)
    toks = [tokenize(t) for t in real_texts()]
    vocab = sorted({w for t in toks for w in t})
    wid = {w: i for i, w in enumerate(vocab)}
    pool = [np.array([wid[w] for w in t], dtype=np.int64) for t in toks if len(t) >= 5]
    vocab_arr = np.array(vocab, dtype=object)
    docs: list[np.ndarray] = []
    for i in range(n):
        if i > 0 and rng.random() < dup_rate:
            src, frac = docs[int(rng.integers(i))], rng.uniform(0.01, 0.04)
        else:
            src, frac = pool[int(rng.integers(len(pool)))], 0.5
        d = src.copy()
        m = rng.random(d.size) < frac
        d[m] = rng.integers(0, len(vocab), int(m.sum()))
        docs.append(d)
    return [" ".join(vocab_arr[d]) for d in docs]


def bench_signatures(n_texts: int, params: MinHashParams) -> dict:
    from datasketch import MinHash

    allt = real_texts()
    texts = [allt[i] for i in np.random.default_rng(0).permutation(len(allt))[:n_texts]]
    grams = [[s.encode() for s in shingle_strings(tokenize(t), params.ngram)] for t in texts]
    n_sh = sum(len(g) for g in grams)
    signatures(texts[:20], params)  # warm-up: one-off imports (pyarrow.compute) out of the timing
    ours, _, sig = median_time(lambda: signatures(texts, params))

    def update_loop(**kw):   # one update() per shingle
        out = []
        for g in grams:
            m = MinHash(num_perm=params.num_perm, seed=params.seed, **kw)
            for s in g:
                m.update(s)
            out.append(m.hashvalues)
        return out
    loop_sha1 = median_time(update_loop)[0]   # datasketch default (sha1_hash32)
    loop_same, _, theirs = median_time(lambda: update_loop(hashfunc=shingle_hash32))   # ours -> identical signatures
    same = sum(bool(np.array_equal(h, sig[i])) for i, h in enumerate(theirs))
    bulk = median_time(lambda: MinHash.bulk(grams, num_perm=params.num_perm, seed=params.seed))[0]
    theirs_s = {"update_loop_sha1": loop_sha1, "update_loop_same_hashfunc": loop_same, "bulk_sha1": bulk}
    return {"n_texts": len(texts), "n_shingles": n_sh, "ours_s": ours, "ours_docs_per_s": len(texts) / ours,
            "ours_shingles_per_s": n_sh / ours, **{f"datasketch_{k}_s": t for k, t in theirs_s.items()},
            **{f"speedup_vs_{k}": t / ours for k, t in theirs_s.items()}, "bit_identical_docs": same}


def run_size(n: int, dup_rate: float, params: MinHashParams) -> dict:
    import duckdb
    import pyarrow as pa

    gen_s, texts = timed(synthetic, n, dup_rate)
    ids = pa.array(np.arange(n, dtype=np.int64))
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET memory_limit = '6GB'")
    r = {"n_docs": n, "generate_s": gen_s, "threads": cores()}

    def stage(name, f, *a):
        ru0, w = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        out = f(*a)
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        r[f"{name}_s"] = time.perf_counter() - w  # wall
        r[f"{name}_cpu_s"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)  # all threads
        r[f"{name}_load_avg"] = os.getloadavg()[0]
        return out

    bands = stage("minhash", compute_bands, ids, texts, params, 20000)
    r["band_rows"] = bands.num_rows
    cand = stage("lsh", candidate_pairs, bands, con)
    r["n_candidates"] = cand.num_rows
    pairs = stage("verify", verify_pairs, cand, ids, texts, params.ngram, params.threshold)
    r["n_verified"] = pairs.num_rows
    cl = stage("cluster", clusters, pairs, pa.table({"doc_id": ids}))
    r["n_removed"] = int(cl.num_rows - sum(cl["is_keeper"].to_numpy(zero_copy_only=False)))
    r["lsh_plus_cluster_s"] = r["lsh_s"] + r["verify_s"] + r["cluster_s"]
    r["dedup_s"] = r["minhash_s"] + r["lsh_plus_cluster_s"]  # MinHash + LSH + verify + cluster, wall
    r["dedup_cpu_s"] = sum(r[f"{k}_cpu_s"] for k in ("minhash", "lsh", "verify", "cluster"))
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return r


def recall_figure(params: MinHashParams, out: Path) -> list[dict]:
    texts = real_texts()
    curve = recall_curve(texts, params, pairs_per_target=40, seed=0).to_pylist()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    j = np.linspace(0, 1, 201)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(j, params.candidate_probability(j), label=f"theory 1-(1-J^{params.rows})^{params.bands}")
    ax.plot([c["jaccard"] for c in curve], [c["measured"] for c in curve], "o", label="measured (planted pairs)")
    ax.axvline(params.threshold, ls="--", c="grey", label=f"threshold {params.threshold}")
    ax.set_xlabel("exact Jaccard of word %d-gram sets" % params.ngram)
    ax.set_ylabel("P(candidate)")
    ax.set_title(f"MinHash LSH recall, {params.bands} bands x {params.rows} rows")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return curve


def main() -> None:
    ap = parser(__doc__, "dedup_bench.json", {"--dup-rate": 0.1})
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated corpus sizes (1000000 when asked)")
    ap.add_argument("--sig-texts", type=int, default=2000, help="real texts for the signature benchmark")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    params = MinHashParams()
    if args.one:
        print(json.dumps(run_size(args.one, args.dup_rate, params)))
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    res = {"params": params.as_dict(), "machine": machine(), "load_avg_start": os.getloadavg()}
    res["signatures"] = s = bench_signatures(args.sig_texts, params)
    print(f"signatures: {s['n_texts']} texts {s['n_shingles']} shingles | ours {s['ours_s']:.3f}s "
          f"({s['ours_shingles_per_s'] / 1e6:.2f} M shingles/s) | update() loop sha1 {s['datasketch_update_loop_sha1_s']:.2f}s "
          f"-> x{s['speedup_vs_update_loop_sha1']:.1f} | same-hashfunc loop x{s['speedup_vs_update_loop_same_hashfunc']:.1f} "
          f"| bulk x{s['speedup_vs_bulk_sha1']:.1f} | identical {s['bit_identical_docs']}/{s['n_texts']}")
    res["recall_curve"] = recall_figure(params, out.parent / "recall_curve.png")
    res["sizes"] = []
    print(f"{'docs':>9} {'minhash_s':>9} {'lsh_s':>7} {'verify_s':>8} {'cluster_s':>9} {'total_s':>8} {'cpu_s':>7} "
          f"{'load':>5} {'cands':>9} {'pairs':>8} {'peak_MB':>8}")
    for n in [int(x) for x in args.sizes.split(",") if x]:
        out_n = run([sys.executable, __file__, "--one", n, "--dup-rate", args.dup_rate])[1]
        r = json.loads(out_n.strip().splitlines()[-1])
        res["sizes"].append(r)
        print(f"{n:>9} {r['minhash_s']:>9.1f} {r['lsh_s']:>7.2f} {r['verify_s']:>8.2f} {r['cluster_s']:>9.2f} "
              f"{r['dedup_s']:>8.1f} {r['dedup_cpu_s']:>7.1f} {r['cluster_load_avg']:>5.1f} "
              f"{r['n_candidates']:>9} {r['n_verified']:>8} {r['peak_rss_mb']:>8.0f}")
        out.write_text(json.dumps(res, indent=2))
    res["load_avg_end"] = os.getloadavg()
    write(out, res)


if __name__ == "__main__":
    main()
