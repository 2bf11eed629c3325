"""`factory gentests`: LLM-written input generators and validators -> new stdio/call tests (origin 'gentests').

For each selected problem with stdio or call tests the model (SmolLM2 by default, or any OpenAI-compatible
server) is asked for ``generate(size, seed)`` and ``validate(inp)``; both run in the sandbox (see
:mod:`factory.testgen.generators` for the pipeline: validator gate on known inputs, reference or mutual-verification
outputs, surviving-mutant hacking). LLM calls go through the ``silver.llm_calls`` ledger (purpose 'gentests'),
so a re-run asks nothing twice. One stage run commits, in one transaction: the ledger rows, the kept tests
(``silver.tests``, origin 'gentests', subset 'generated', id = hash(problem, input)) and one
``silver.test_generators`` row per problem with the yield of every stage. A problem whose row exists for the
same requests and settings is skipped, so re-running the same command is a no-op (no snapshot). Verdicts of
programs on the new tests come from the next `factory execute`.
"""
from __future__ import annotations

import json
import time
from collections import Counter, defaultdict

from factory.errors import FactoryError, reraise_as_interrupted
from factory.generation import ChatRequest, SamplingParams, make_backend
from factory.testgen.generators import (DEFAULT_SIZES, Outcome, Target, build_generator_messages, build_validator_messages,
                              generated_test_id, input_key, run_pipeline)
from factory.ingest.normalize import stable_hash
from factory.ingest.visibility import statement_text, visibility
from factory.generation.cli_args import add_backend_arguments, backend_kwargs
from factory.generation.sample import extract_code
from factory.sandbox import Limits   # the sandbox's types only: the pool loads in run_gentests

VOTER_ORIGINS = ("sample", "synth")
STAGES = ("generator_extracted", "validator_extracted", "generator_ran", "inputs_produced", "validator_accepted",
          "outputs_agreed", "tests_kept", "mutants_killed")


