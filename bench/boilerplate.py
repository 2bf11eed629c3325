"""Boilerplate in n-gram decontamination: how much of each source the 9-gram check removes, and why.

A site's template text ("Constraints: 1 <= nums.length <= 10^5", "return it modulo 10^9 + 7", "Example 1:
Input: nums = ...") is shared by hundreds of LeetCode problems and by the LeetCode benchmark split; matched
alone, it flags a third of LeetCode's train problems as contaminated. ``DecontamParams.template_df`` drops a
source's template n-grams (document frequency within the source) before matching.

For each setting the table gives, per checked source, the fraction flagged by the n-gram method and its reason:
*template only* (every matched n-gram is template text of its source: what the fix stops removing) or *specific*
(still flagged). Recall is measured on known contamination pairs:

- lineage pairs: the same task in a derived dataset (MBPP train / validation rows and their MBPP+ / sanitized
  MBPP benchmark copies, by task id);
- planted copies: benchmark tasks (HumanEval, MBPP+) pasted into a LeetCode train statement's template text
  (its Examples/Constraints kept), labelled as LeetCode train - a copy must still be caught.

    python bench/boilerplate.py --data-dir ../shared/data          # ingests into a temporary lake first
    python bench/boilerplate.py --lake LAKE                         # a lake that already holds the sources
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTINGS = {   # name -> (template_df, template_min_df, ignore_numeric)
    "before (every n-gram)": (None, 4, False),
    "df > max(4, 1%)": (0.01, 4, False),
    "df > max(2, 0.2%) + digits": (0.002, 2, True),
    "df > max(2, 0.1%) + digits": (0.001, 2, True),
    "df > 1 + digits": (0.0, 1, True),
}


DEFAULT = "df > max(2, 0.2%) + digits"


def load(lake):
    import pyarrow as pa

    from factory.lake import connect
    from factory.lake.templating import DEFAULT_BENCHMARKS

    con = connect(lake, read_only=True)
    used = list(DEFAULT_BENCHMARKS)
    marks = ",".join("?" * len(used))
    probs = con.execute(f"SELECT problem_id, question AS text, source FROM silver.problems WHERE source NOT IN "
                        f"({marks}) ORDER BY problem_id", used).to_arrow_table()
    bench = con.execute(f"SELECT source AS benchmark, problem_id AS benchmark_id, question AS text FROM "
                        f"silver.problems WHERE source IN ({marks}) ORDER BY problem_id", used).to_arrow_table()
    lineage = con.execute(f"""
        SELECT a.problem_id, b.problem_id FROM silver.problems a JOIN silver.problems b
          ON json_extract_string(a.metadata, '$.lineage') = json_extract_string(b.metadata, '$.lineage')
        WHERE a.source NOT IN ({marks}) AND b.source IN ({marks})
          AND json_extract_string(a.metadata, '$.lineage') IS NOT NULL""", used + used).fetchall()
    con.close()
    return probs, bench, set(lineage), pa


def plant(probs, bench, pa, n: int = 100, seed: int = 0):
    """n benchmark tasks pasted into LeetCode train statements (task text, then the host's Examples and
    Constraints), labelled as LeetCode train."""
    rng = random.Random(seed)
    hosts = [t for t, s in zip(probs["text"].to_pylist(), probs["source"].to_pylist())
             if s == "leetcode-v0.2.0-train" and "Example 1" in t]
    items = [(b, i, t) for b, i, t in zip(bench["benchmark"].to_pylist(), bench["benchmark_id"].to_pylist(),
                                          bench["text"].to_pylist()) if b in ("humaneval", "mbppplus")]
    chosen = rng.sample(items, min(n, len(items)))
    rows, pairs = [], set()
    for k, (b, bid, text) in enumerate(chosen):
        host = rng.choice(hosts)
        tail = host[host.index("Example 1"):]
        pid = f"planted-{k}"
        rows.append({"problem_id": pid, "text": f"{text.strip()}\n\n{tail}", "source": "leetcode-v0.2.0-train"})
        pairs.add((pid, bid))
    planted = pa.Table.from_pylist(rows, schema=probs.schema)
    return pa.concat_tables([probs, planted]), pairs


def measure(probs, bench, lineage: set, planted: set, template_df, template_min_df, numeric) -> dict:
    from factory.dedup import DecontamParams, decontaminate

    t0 = time.perf_counter()
    params = DecontamParams(template_df=template_df, template_min_df=template_min_df, ignore_numeric=numeric)
    table, stats = decontaminate(probs, bench, params)
    table = table.filter(table["contaminated"])   # every pair sharing an n-gram is returned, with the verdict
    seconds = time.perf_counter() - t0
    pairs = set(zip(table["problem_id"].to_pylist(), table["benchmark_id"].to_pylist()))
    flagged = {p for p, _ in pairs}
    source = dict(zip(probs["problem_id"].to_pylist(), probs["source"].to_pylist()))
    total = Counter(s for p, s in source.items() if not p.startswith("planted-"))
    by_source = Counter(source[p] for p in flagged if not p.startswith("planted-"))
    return {"template_df": template_df, "template_min_df": template_min_df, "seconds": round(seconds, 2),
            "template_ngrams": stats.get("n_template_ngrams", 0), "flagged": flagged,
            "per_source": {s: {"problems": total[s], "flagged": by_source[s],
                               "fraction": round(by_source[s] / total[s], 4) if total[s] else 0.0}
                           for s in sorted(total)},
            "lineage_recall": round(len(lineage & pairs) / len(lineage), 4) if lineage else None,
            "lineage_problems_caught": round(len({p for p, _ in lineage} & flagged)
                                             / max(1, len({p for p, _ in lineage})), 4),
            "planted_recall": round(len(planted & pairs) / len(planted), 4) if planted else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lake")
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "boilerplate.json"))
    args = ap.parse_args(argv)
    lake = args.lake
    if lake is None:
        from factory.lake.commit import stage_run
        from factory.stages.ingest import ingest_all

        lake = Path(tempfile.mkdtemp(prefix="boilerplate-")) / "lake"
        with stage_run("init", {}, lake=lake, create=True) as run:
            run.materialize()
        ingest_all(args.data_dir, lake=lake)
    probs, bench, lineage, pa = load(lake)
    probs, planted = plant(probs, bench, pa)
    results = {name: measure(probs, bench, lineage, planted, *cfg) for name, cfg in SETTINGS.items()}
    before = results["before (every n-gram)"]["flagged"]
    source = dict(zip(probs["problem_id"].to_pylist(), probs["source"].to_pylist()))
    sources = sorted({s for s in source.values()})
    for name, r in results.items():
        reasons = defaultdict(Counter)
        for p in before:
            if p.startswith("planted-"):
                continue
            reasons[source[p]]["specific n-grams (still flagged)" if p in r["flagged"]
                               else "template text only (kept)"] += 1
        r["reasons"] = {s: dict(reasons[s]) for s in sources}
    print(f"{'source':<24} {'problems':>8} " + " ".join(f"{n.split(' (')[0]:>9}" for n in results)
          + "  reason of the 'before' removals (default setting)")
    default = DEFAULT
    for s in sources:
        ps = results[default]["per_source"].get(s)
        if not ps:
            continue
        cells = " ".join(f"{r['per_source'][s]['fraction']:>9.1%}" for r in results.values())
        print(f"{s:<24} {ps['problems']:>8} {cells}  {results[default]['reasons'].get(s)}")
    print()
    print(f"{'setting':<46} {'template n-grams':>16} {'lineage pair recall':>20} {'lineage problems':>17} "
          f"{'planted recall':>15} {'seconds':>8}")
    for name, r in results.items():
        print(f"{name:<46} {r['template_ngrams']:>16} {r['lineage_recall']:>20.1%} {r['lineage_problems_caught']:>17.1%} "
              f"{r['planted_recall']:>15.1%} {r['seconds']:>8}")
    out = {"data": str(args.data_dir if args.lake is None else args.lake), "lineage_pairs": len(lineage),
           "planted_pairs": len(planted), "note": "n-gram method only (9-grams, min_matches 1); the lineage and "
           "shared-test methods of `factory decontam` catch lineage pairs regardless",
           "settings": {n: {k: v for k, v in r.items() if k != "flagged"} for n, r in results.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
