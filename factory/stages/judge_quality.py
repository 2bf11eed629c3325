"""`factory judge-quality`: Skywork-OR1's LLM-as-judge problem filter -> silver.quality_votes.

Each judge (a model, optionally with its own prompt variant or temperature) is asked ``n`` times per problem
whether the statement is well posed; every answer becomes one vote row (valid | invalid | unparsed) with the
request hash that keys its ``silver.llm_calls`` ledger entry (purpose 'quality'), so a re-run asks nothing
twice. ``gold.problem_quality`` (sql/gold/problem_quality.sql) sums the votes and sets ``keep``.

Work is committed per chunk of problems (one transaction: ledger rows + votes). A (problem, judge) request
whose votes are in the lake is skipped, so re-running the same command is a no-op (no snapshot); votes parsed by
an older ``PARSER_VERSION`` are re-derived from the ledger (deleted and rewritten, no model call). A request
that fails (server error after retries) writes no votes - never a partial set - and stops the run after its
chunk's answered requests are committed; Ctrl-C rolls back the chunk in flight.
"""
from __future__ import annotations

import json
import time
from collections import Counter, defaultdict

from factory.errors import FactoryError, reraise_as_interrupted
from factory.generation import Budget, BudgetExhausted, ChatRequest, SamplingParams, make_backend
from factory.generation.quality_judge import (ASSISTANT_PREFIX, DEFAULT_PROMPT, PARSER_VERSION, PROMPTS, VOTES,
                                              Judge, answer_text, build_judge_messages, parse_vote, prompt_hash)
from factory.progress import Progress
from factory.generation.cli_args import add_backend_arguments, backend_kwargs

MAX_STORED_COMPLETION = 2000   # characters of each raw judge answer kept in silver.quality_votes


def _problems(lake, sources, limit, problem_ids) -> list[dict]:
    from factory.lake import connect

    clauses, params = ["true"], []
    if sources:
        clauses.append("list_contains(?, source)")
        params.append(list(sources))
    if problem_ids:
        clauses.append("list_contains(?, problem_id)")
        params.append(list(problem_ids))
    with connect(lake, read_only=True) as con:
        rows = con.execute(f"""
            SELECT problem_id, source, source_id, question, starter_code FROM silver.problems
            WHERE {' AND '.join(clauses)} ORDER BY source, source_id
            {f'LIMIT {int(limit)}' if limit else ''}""", params).to_arrow_table().to_pylist()
    if not rows:
        raise FactoryError(f"no problems to judge (sources={sources!r})")
    return rows


def _done_requests(lake) -> dict[tuple[str, str, str], int]:
    """{(problem_id, judge, request_hash): parser version} of the votes already in the lake."""
    from factory.lake import connect, existing_columns

    with connect(lake, read_only=True) as con:
        columns = existing_columns(con).get("silver.quality_votes")
        if columns is None:   # a lake made before the table was declared (the first stage run adds it)
            return {}
        version = "max(parser_version)" if "parser_version" in columns else "NULL"
        return {tuple(r[:3]): r[3] for r in con.execute(
            f"SELECT problem_id, judge, request_hash, {version} FROM silver.quality_votes GROUP BY ALL").fetchall()}


class _Panel:
    """The judges, with one backend (and one ledger cache) per distinct model."""

    def __init__(self, lake, judges, backend: str, budget, backend_kw: dict):
        from factory.generation.lake_cache import LakeCallCache

        specs = [j if isinstance(j, Judge) else Judge.parse(str(j)) for j in judges]
        if not specs:
            raise FactoryError("name at least one judge")
        self.engines, self.caches, self.members = {}, {}, []
        try:
            for spec in specs:
                if spec.model not in self.engines:
                    engine = make_backend(backend, spec.model, budget=budget, **backend_kw)
                    engine.cache = self.caches[spec.model] = LakeCallCache(lake, backend, str(engine.model), "quality")
                    self.engines[spec.model] = engine
                self.members.append((spec, spec.label(self.model_name(spec))))
        except BaseException:
            self.close()
            raise
        labels = [label for _, label in self.members]
        if len(set(labels)) != len(labels):
            self.close()
            raise FactoryError(f"judges repeat: {labels}; give a repeated model its own prompt= or temperature=")

    def model_name(self, spec: Judge) -> str:
        return str(self.engines[spec.model].model)

    def close(self) -> None:
        for engine in self.engines.values():
            engine.close()


