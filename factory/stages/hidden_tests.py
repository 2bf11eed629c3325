"""`factory hidden-tests`: hidden tests for problems whose every test is visible in the prompt.

A reward is a signal only where the policy cannot read it off the prompt (#31): LeetCodeDataset's tests are the
statement's own examples, so those problems have no hidden test and leave the RL views. This stage gives them
hidden tests the way EvalPlus grows a suite, with the reference as the oracle:

1. seeds: the problem's own call arguments - ``call`` tests, or a ``check(candidate)`` whose asserts all call
   the candidate with literal arguments (LeetCode's ``candidate(nums = [2,7,11,15], target = 9)``, put in the
   order of the reference's parameters);
2. per round, type-aware mutations of the seeds (:func:`factory.testgen.input_mutation.generate_inputs`), kept only where
   they satisfy the contract the examples show (:func:`factory.testgen.input_mutation.inferred_contract`: same arity, and each
   fact every example argument has - non-negative, non-empty, sorted, distinct, lowercase, rectangular... -
   the candidate has too), so inputs stay inside the statement's likely constraints;
3. the reference runs on each candidate input in the sandbox; inputs on which it errors, times out or returns a
   value that is not plain data are dropped; its value is the expected output;
4. cross-check: the reference runs again against that expected value and must pass (a nondeterministic or
   state-dependent reference gives no test), and the test must be ``hidden`` by the same visibility rule as
   ingest (its input and output do not appear in the statement);
5. up to ``--per-problem`` tests are kept per problem, in generation order, as ``call`` tests (origin =
   'augment', subset = 'hidden'), with the reference's verdicts on them, in one transaction. A problem that
   already has generated hidden tests is left as it is (a re-run is a no-op).

Seeds come only from the dataset's tests and a fixed seed, so a re-run generates the same inputs and adds
nothing twice. The new tests are validated like any test (the reference passed them), so they reach the
train split; the problem's public tests stay public (a format/sanity reward, SFT). Only training-side problems
are touched: a benchmark source or a test-split file keeps the tests it was published with.
"""
from __future__ import annotations

import json

SUBSET = "hidden"


def register(sub, add_lake) -> None:
    p = sub.add_parser("hidden-tests", help="generated hidden call tests for problems whose tests are all visible "
                                            "in the prompt (expected values from the reference)")
    add_lake(p)
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--per-problem", type=int, default=8, help="hidden tests per public-only problem")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3, help="generate-and-check rounds")
    p.add_argument("--per-round", type=int, default=16, help="candidate inputs per problem and round")
    p.add_argument("--cpu-s", type=float, default=4.0, help="CPU seconds per test (as `factory execute`)")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--workers", type=int, help="sandbox workers (default: CPU count)")
    p.set_defaults(fn=cmd_hidden_tests)


def cmd_hidden_tests(args) -> None:
    from factory.sandbox import Limits
    report = run_hidden_tests(args.lake, args.source, per_problem=args.per_problem, seed=args.seed,
                              rounds=args.rounds, per_round=args.per_round,
                              limits=Limits(cpu_s=args.cpu_s, memory_mb=args.memory_mb), workers=args.workers)
    print(f"{report['tests_added']} hidden tests added to {report['problems_with_tests']} of {report['problems']} "
          f"public-only problems ({report['no_seed']} without literal example calls to start from); "
          f"by source: {json.dumps(report['by_source'])}")
    print("run `factory curate` to take them into gold.rl_problems")


class _Target:
    def __init__(self, row: dict):
        self.__dict__.update(row)
        self.seeds: list = []
        self.seen: set = set()
        self.max_chars = 200
        self.kept: list = []            # (serialized input, expected)
        self.need = 0