def load_targets(con, source: str | None, limit: int | None, problem_ids: list[str] | None = None) -> list[Target]:
    """Problems with stdio or call tests (call ones need an entry point), with references, verified programs for
    mutual verification and surviving mutants."""
    clauses, params = ["true"], []
    if source:
        clauses.append("pb.source = ?")
        params.append(source)
    if problem_ids:
        clauses.append("list_contains(?, pb.problem_id)")
        params.append(problem_ids)
    problems = con.execute(f"""
        SELECT pb.problem_id, pb.source, pb.source_id, pb.question, pb.entry_point, pb.starter_code,
               pb.test_preamble FROM silver.problems pb
        WHERE {' AND '.join(clauses)} AND EXISTS (
            SELECT 1 FROM silver.tests t WHERE t.problem_id = pb.problem_id AND t.input IS NOT NULL
            AND (t.kind = 'stdio' OR (t.kind = 'call' AND pb.entry_point IS NOT NULL)))
        ORDER BY pb.source, pb.source_id {f'LIMIT {int(limit)}' if limit else ''}""", params).fetchall()
    if not problems:
        raise FactoryError(f"no problems with stdio or call tests (source={source!r}"
                           + (f", problem ids {problem_ids}" if problem_ids else "") + ")")
    ids = [p[0] for p in problems]
    tests = defaultdict(list)
    for row in con.execute("""
            SELECT problem_id, kind, input, comparison, atol, origin, ordinal FROM silver.tests
            WHERE list_contains(?, problem_id) ORDER BY problem_id, ordinal""", [ids]).fetchall():
        tests[row[0]].append(row[1:])
    refs = {r[0]: (r[1], r[2]) for r in con.execute("""
            SELECT problem_id, program_id, code FROM silver.programs
            WHERE origin = 'reference' AND list_contains(?, problem_id)
            QUALIFY row_number() OVER (PARTITION BY problem_id ORDER BY program_id) = 1""", [ids]).fetchall()}
    voters = defaultdict(list)
    for problem_id, program_id, code in con.execute(f"""
            WITH scoreable AS (
                SELECT problem_id, count(*) AS n FROM silver.tests
                WHERE list_contains(?, problem_id) AND origin <> 'gentests'
                  AND NOT (kind IN ('call', 'stdio') AND expected IS NULL) GROUP BY 1),
            passing AS (
                SELECT p.problem_id, p.program_id, p.code FROM silver.programs p
                JOIN gold.latest_executions e USING (program_id)
                JOIN silver.tests t ON t.test_id = e.test_id AND t.problem_id = p.problem_id
                JOIN scoreable s ON s.problem_id = p.problem_id
                WHERE p.origin IN ({', '.join(repr(o) for o in VOTER_ORIGINS)}) AND t.origin <> 'gentests'
                GROUP BY p.problem_id, p.program_id, p.code, s.n
                HAVING bool_and(e.status = 'pass') AND count(DISTINCT t.test_id) = s.n)
            SELECT problem_id, min(program_id), code FROM passing GROUP BY problem_id, code
            ORDER BY 1, 2""", [ids]).fetchall():
        voters[problem_id].append((program_id, code))   # distinct code: identical samples are one vote
    survivors = defaultdict(dict)
    for problem_id, program_id, code in con.execute("""
            WITH valid AS (
                SELECT t.test_id, t.problem_id FROM silver.tests t JOIN gold.latest_executions e USING (test_id)
                JOIN silver.programs r ON r.program_id = e.program_id AND r.problem_id = t.problem_id
                WHERE r.origin = 'reference' AND list_contains(?, t.problem_id)
                GROUP BY ALL HAVING bool_and(e.status = 'pass'))
            SELECT m.problem_id, m.program_id, m.code FROM silver.programs m
            JOIN gold.latest_executions e USING (program_id)
            JOIN valid v ON v.test_id = e.test_id AND v.problem_id = m.problem_id
            WHERE m.origin = 'mutant' GROUP BY ALL HAVING bool_and(e.status = 'pass')
            ORDER BY 1, 2""", [ids]).fetchall():
        survivors[problem_id][program_id] = code
    out = []
    for problem_id, source_, source_id, question, entry_point, starter, preamble in problems:
        rows = tests[problem_id]
        io = [r for r in rows if r[1] is not None and (r[0] == "stdio" or (r[0] == "call" and entry_point))]
        kind = Counter(r[0] for r in io).most_common(1)[0][0]
        same = [r for r in io if r[0] == kind]
        ref = refs.get(problem_id)
        out.append(Target(problem_id, source_, source_id, question, kind, entry_point, starter, preamble or "",
                          comparison=same[0][2], atol=same[0][3], known=[r[1] for r in same if r[4] != "gentests"],
                          existing={input_key(kind, r[1]) for r in same}, next_ordinal=max(r[5] for r in rows) + 1,
                          ref_id=ref[0] if ref else None, ref_code=ref[1] if ref else None,
                          voters=voters.get(problem_id, []), survivors=dict(survivors.get(problem_id, {}))))
    return out