def run_quality_votes(lake=None, *, judges=("default",), n: int = 16, backend: str = "transformers",
                      base_urls: str | list[str] | None = None, sources: list[str] | None = None,
                      limit: int | None = None, problem_ids: list[str] | None = None, prompt: str = DEFAULT_PROMPT,
                      temperature: float = 0.7, top_p: float = 1.0, max_tokens: int = 512, seed: int = 0,
                      chunk: int | None = None, budget_tokens: int | None = None, budget_calls: int | None = None,
                      **backend_kw) -> dict:
    """Ask every judge ``n`` times per selected problem; votes -> silver.quality_votes. Returns a summary:
    ``votes`` (new rows by vote), ``by_judge``, call counts, ``failed_requests``, ``stopped`` and ``complete``
    (every selected problem has the votes of every judge)."""
    if prompt not in PROMPTS:
        raise FactoryError(f"unknown judge prompt {prompt!r}; choose one of {', '.join(PROMPTS)}")
    if n < 1 or max_tokens < 1:
        raise FactoryError(f"need n >= 1 and max_tokens >= 1 (got {n}, {max_tokens})")
    if base_urls:
        if backend != "openai":
            raise FactoryError("base URLs are for the openai backend")
        backend_kw["base_url"] = base_urls
    problems = _problems(lake, sources, limit, problem_ids)
    budget = Budget(max_tokens=budget_tokens, max_calls=budget_calls) if (budget_tokens or budget_calls) else None
    try:
        panel = _Panel(lake, judges, backend, budget, backend_kw)
    except ValueError as exc:
        raise FactoryError(str(exc)) from None
    if backend == "openai" and any((spec.prompt or prompt) in ASSISTANT_PREFIX for spec, _ in panel.members):
        panel.close()
        raise FactoryError("the prefill prompt needs a local backend (transformers or vllm): OpenAI-compatible "
                           "servers do not continue an opened assistant answer")
    report = {"problems": len(problems), "judges": [label for _, label in panel.members], "requests_done": 0,
              "skipped_done": 0, "reparsed": 0, "votes": dict.fromkeys(VOTES, 0), "by_judge": {},
              "cached_calls": 0, "new_calls": 0, "failed_requests": 0, "stopped": None, "run_ids": []}
    config = {"backend": backend, "judges": report["judges"], "n": n, "prompt": prompt, "sources": sources,
              "limit": limit, "params": SamplingParams(n=n, temperature=temperature, top_p=top_p,
                                                       max_tokens=max_tokens, seed=seed).to_dict()}
    done = _done_requests(lake)
    # problems per commit: enough requests to keep every server busy (each problem asks every judge)
    chunk = chunk or max(4, -(-max(e.parallel_requests for e in panel.engines.values()) // len(panel.members)))
    t0 = time.perf_counter()
    progress = Progress(len(problems), "judge-quality", "problem")
    try:
        for start in range(0, len(problems), chunk):
            part = problems[start:start + chunk]
            work = _requests(part, panel, n, prompt, temperature, top_p, max_tokens, seed)
            todo = [w for w in work if done.get(_key(w)) != PARSER_VERSION]
            report["skipped_done"] += len(work) - len(todo)
            if todo:
                _ask(panel, todo, report)
                _commit(lake, config, panel, todo, done, report)
            progress.update(len(part))
            if report["stopped"]:
                break
    except BaseException as exc:
        reraise_as_interrupted(exc, lambda signal: (
            f"judge-quality stopped: {progress.done} of {len(problems)} problems committed; the chunk in flight "
            "was rolled back. Run the same command again to resume: committed votes are skipped and answered "
            "requests are served from silver.llm_calls."))
        raise
    finally:
        progress.close()
        panel.close()
    report["complete"] = report["stopped"] is None
    report["seconds"] = round(time.perf_counter() - t0, 1)
    return report


def _requests(part, panel: _Panel, n, prompt, temperature, top_p, max_tokens, seed) -> list[dict]:
    work = []
    for p in part:
        for spec, label in panel.members:
            messages = build_judge_messages(p["question"], p["starter_code"], spec.prompt or prompt)
            params = SamplingParams(n=n, temperature=temperature if spec.temperature is None else spec.temperature,
                                    top_p=top_p, max_tokens=max_tokens, seed=seed)
            request = ChatRequest(messages, params)
            work.append({"problem": p, "judge": label, "spec": spec, "request": request,
                         "prompt_hash": prompt_hash(messages),
                         "request_hash": panel.engines[spec.model].request_hash(request)})
    return work


def _ask(panel: _Panel, todo: list[dict], report: dict) -> None:
    """Fill w["result"] (None: not run, the budget ran out) for each request, one generate call per model."""
    by_model = defaultdict(list)
    for w in todo:
        by_model[w["spec"].model].append(w)
    for model, items in by_model.items():
        try:
            results = panel.engines[model].generate([w["request"] for w in items])
        except BudgetExhausted as exc:
            results = exc.results or [None] * len(items)
            report["stopped"] = str(exc)
        for w, res in zip(items, results):
            w["result"] = res


def _key(w: dict) -> tuple[str, str, str]:
    return w["problem"]["problem_id"], w["judge"], w["request_hash"]


def _commit(lake, config: dict, panel: _Panel, todo: list[dict], done: dict, report: dict) -> None:
    from factory.lake.commit import stage_run, utcnow

    now = utcnow()
    with stage_run("judge-quality", config, lake=lake) as run:
        new_calls = sum(cache.flush(run) for cache in panel.caches.values())
        rows, failed = [], []
        for w in todo:
            res, n = w.get("result"), w["request"].params.n
            if res is None:
                continue
            report["cached_calls" if res.cached else "new_calls"] += 1
            if res.error or len(res.completions) != n:   # never a partial set of votes
                failed.append(res.error or f"{len(res.completions)} of {n} answers")
                continue
            key = _key(w)
            if key in done:   # parsed by an older parser: re-derived from the ledger answer
                run.delete("silver.quality_votes", "problem_id = ? AND judge = ? AND request_hash = ?", key)
                report["reparsed"] += 1
            report["requests_done"] += 1
            tally = report["by_judge"].setdefault(w["judge"], dict.fromkeys(VOTES, 0))
            for i, text in enumerate(res.completions):
                vote = parse_vote(answer_text(w["request"].messages, text))
                tally[vote] += 1
                report["votes"][vote] += 1
                reason = res.finish_reasons[i] if i < len(res.finish_reasons) else None
                rows.append({"problem_id": key[0], "judge": key[1], "judge_model": panel.model_name(w["spec"]),
                             "backend": config["backend"], "sample_index": i, "vote": vote,
                             "prompt_hash": w["prompt_hash"], "request_hash": key[2],
                             "completion": text[:MAX_STORED_COMPLETION], "finish_reason": reason,
                             "parser_version": PARSER_VERSION, "created_at": now})
        run.write("silver.quality_votes", rows)
        run.summary = json.dumps({"votes": dict(Counter(r["vote"] for r in rows)), "failed_requests": len(failed)},
                                 sort_keys=True)
        if not rows and not new_calls:
            run.noop = True
    if not run.noop:
        report["run_ids"].append(run.run_id)
    done.update({(r["problem_id"], r["judge"], r["request_hash"]): PARSER_VERSION for r in rows})
    if failed:
        report["failed_requests"] += len(failed)
        report["stopped"] = (f"{len(failed)} judge request(s) failed (first: {failed[0][:300]}); their problems "
                             "got no votes from that judge. Re-run the same command to retry them.")


# -- command line ----------------------------------------------------------------------------------------
def register(sub, add_lake) -> None:
    """Add `judge-quality` to the `factory` parser."""
    p = sub.add_parser("judge-quality", help="Skywork-OR1 LLM-as-judge: n validity votes per problem and judge "
                                             "-> silver.quality_votes (gold.problem_quality keeps >= 9 valid)")
    add_lake(p)
    p.add_argument("--judge", action="append",
                   help="judge model, repeatable; MODEL@prompt=brief,temperature=1.0 overrides per judge; "
                        "'default' (or a bare @...) is the backend's default model (transformers: SmolLM2 GGUF)")
    add_backend_arguments(p, model=False)
    p.add_argument("--n", type=int, default=16, help="answers per judge and problem")
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--problem-id", action="append", help="only these problems (repeatable)")
    p.add_argument("--limit", type=int, help="number of problems")
    p.add_argument("--prompt", default=DEFAULT_PROMPT, choices=sorted(PROMPTS),
                   help="reasoned: think, verdict on the last line; brief: verdict on the first line; prefill: "
                        "brief with the answer opened as 'VERDICT:' (transformers/vllm; for small models)")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget-tokens", type=int, help="stop cleanly after this many tokens (cache hits are free)")
    p.add_argument("--budget-calls", type=int, help="stop cleanly after this many calls")
    p.set_defaults(fn=cmd_judge_quality)


def cmd_judge_quality(args) -> None:
    report = run_quality_votes(args.lake, judges=args.judge or ["default"], n=args.n, backend=args.backend,
                               sources=args.source, limit=args.limit,
                               problem_ids=args.problem_id, prompt=args.prompt, temperature=args.temperature,
                               max_tokens=args.max_tokens, seed=args.seed, budget_tokens=args.budget_tokens,
                               budget_calls=args.budget_calls, **backend_kwargs(args))
    print(json.dumps(report))
    if report["failed_requests"]:
        raise FactoryError(report["stopped"])