def _targets(con, sources: list[str] | None, per_problem: int) -> tuple[list[_Target], int]:
    """Public-only problems (no hidden test yet beyond earlier runs of this stage) whose reference passes all
    its tests, with seeds; and how many had no usable seed."""
    from factory.testgen.input_mutation import inferred_contract, literal_calls, parameter_names, positional
    from factory.generation.sanitize import entry_point_parts
    from factory.ingest.visibility import statement_text
    from factory.sandbox import deserialize_value, serialize_value
    from factory.lake.templating import DEFAULT_BENCHMARKS
    # training-side problems only: a benchmark or a test split keeps the tests it was published with
    where = (f"AND coalesce(pb.split, 'train') <> 'test' AND pb.source NOT IN "
             f"({', '.join(repr(b) for b in DEFAULT_BENCHMARKS)})")
    params: list = []
    if sources:
        where += f" AND pb.source IN ({', '.join('?' for _ in sources)})"
        params = list(sources)
    rows = con.execute(f"""
        WITH ref_ok AS (
            SELECT r.problem_id, r.program_id AS ref_id
            FROM silver.programs r JOIN gold.latest_executions e USING (program_id)
            WHERE r.origin = 'reference' GROUP BY ALL
            HAVING bool_and(e.status = 'pass')
        ), candidates AS (
            SELECT t.problem_id,
                   count(*) FILTER (WHERE coalesce(t.visibility, 'public') = 'hidden' AND t.subset = '{SUBSET}')
                       AS generated,
                   count(*) FILTER (WHERE coalesce(t.visibility, 'public') = 'hidden'
                                    AND t.subset IS DISTINCT FROM '{SUBSET}') AS hidden_own,
                   max(t.ordinal) AS max_ordinal
            FROM silver.tests t GROUP BY t.problem_id
        )
        SELECT pb.problem_id, pb.source, pb.entry_point, coalesce(pb.test_preamble, '') AS preamble, pb.question,
               pb.starter_code, min(o.ref_id) AS ref_id, any_value(c.generated) AS generated,
               any_value(c.max_ordinal) AS max_ordinal
        FROM silver.problems pb JOIN candidates c USING (problem_id) JOIN ref_ok o USING (problem_id)
        WHERE c.hidden_own = 0 AND c.generated = 0 AND ? > 0 AND pb.entry_point IS NOT NULL {where}
        GROUP BY ALL ORDER BY pb.problem_id""", [per_problem] + params).fetchall()
    names = ("problem_id", "source", "entry_point", "preamble", "question", "starter_code", "ref_id", "generated",
             "max_ordinal")
    targets = [_Target(dict(zip(names, r))) for r in rows]
    if not targets:
        return [], 0
    ids = [t.problem_id for t in targets]
    code = dict(con.execute("SELECT program_id, code FROM silver.programs WHERE list_contains(?, program_id)",
                            [[t.ref_id for t in targets]]).fetchall())
    tests: dict[str, list] = {}
    for problem_id, kind, text, inp in con.execute(
            "SELECT problem_id, kind, code, input FROM silver.tests WHERE list_contains(?, problem_id) "
            "ORDER BY problem_id, ordinal", [ids]).fetchall():
        tests.setdefault(problem_id, []).append((kind, text, inp))
    out, no_seed = [], 0
    for t in targets:
        t.ref_code = code[t.ref_id]
        t.statement = statement_text(t.question, t.starter_code)
        t.need = per_problem - t.generated
        t.next_ordinal = t.max_ordinal + 1
        func = entry_point_parts(t.entry_point)[1]
        names_ = parameter_names(t.ref_code, func) if func else None
        for kind, text, inp in tests.get(t.problem_id, []):
            if kind == "call" and inp is not None:
                t.seen.add(inp)
                args = deserialize_value(inp)
                if isinstance(args, list):
                    t.seeds.append(args)
            elif kind == "check" and names_ is not None:
                for args, kwargs in literal_calls(text):
                    call = positional(args, kwargs, names_)
                    if call is not None:
                        t.seeds.append(call)
                        t.seen.add(serialize_value(call))
        if not t.seeds:
            no_seed += 1
            continue
        t.max_chars = min(max(200, 4 * max(len(serialize_value(s)) for s in t.seeds)), 20000)
        t.contract = inferred_contract(t.seeds)   # only the examples' seeds define it, not generated inputs
        out.append(t)
    return out, no_seed


def _round(pool, active: list, seed: int, rnd: int, per_round: int, stats: dict) -> None:
    import random

    from factory.testgen.input_mutation import generate_inputs
    from factory.ingest.visibility import visibility
    from factory.sandbox import Job, TestSpec, clean_text
    from factory.sandbox.rows import is_json

    def job(t, specs):
        return Job(program_id=t.ref_id, code=t.ref_code, tests=specs, entry_point=t.entry_point, preamble=t.preamble)

    cands = {}
    for t in active:
        rng = random.Random(f"hidden-tests|{seed}|{t.problem_id}|{rnd}")
        made = generate_inputs(t.seeds, per_round, rng, t.seen, t.max_chars)
        cands[t.problem_id] = [(text, args) for text, args in made if t.contract(args)]
        stats[t.source]["candidates"] += len(made)
        stats[t.source]["outside_examples_contract"] += len(made) - len(cands[t.problem_id])
    jobs = [job(t, [TestSpec(f"c{i}", "call", input=text) for i, (text, _) in enumerate(cands[t.problem_id])])
            for t in active if cands[t.problem_id]]
    expected = {}
    for v in pool.run(jobs):
        actual = clean_text(v.actual) if v.status == "no_expected" and v.actual is not None else None
        if actual is not None and is_json(actual) and '"$o"' not in actual:
            expected[(v.program_id, v.test_id)] = actual
    jobs, ok = [], {}
    for t in active:
        good = []
        for i, (text, args) in enumerate(cands[t.problem_id]):
            exp = expected.get((t.ref_id, f"c{i}"))
            if exp is None:
                stats[t.source]["reference_rejected"] += 1
            elif visibility(t.statement, "call", None, text, exp) != "hidden":
                stats[t.source]["visible_rejected"] += 1
            else:
                good.append((f"c{i}", text, exp))
                t.seeds.append(args)            # valid inputs seed later rounds
        ok[t.problem_id] = good
        if good:
            jobs.append(job(t, [TestSpec(cid, "call", input=text, expected=exp) for cid, text, exp in good]))
    status = {(v.program_id, v.test_id): v.status for v in pool.run(jobs)}
    for t in active:
        for cid, text, exp in ok[t.problem_id]:
            if len(t.kept) >= t.need:
                break
            if status.get((t.ref_id, cid)) == "pass":
                t.kept.append((text, exp))
            else:
                stats[t.source]["cross_check_failed"] += 1


