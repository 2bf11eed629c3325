"""`factory sample`: n programs per problem from an LLM (AceCoder prompt layout) -> silver.programs.

Every request goes through the lake ledger `silver.llm_calls`: an identical request (same backend, model,
messages and sampling params) is answered from the ledger, so a crashed run resumes where it stopped and a
re-run costs nothing. Work is committed per chunk of problems (one transaction each); program ids hash the
request, so re-runs never duplicate programs.
"""
from __future__ import annotations

import json
import time

from factory.errors import FactoryError, reraise_as_interrupted
from factory.generation.cli_args import add_backend_arguments, backend_kwargs


def _problems(lake, source: str | None, limit: int | None, problem_ids: list[str] | None,
              shard: tuple[int, int] | None = None) -> list[dict]:
    from factory.lake import connect
    from factory.lake.query import shard_predicate

    clauses, params = [shard_predicate(shard, "p.problem_id")], []
    if source:
        clauses.append("p.source = ?")
        params.append(source)
    if problem_ids:
        clauses.append("list_contains(?, p.problem_id)")
        params.append(problem_ids)
    with connect(lake, read_only=True) as con:
        rows = con.execute(f"""
            SELECT p.problem_id, p.source, p.source_id, p.question, p.starter_code, p.entry_point, p.test_format,
                   list(t.code ORDER BY t.ordinal) FILTER (WHERE t.kind = 'assert') AS asserts
            FROM silver.problems p LEFT JOIN silver.tests t USING (problem_id)
            WHERE {' AND '.join(clauses)} GROUP BY ALL ORDER BY p.source, p.source_id
            {f'LIMIT {int(limit)}' if limit else ''}""", params).to_arrow_table().to_pylist()
    if not rows:
        raise FactoryError(f"no problems to sample (source={source!r})")
    return rows


def run_sample(lake=None, *, backend: str = "transformers", model: str | None = None, source: str | None = None,
               limit: int | None = None, n: int = 4, temperature: float = 0.7, top_p: float = 1.0,
               max_tokens: int = 384, seed: int = 0, chunk: int | None = None, budget_tokens: int | None = None,
               budget_calls: int | None = None, problem_ids: list[str] | None = None,
               shard: tuple[int, int] | None = None, **backend_kw) -> dict:
    """Sample n programs for each selected problem; returns counts (programs, extraction statuses, calls)."""
    from factory.generation import Budget, BudgetExhausted, ChatRequest, SamplingParams, make_backend
    from factory.generation.lake_cache import LakeCallCache
    from factory.generation.sample import build_sample_messages, extract_for_tests
    from factory.ingest.normalize import stable_hash
    from factory.lake.commit import stage_run, utcnow
    from factory.progress import Progress

    problems = _problems(lake, source, limit, problem_ids, shard)
    params = SamplingParams(n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
    budget = Budget(max_tokens=budget_tokens, max_calls=budget_calls) if (budget_tokens or budget_calls) else None
    engine = make_backend(backend, model, budget=budget, **backend_kw)
    model_name = engine.model if isinstance(engine.model, str) else str(engine.model)
    engine.cache = cache = LakeCallCache(lake, backend, model_name, "sample")
    chunk = chunk or max(4, engine.parallel_requests)  # problems per commit: enough to keep every server busy
    report = {"problems": 0, "programs": 0, "cached_calls": 0, "new_calls": 0, "statuses": {}, "stopped": None}
    t0 = time.perf_counter()
    progress = Progress(len(problems), f"sample {model_name}", "problem")
    try:
        for start in range(0, len(problems), chunk):
            part = problems[start:start + chunk]
            # OpenAI-compatible servers do not continue an assistant prefix, so the prefix is only sent locally
            requests = [ChatRequest(build_sample_messages(p["question"], None if p["asserts"] else p["starter_code"],
                                                          p["asserts"] or [], assistant_prefix=backend != "openai"),
                                    params) for p in part]
            try:
                results = engine.generate(requests)
            except BudgetExhausted as exc:
                results = exc.args[1] if len(exc.args) > 1 else []
                report["stopped"] = str(exc.args[0])
            config = {"backend": backend, "model": model_name, "params": params.to_dict(), "source": source}
            with stage_run("sample", config, lake=lake) as run:
                cache.flush(run)
                existing = {r[0] for r in run.con.execute(
                    "SELECT program_id FROM silver.programs WHERE origin = 'sample' AND model = ?",
                    [model_name]).fetchall()}
                rows = []
                for prob, req, res in zip(part, requests, results):
                    if res is None:
                        continue
                    report["cached_calls" if res.cached else "new_calls"] += 1
                    rhash = engine.request_hash(req)
                    for i, completion in enumerate(res.completions):
                        reason = res.finish_reasons[i] if i < len(res.finish_reasons) else None
                        code, status = extract_for_tests(completion, prob["entry_point"], prob["test_format"],
                                                         finish_reason=reason)
                        report["statuses"][status] = report["statuses"].get(status, 0) + 1
                        pid = stable_hash(prob["problem_id"], "sample", model_name, rhash, i)
                        if pid in existing:
                            continue
                        rows.append({"program_id": pid, "problem_id": prob["problem_id"], "origin": "sample",
                                     "model": model_name, "sample_index": i, "code": code,
                                     "raw_completion": completion, "extraction_status": status,
                                     "reported_pass_rate": None, "parent_program_id": None,
                                     "metadata": json.dumps({"request_hash": rhash, "temperature": temperature,
                                                             "greedy": temperature == 0, "finish_reason": reason}),
                                     "created_at": utcnow()})
                run.write("silver.programs", rows)
                report["programs"] += len(rows)
                report["problems"] += sum(1 for r in results if r is not None)
            progress.update(len(part))
            if report["stopped"]:
                break
    except BaseException as exc:
        reraise_as_interrupted(exc, lambda signal: (
            f"sample stopped: {report['problems']} of {len(problems)} problems committed ({report['programs']} "
            "programs); the chunk in flight was rolled back. Run the same command again to resume: answered "
            "requests are served from silver.llm_calls."))
        raise
    finally:
        progress.close()
        engine.close()
    report["seconds"] = round(time.perf_counter() - t0, 1)
    total = sum(report["statuses"].values())
    report["extraction_rate"] = round(report["statuses"].get("ok", 0) / total, 3) if total else 0.0
    return report


def register(sub, add_lake) -> None:
    """Add `sample` to the `factory` parser."""
    p = sub.add_parser("sample", help="n programs per problem from an LLM (cached in silver.llm_calls)")
    add_lake(p)
    add_backend_arguments(p)
    p.add_argument("--shard", help="i/n: only problems whose id hashes to i mod n (n samplers, one lake)")
    p.add_argument("--source", help="only problems of this source")
    p.add_argument("--limit", type=int, help="number of problems")
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--max-tokens", type=int, default=384)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget-tokens", type=int, help="stop cleanly after this many tokens (cache hits are free)")
    p.add_argument("--budget-calls", type=int, help="stop cleanly after this many calls")
    p.set_defaults(fn=cmd_sample)


def cmd_sample(args) -> None:
    from factory.lake.query import parse_shard

    kw = backend_kwargs(args)
    report = run_sample(args.lake, backend=args.backend, model=args.model, source=args.source, limit=args.limit,
                        n=args.n, temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed,
                        budget_tokens=args.budget_tokens, budget_calls=args.budget_calls,
                        shard=parse_shard(args.shard), **kw)
    print(json.dumps(report))
