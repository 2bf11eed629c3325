"""`factory synth`: AceCoder-style synthesis - seed programs -> LeetCode-style question + ~20 assert tests.

Outputs: silver.problems (source `synth`), silver.tests (origin=synth), the seed as the new problem's reference
program (origin=reference, parent_program_id = seed; validation then keeps the tests the seed passes), and one
silver.synth_attempts row per completion, failed parses included with their reason. LLM calls go through the
silver.llm_calls ledger like `factory sample`.
"""
from __future__ import annotations

import json
import time

from factory.errors import FactoryError, reraise_as_interrupted
from factory.generation.cli_args import add_backend_arguments, backend_kwargs


def _seeds(lake, source: str | None, limit: int | None) -> list[dict]:
    from factory.lake import connect

    where, params = ("AND pb.source = ?", [source]) if source else ("", [])
    with connect(lake, read_only=True) as con:
        rows = con.execute(f"""
            SELECT p.program_id, p.problem_id, p.code, pb.question FROM silver.programs p
            JOIN silver.problems pb USING (problem_id)
            WHERE p.origin = 'reference' AND pb.source <> 'synth' {where}
            ORDER BY pb.source, pb.source_id {f'LIMIT {int(limit)}' if limit else ''}""",
            params).to_arrow_table().to_pylist()
    if not rows:
        raise FactoryError(f"no seed programs (reference programs of source {source!r})")
    return rows


def run_synth(lake=None, *, backend: str = "transformers", model: str | None = None, source: str | None = None,
              limit: int | None = 20, n_tests: int = 20, temperature: float = 0.7, max_tokens: int = 768,
              seed: int = 0, chunk: int | None = None, with_question: bool = True, **backend_kw) -> dict:
    from factory.generation import ChatRequest, SamplingParams, make_backend
    from factory.generation.lake_cache import LakeCallCache
    from factory.generation.synth import build_synth_messages, parse_synth_output
    from factory.ingest.normalize import stable_hash
    from factory.lake.commit import stage_run, utcnow
    from factory.progress import Progress

    seeds = _seeds(lake, source, limit)
    params = SamplingParams(n=1, temperature=temperature, max_tokens=max_tokens, seed=seed)
    engine = make_backend(backend, model, **backend_kw)
    model_name = engine.model if isinstance(engine.model, str) else str(engine.model)
    engine.cache = cache = LakeCallCache(lake, backend, model_name, "synth")
    chunk = chunk or max(4, engine.parallel_requests)  # seeds per commit: enough to keep every server busy
    report = {"seeds": 0, "ok": 0, "tests": 0, "failures": {}, "cached_calls": 0, "new_calls": 0}
    t0 = time.perf_counter()
    progress = Progress(len(seeds), f"synth {model_name}", "seed")
    try:
        for start in range(0, len(seeds), chunk):
            part = seeds[start:start + chunk]
            requests = [ChatRequest(build_synth_messages(s["code"], s["question"] if with_question else None,
                                                         n_tests=n_tests), params) for s in part]
            results = engine.generate(requests)
            config = {"backend": backend, "model": model_name, "params": params.to_dict(), "source": source}
            with stage_run("synth", config, lake=lake) as run:
                cache.flush(run)
                done = {r[0] for r in run.con.execute("SELECT attempt_id FROM silver.synth_attempts").fetchall()}
                rows = {"silver.problems": [], "silver.tests": [], "silver.programs": [], "silver.synth_attempts": []}
                now = utcnow()
                for s, req, res in zip(part, requests, results):
                    report["cached_calls" if res.cached else "new_calls"] += 1
                    rhash = engine.request_hash(req)
                    outputs = res.completions or [""]
                    for i, text in enumerate(outputs):
                        attempt_id = stable_hash(s["program_id"], rhash, i)
                        report["seeds"] += 1
                        parsed = parse_synth_output(text if res.ok else None)
                        status = parsed.status if res.ok else "llm_error"
                        problem_id = None
                        if status == "ok":
                            report["ok"] += 1
                            report["tests"] += len(parsed.tests)
                            problem_id = stable_hash("synth", attempt_id, parsed.question, parsed.tests)
                        else:
                            report["failures"][status] = report["failures"].get(status, 0) + 1
                        if attempt_id in done:
                            continue
                        rows["silver.synth_attempts"].append({
                            "attempt_id": attempt_id, "seed_program_id": s["program_id"], "request_hash": rhash,
                            "completion_index": i, "status": status, "detail": (parsed.detail or res.error or "")[:2000],
                            "n_tests": len(parsed.tests), "n_rejected_tests": len(parsed.rejected),
                            "problem_id": problem_id, "created_at": now})
                        if problem_id:
                            _add_problem(rows, problem_id, attempt_id, s, parsed, model_name, now)
                for table, data in rows.items():
                    run.write(table, data)
            progress.update(len(part))
    except BaseException as exc:
        reraise_as_interrupted(exc, lambda signal: (
            f"synth stopped: {progress.done} of {len(seeds)} seeds committed ({report['ok']} problems); the chunk "
            "in flight was rolled back. Run the same command again to resume: answered requests are served from "
            "silver.llm_calls."))
        raise
    finally:
        progress.close()
        engine.close()
    report["seconds"] = round(time.perf_counter() - t0, 1)
    return report