def run_hidden_tests(lake=None, sources: list[str] | None = None, per_problem: int = 8, seed: int = 0,
                     rounds: int = 3, per_round: int = 16, limits=None, workers: int | None = None) -> dict:
    """Generate up to ``per_problem`` hidden call tests for each public-only problem; returns a summary per
    source (also the run's ops.runs message)."""
    from collections import defaultdict

    from factory.errors import FactoryError
    from factory.ingest.normalize import stable_hash
    from factory.lake.commit import stage_run, utcnow
    from factory.sandbox import Job, Limits, SandboxPool, TestSpec
    from factory.sandbox.rows import merge_verdicts, verdict_row
    if per_problem < 1 or rounds < 1 or per_round < 1:
        raise FactoryError(f"per_problem, rounds and per_round must be >= 1 (got {per_problem}, {rounds}, "
                           f"{per_round})")
    limits = limits or Limits()
    config = {"sources": sources, "per_problem": per_problem, "seed": seed, "rounds": rounds,
              "per_round": per_round, "limits": limits.as_dict()}
    with stage_run("hidden-tests", config, lake=lake) as run:
        targets, no_seed = _targets(run.con, sources, per_problem)
        stats: dict = defaultdict(lambda: defaultdict(int))
        for t in targets:
            stats[t.source]["problems"] += 1
        test_rows, exec_rows = [], []
        if targets:
            from factory.judging.jobs import executions_table
            with SandboxPool(limits, workers) as pool:
                for rnd in range(rounds):
                    active = [t for t in targets if len(t.kept) < t.need]
                    if not active:
                        break
                    _round(pool, active, seed, rnd, per_round, stats)
                jobs, new = [], {}
                for t in targets:
                    specs = []
                    for text, exp in t.kept:
                        ordinal = t.next_ordinal
                        t.next_ordinal += 1
                        test_id = stable_hash(t.problem_id, ordinal, "call", None, text)
                        new[test_id] = {"test_id": test_id, "problem_id": t.problem_id, "ordinal": ordinal,
                                        "kind": "call", "code": None, "input": text, "expected": exp,
                                        "comparison": "exact", "atol": None, "origin": "augment",
                                        "subset": SUBSET, "visibility": "hidden"}
                        specs.append(TestSpec(test_id, "call", input=text, expected=exp))
                    if specs:   # the verdicts that validate them: the reference under the run's limits
                        jobs.append(Job(program_id=t.ref_id, code=t.ref_code, tests=specs, entry_point=t.entry_point,
                                        preamble=t.preamble))
                merged = merge_verdicts(list(pool.run(jobs))) if jobs else {}
            now = utcnow()
            source_of = {t.problem_id: t.source for t in targets}
            ref_of = {t.problem_id: t.ref_id for t in targets}
            for test_id, row in new.items():
                got = merged.get((ref_of[row["problem_id"]], test_id))
                if got is None or got[0].status != "pass":
                    stats[source_of[row["problem_id"]]]["cross_check_failed"] += 1
                    continue
                test_rows.append(row)
                exec_rows.append(verdict_row(ref_of[row["problem_id"]], test_id, got[0], got[1], limits.hash(), now))
                stats[source_of[row["problem_id"]]]["tests_added"] += 1
            with_tests = {r["problem_id"] for r in test_rows}
            for pid in with_tests:
                stats[source_of[pid]]["problems_with_tests"] += 1
            run.write("silver.tests", test_rows)
            if exec_rows:
                run.write("silver.executions", executions_table(exec_rows))
        report = {"problems": len(targets) + no_seed, "no_seed": no_seed, "tests_added": len(test_rows),
                  "problems_with_tests": len({r["problem_id"] for r in test_rows}),
                  "by_source": {s: dict(v) for s, v in sorted(stats.items())}}
        run.summary = json.dumps(report, sort_keys=True)
    report["run_id"] = run.run_id
    return report