def run_gentests(lake=None, *, backend: str = "transformers", model: str | None = None, source: str | None = None,
                 limit: int | None = 10, problem_ids: list[str] | None = None, sizes=DEFAULT_SIZES, seeds: int = 3,
                 max_tests: int = 10, min_agree: int = 3, temperature: float = 0.2, max_tokens: int = 384,
                 seed: int = 0, limits: Limits | None = None, workers: int | None = None, **backend_kw) -> dict:
    """Generators + validators for the selected problems -> silver.tests / silver.test_generators; returns yields."""
    from factory.generation.lake_cache import LakeCallCache
    from factory.lake import connect
    from factory.lake.commit import stage_run
    from factory.sandbox import SandboxPool

    if min_agree < 2 or max_tests < 1 or seeds < 1 or not sizes or min(sizes) < 1:
        raise FactoryError(f"need min_agree >= 2, max_tests >= 1, seeds >= 1 and sizes >= 1 (got {min_agree}, "
                           f"{max_tests}, {seeds}, {list(sizes)})")
    limits = limits or Limits(cpu_s=2.0)
    with connect(lake, read_only=True) as con:
        targets = load_targets(con, source, limit, problem_ids)
    params = SamplingParams(n=1, temperature=temperature, max_tokens=max_tokens, seed=seed)
    engine = make_backend(backend, model, **backend_kw)
    model_name = engine.model if isinstance(engine.model, str) else str(engine.model)
    engine.cache = cache = LakeCallCache(lake, backend, model_name, "gentests")
    t0 = time.perf_counter()
    try:
        requests = [ChatRequest(build(t), params) for t in targets  # per target: generator, then validator
                    for build in (build_generator_messages, build_validator_messages)]
        results = engine.generate(requests)
        work, calls = [], Counter("cached" if r.cached else "new" for r in results)
        for i, t in enumerate(targets):
            gen_req, val_req = requests[2 * i], requests[2 * i + 1]
            gen_res, val_res = results[2 * i], results[2 * i + 1]
            o = Outcome(*[_extract(res, name)[1] for res, name in ((gen_res, "generate"), (val_res, "validate"))])
            o.generator_code, o.validator_code = _extract(gen_res, "generate")[0], _extract(val_res, "validate")[0]
            for res, what in ((gen_res, "generator"), (val_res, "validator")):
                if res.error:
                    o.note(f"{what} request failed: {res.error}")
            hashes = (engine.request_hash(gen_req), engine.request_hash(val_req))
            gid = stable_hash(t.problem_id, backend, model_name, *hashes, o.generator_code, o.validator_code,
                              list(sizes), seeds, max_tests, min_agree, limits.hash())
            work.append((t, o, gid, hashes))
        config = {"backend": backend, "model": model_name, "source": source, "limit": limit,
                  "params": params.to_dict(), "sizes": list(sizes), "seeds": seeds, "max_tests": max_tests,
                  "min_agree": min_agree, "limits": limits.as_dict()}
        with stage_run("gentests", config, lake=lake) as run:
            new_calls = cache.flush(run)
            ids = [gid for _, _, gid, _ in work]
            done = dict(run.con.execute("""
                SELECT generator_id, generator_status = 'llm_error' OR validator_status = 'llm_error'
                FROM silver.test_generators WHERE list_contains(?, generator_id)""", [ids]).fetchall())
            todo = [(t, o, gid, h) for t, o, gid, h in work if done.get(gid) is not False]
            if retry := [gid for _, _, gid, _ in todo if gid in done]:
                run.delete("silver.test_generators", "list_contains(?, generator_id)", [retry])
            if todo:
                with SandboxPool(limits, workers) as pool:
                    run_pipeline(pool, [(t, o) for t, o, _, _ in todo], sizes=tuple(sizes), seeds=seeds,
                                 max_tests=max_tests, min_agree=min_agree)
            test_rows, gen_rows = _rows(todo, backend, model_name, list(sizes), seeds)
            run.write("silver.tests", test_rows)
            run.write("silver.test_generators", gen_rows)
            report = _report(todo, len(targets), len(targets) - len(todo), calls)
            run.summary = json.dumps(report, sort_keys=True)
            if not todo and not new_calls:
                run.noop = True
    except BaseException as exc:
        reraise_as_interrupted(exc, lambda signal: (
            "gentests stopped: nothing was committed. Run the same command again: answered LLM requests that "
            "were committed are served from silver.llm_calls."))
        raise
    finally:
        engine.close()
    report["seconds"] = round(time.perf_counter() - t0, 1)
    report["run_id"] = None if run.noop else run.run_id
    return report


def _extract(res, name: str) -> tuple[str | None, str]:
    if res.error or not res.completions:
        return None, "llm_error"
    reason = res.finish_reasons[0] if res.finish_reasons else None
    code, status = extract_code(res.completions[0], name, finish_reason=reason)
    return (code or None), status