def _add_problem(rows: dict, problem_id: str, attempt_id: str, seed: dict, parsed, model: str, now) -> None:
    from factory.ingest.normalize import stable_hash
    from factory.ingest.visibility import statement_text, visibility

    rows["silver.problems"].append({
        "problem_id": problem_id, "source": "synth", "source_id": attempt_id, "question": parsed.question,
        "starter_code": None, "entry_point": parsed.entry_point, "test_preamble": None, "language": "python",
        "test_format": "assert", "difficulty_label": None, "license": None, "split": "train",
        "metadata": json.dumps({"seed_program_id": seed["program_id"], "seed_problem_id": seed["problem_id"],
                                "model": model, "parser": parsed.source}), "created_at": now})
    for ordinal, test in enumerate(parsed.tests):
        rows["silver.tests"].append({
            "test_id": stable_hash(problem_id, ordinal, "assert", test, None), "problem_id": problem_id,
            "ordinal": ordinal, "kind": "assert", "code": test, "input": None, "expected": None,
            "comparison": "exact", "atol": None, "origin": "synth", "subset": None,
            "visibility": visibility(statement_text(parsed.question), "assert", test)})
    rows["silver.programs"].append({
        "program_id": stable_hash(problem_id, "reference", None, None, seed["code"]), "problem_id": problem_id,
        "origin": "reference", "model": None, "sample_index": None, "code": seed["code"], "raw_completion": None,
        "extraction_status": None, "reported_pass_rate": None, "parent_program_id": seed["program_id"],
        "metadata": json.dumps({"seed": True}), "created_at": now})


def register(sub, add_lake) -> None:
    """Add `synth` to the `factory` parser."""
    p = sub.add_parser("synth", help="AceCoder synthesis: seed programs -> question + ~20 assert tests")
    add_lake(p)
    add_backend_arguments(p)
    p.add_argument("--source", help="seed programs: reference programs of this source")
    p.add_argument("--limit", type=int, default=20, help="number of seeds")
    p.add_argument("--n-tests", type=int, default=20)
    p.add_argument("--max-tokens", type=int, default=768)
    p.add_argument("--temperature", type=float, default=0.7)
    p.set_defaults(fn=cmd_synth)


def cmd_synth(args) -> None:
    kw = backend_kwargs(args)
    report = run_synth(args.lake, backend=args.backend, model=args.model, source=args.source, limit=args.limit,
                       n_tests=args.n_tests, max_tokens=args.max_tokens, temperature=args.temperature, **kw)
    print(json.dumps(report))