def _rows(todo, backend: str, model: str, sizes: list, seeds: int) -> tuple[list, list]:
    from factory.lake.commit import utcnow

    now = utcnow()
    test_rows, gen_rows = [], []
    for t, o, gid, (gen_hash, val_hash) in todo:
        kept = []
        for c in o.kept:
            test_id = generated_test_id(t.problem_id, t.kind, c["input"])
            test_rows.append({"test_id": test_id, "problem_id": t.problem_id, "ordinal": t.next_ordinal,
                              "kind": t.kind, "code": None, "input": c["input"], "expected": c["expected"],
                              "comparison": t.comparison, "atol": t.atol, "origin": "gentests",
                              "subset": "generated", "visibility": visibility(
                                  statement_text(t.question, t.starter_code), t.kind, None, c["input"], c["expected"])})
            t.next_ordinal += 1
            kept.append({"test_id": test_id, "size": c["size"], "seed": c["seed"], "kills": len(c["kills"]),
                         "killed": c["kills"], "agreement": c["agreement"]})
        gen_rows.append({
            "generator_id": gid, "problem_id": t.problem_id, "backend": backend, "model": model, "test_kind": t.kind,
            "generator_request_hash": gen_hash, "validator_request_hash": val_hash, "generator_code": o.generator_code,
            "validator_code": o.validator_code, "generator_status": o.generator_status,
            "validator_status": o.validator_status, "oracle": o.oracle, "sizes": json.dumps(sizes), "seeds": seeds,
            "generator_runs": o.generator_runs, "generator_ran": o.generator_ran, "inputs_produced": o.inputs_produced,
            "known_checked": o.known_checked, "known_accepted": o.known_accepted,
            "validator_accepted": o.validator_accepted, "outputs_agreed": o.outputs_agreed, "tests_kept": o.tests_kept,
            "surviving_mutants": o.surviving_mutants, "mutants_killed": o.mutants_killed, "voters": o.voters,
            "kept_tests": json.dumps(kept), "detail": " | ".join(o.details) or None, "created_at": now})
    return test_rows, gen_rows


def _report(todo, selected: int, skipped: int, calls: dict) -> dict:
    totals = dict.fromkeys(STAGES, 0)
    for _, o, _, _ in todo:
        totals["generator_extracted"] += o.generator_status == "ok"
        totals["validator_extracted"] += o.validator_status in ("ok", "rejects_known_inputs")
        for key in STAGES[2:]:
            totals[key] += getattr(o, key)
    statuses = Counter(s for _, o, _, _ in todo for s in (f"generator:{o.generator_status}",
                                                         f"validator:{o.validator_status}"))
    return {"problems": selected, "processed": len(todo), "skipped_done": skipped, "yields": totals,
            "statuses": dict(sorted(statuses.items())), "cached_calls": calls["cached"], "new_calls": calls["new"]}


# -- command line ----------------------------------------------------------------------------------------
def register(sub, add_lake) -> None:
    """Add `gentests` to the `factory` parser."""
    p = sub.add_parser("gentests", help="LLM input generators + validators -> new stdio/call tests (origin=gentests)")
    add_lake(p)
    add_backend_arguments(p)
    p.add_argument("--source", help="only problems of this source")
    p.add_argument("--problem-id", action="append", help="only these problems (repeatable)")
    p.add_argument("--limit", type=int, default=10, help="number of problems")
    p.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="comma-separated generator sizes")
    p.add_argument("--seeds", type=int, default=3, help="generator seeds per size")
    p.add_argument("--max-tests", type=int, default=10, help="generated tests kept per problem")
    p.add_argument("--min-agree", type=int, default=3,
                   help="no reference: verified programs that must agree (and be a strict majority)")
    p.add_argument("--max-tokens", type=int, default=384)
    p.add_argument("--temperature", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu-s", type=float, default=2.0, help="CPU seconds per sandboxed call")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--workers", type=int, help="sandbox workers (default: CPU count)")
    p.set_defaults(fn=cmd_gentests)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise FactoryError(f"--sizes expects comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise FactoryError(f"--sizes needs positive integers, got {text!r}")
    return sizes


def cmd_gentests(args) -> None:
    kw = backend_kwargs(args)
    report = run_gentests(args.lake, backend=args.backend, model=args.model, source=args.source, limit=args.limit,
                          problem_ids=args.problem_id, sizes=_sizes(args.sizes), seeds=args.seeds,
                          max_tests=args.max_tests, min_agree=args.min_agree, temperature=args.temperature,
                          max_tokens=args.max_tokens, seed=args.seed,
                          limits=Limits(cpu_s=args.cpu_s, memory_mb=args.memory_mb), workers=args.workers, **kw)
    print(json.dumps(report))
