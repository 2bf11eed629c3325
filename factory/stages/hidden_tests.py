"""`factory hidden-tests`: hidden tests for problems whose every test is visible in the prompt.

A reward is a signal only where the policy cannot read it off the prompt: LeetCodeDataset's tests are the statement's
own examples, so those problems have no hidden test and leave the RL views. This stage gives them hidden tests the way
EvalPlus grows a suite, with the reference as the oracle:

1. seeds: the problem's own call arguments - ``call`` tests, or a ``check(candidate)`` whose asserts all call the
   candidate with literal arguments (LeetCode's ``candidate(nums = [2,7,11,15], target = 9)``, put in the order of the
   reference's parameters);
2. per round, type-aware mutations of the seeds (:func:`factory.testgen.input_mutation.generate_inputs`), kept only
   where they satisfy the contract the examples show (:func:`factory.testgen.input_mutation.inferred_contract`: same
   arity, and each fact every example argument has - non-negative, non-empty, sorted, distinct, lowercase,
   rectangular... - the candidate has too), so inputs stay inside the statement's likely constraints;
3. the reference runs on each candidate input in the sandbox; inputs on which it errors, times out or returns a value
   that is not plain data are dropped; its value is the expected output;
4. cross-check: the reference runs again against that expected value and must pass (a nondeterministic or
   state-dependent reference gives no test), and the test must be ``hidden`` by the same visibility rule as ingest (its
   input and output do not appear in the statement);
5. up to ``--per-problem`` tests are kept per problem, in generation order, as ``call`` tests (origin = 'augment',
   subset = 'hidden'), with the reference's verdicts on them, in one transaction. A problem that already has generated
   hidden tests is left as it is (a re-run is a no-op).

Seeds come only from the dataset's tests and a fixed seed, so a re-run generates the same inputs and adds nothing twice.
The new tests are validated like any test (the reference passed them), so they reach the train split; the problem's
public tests stay public (a format/sanity reward, SFT). Only training-side problems are touched: a benchmark source or a
test-split file keeps the tests it was published with.
"""
from __future__ import annotations

import json
from contextlib import suppress

SUBSET = "hidden"
ORIGIN_ANY_ORDER = "any_order"      # silver.checkers origin of the order-insensitive comparison this stage attaches
REJECTIONS = ("outside_examples_contract", "outside_constraints", "reference_failed", "reference_returned_none",
              "ambiguous_answer", "answer_out_of_range", "visible_rejected", "cross_check_failed", "not_writable")


def register(sub, add_lake) -> None:
    p = sub.add_parser("hidden-tests", help="generated hidden tests for problems whose tests are all visible "
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
          f"public-only problems ({report['no_seed']} without literal example calls to start from, "
          f"{report['skipped']} skipped: {json.dumps(report['skipped_by_reason'])}); "
          f"any order: {json.dumps(report['any_order'])}; by source: {json.dumps(report['by_source'])}")
    print("run `factory curate` to take them into gold.rl_problems")


class _Target:
    """A problem's row, the defaults below, and what _targets sets (names, need, max_chars, any_order, unique...)."""

    def __init__(self, row: dict):
        self.__dict__.update(row)
        self.seeds: list = []
        self.seen: set = set()
        self.kept: list = []            # (args, serialized input, serialized expected)
        self.mode = "call"              # how kept tests are stored: call | check (trees/lists) | pytest
        self.kinds: list = []           # per parameter: None | "tree" | "list"
        self.out_kind = "value"         # how the result compares: value | tree | list
        self.answers: list = []         # (args, expected value) of the examples
        self.depth = 0                  # order-insensitive comparison depth finally used (0: exact)
        self.judging = None             # ProblemJudging of the final tests


def _stub(entry_point: str, value) -> str | None:
    """A program whose entry point returns ``value`` whatever it is given (the feed-back check)."""
    import re

    from factory.testgen.pytest_style import literal
    if (lit := literal(value)) is None:
        return None
    if m := re.fullmatch(r"(\w+)\(\)\.(\w+)", entry_point):
        return f"class {m.group(1)}:\n    def {m.group(2)}(self, *args, **kwargs):\n        return {lit}\n"
    if re.fullmatch(r"[A-Za-z_]\w*", entry_point):
        return f"def {entry_point}(*args, **kwargs):\n    return {lit}\n"
    return None


def _targets(con, sources: list[str] | None, per_problem: int, skipped: dict) -> tuple[list[_Target], int]:
    """Public-only problems (no hidden test yet beyond earlier runs of this stage) whose reference passes all
    its tests, with seeds; and how many had no usable seed. Problems the stage must not generate for are counted
    in ``skipped`` by reason."""
    from factory.generation.sanitize import entry_point_parts
    from factory.ingest.visibility import statement_text
    from factory.lake.templating import DEFAULT_BENCHMARKS
    from factory.sandbox import deserialize_value, serialize_value
    from factory.testgen import pytest_style
    from factory.testgen.any_order import any_order_phrase, several_answers_phrase, unique_answer_phrase
    from factory.testgen.constraints import Checker, answer_bound
    from factory.testgen.input_mutation import inferred_contract, parameter_names, positional
    from factory.testgen.nodes import example_calls
    # training-side problems only: a benchmark or a test split keeps the tests it was published with
    where = (f"AND coalesce(pb.split, 'train') <> 'test' AND pb.source NOT IN "
             f"({', '.join(repr(b) for b in DEFAULT_BENCHMARKS)})")
    params = list(sources or [])
    if sources:
        where += f" AND pb.source IN ({', '.join('?' for _ in sources)})"
    targets = [_Target(r) for r in con.execute(f"""
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
        WHERE c.hidden_own = 0 AND c.generated = 0 AND ? > 0
          AND (pb.entry_point IS NOT NULL OR pb.test_format = 'pytest') {where}
        GROUP BY ALL ORDER BY pb.problem_id""", [per_problem] + params).to_arrow_table().to_pylist()]
    if not targets:
        return [], 0
    code = dict(con.execute("SELECT program_id, code FROM silver.programs WHERE list_contains(?, program_id)",
                            [[t.ref_id for t in targets]]).fetchall())
    tests: dict[str, list] = {}
    for problem_id, kind, text, inp, exp in con.execute(
            "SELECT problem_id, kind, code, input, expected FROM silver.tests WHERE list_contains(?, problem_id) "
            "ORDER BY problem_id, ordinal", [[t.problem_id for t in targets]]).fetchall():
        tests.setdefault(problem_id, []).append((kind, text, inp, exp))
    out, no_seed = [], 0
    for t in targets:
        t.ref_code = code[t.ref_id]
        if t.entry_point is None:   # a pytest module without `from solution import f`: the function its asserts call
            t.entry_point = pytest_style.called_function([x[1] for x in tests.get(t.problem_id, [])], t.ref_code)
            if t.entry_point is None:
                no_seed += 1
                continue
        t.statement = statement_text(t.question, t.starter_code)
        t.need = per_problem - t.generated
        t.next_ordinal = t.max_ordinal + 1
        func = entry_point_parts(t.entry_point)[1]
        t.names = parameter_names(t.ref_code, func) if func else None
        kinds: dict = {}
        for kind, text, inp, exp in tests.get(t.problem_id, []):
            if kind == "call" and inp is not None:
                t.seen.add(inp)
                args = deserialize_value(inp)
                if isinstance(args, list):
                    t.seeds.append(args)
                    if exp is not None:
                        t.answers.append((args, deserialize_value(exp)))
            elif kind == "check" and t.names is not None:
                for ex in example_calls(text):
                    if (call := positional(ex.args, ex.kwargs, t.names)) is None:
                        continue
                    for key, k in ex.arg_kinds.items():
                        kinds[key if isinstance(key, int) else t.names.index(key) if key in t.names else -1] = k
                    if ex.out_kind != "value":
                        t.out_kind = ex.out_kind
                    t.seeds.append(call)
                    t.seen.add(serialize_value(call))
                    t.answers.append((call, ex.expected))
            elif kind == "pytest" and func:
                t.mode = "pytest"
                for args, kwargs, expected in pytest_style.literal_calls(text, func):
                    call = positional(args, kwargs, t.names) if t.names is not None else (None if kwargs else args)
                    if call is not None:
                        t.seeds.append(call)
                        t.seen.add(serialize_value(call))
                        t.answers.append((call, expected))
        if t.names is not None:
            t.kinds = [kinds.get(i) for i in range(len(t.names))]
        if any(t.kinds) or t.out_kind != "value":
            t.mode = "check"
        if not t.seeds:
            no_seed += 1
            continue
        if several_answers_phrase(t.question) is not None:
            skipped["several_answers"] += 1   # no comparison with one expected value can judge them
            continue
        if t.answers and t.out_kind == "value" and all(a is None for _, a in t.answers):
            skipped["returns_nothing"] += 1   # in-place problems: a return value of None tests nothing
            continue
        t.examples_none = any(a is None for _, a in t.answers)   # an example expects None
        t.any_order = any_order_phrase(t.question)
        t.unique = unique_answer_phrase(t.question)   # the statement guarantees one answer per input
        t.max_chars = min(max(200, 4 * max(len(serialize_value(s)) for s in t.seeds)), 20000)
        t.contract = inferred_contract(t.seeds)   # only the examples' seeds define it, not generated inputs
        t.constraints = Checker(t.question, t.names, dict(zip(t.names or [], t.kinds))).fit(t.seeds)
        t.answer_bound = answer_bound(t.question)
        t.bst = [i for i, k in enumerate(t.kinds) if k == "tree"] \
            if "binary search tree" in (t.question or "").lower() else []
        out.append(t)
    return out, no_seed


def _valid_input(t, args, stats) -> bool:
    from factory.testgen.nodes import is_bst
    if not t.contract(args):
        stats["outside_examples_contract"] += 1
        return False
    if t.constraints.violated(args) or any(not is_bst(args[i]) for i in t.bst if i < len(args)):
        stats["outside_constraints"] += 1
        return False
    return True


def _reference_job(t, specs, wrapped: bool = True):
    """The reference on ``specs``; check-mode call tests (``wrapped``) reach it through the typed call wrapper."""
    from factory.sandbox import Job
    from factory.testgen.nodes import call_wrapper
    if t.mode == "check" and wrapped:
        return Job(program_id=t.ref_id, code=t.ref_code + call_wrapper(t.entry_point, t.kinds),
                   tests=specs, entry_point="_hidden_call", preamble=t.preamble)
    return Job(program_id=t.ref_id, code=t.ref_code, tests=specs, entry_point=t.entry_point, preamble=t.preamble)


def _render(t, args, exp_text: str, test_name: str) -> tuple[str, str | None, str | None, str | None]:
    """(kind, code, input, expected) of the stored test (code None: the value cannot be written faithfully)."""
    from factory.sandbox import deserialize_value, serialize_value
    from factory.testgen import pytest_style
    from factory.generation.sanitize import entry_point_parts
    from factory.testgen.nodes import render_check
    if t.mode == "call":
        return "call", None, serialize_value(args), exp_text
    value = deserialize_value(exp_text)
    if t.mode == "check":
        if t.out_kind != "value" and value is None:
            value = []
        if pytest_style.literal(value) is None and value is not None:
            return "check", None, None, None
        return "check", render_check(t.names, t.kinds, args, value, t.out_kind, any_order=t.depth > 0), None, None
    code = pytest_style.render(entry_point_parts(t.entry_point)[1], test_name, args, value, any_order=t.depth > 0)
    return "pytest", code, None, None


def _round(pool, active: list, seed: int, rnd: int, per_round: int, stats: dict) -> None:
    import random

    from factory.ingest.visibility import visibility
    from factory.sandbox import TestSpec, clean_text, deserialize_value
    from factory.sandbox.rows import is_json, merge_verdicts
    from factory.testgen.input_mutation import generate_inputs
    from factory.testgen.nodes import canonical

    cands = {}
    for t in active:
        rng = random.Random(f"hidden-tests|{seed}|{t.problem_id}|{rnd}")
        transform = None if not any(t.kinds) else \
            (lambda args, kinds=t.kinds: [canonical(k, a) for k, a in zip(kinds + [None] * len(args), args)])
        made = generate_inputs(t.seeds, per_round, rng, t.seen, t.max_chars, transform=transform)
        stats[t.source]["candidates"] += len(made)
        cands[t.problem_id] = [(text, args) for text, args in made if _valid_input(t, args, stats[t.source])]
    jobs = [_reference_job(t, [TestSpec(f"c{i}", "call", input=text) for i, (text, _) in enumerate(cands[t.problem_id])])
            for t in active if cands[t.problem_id]]
    expected = {}
    for v in pool.run(jobs):
        actual = clean_text(v.actual) if v.status == "no_expected" and v.actual is not None else None
        if actual is not None and is_json(actual) and '"$o"' not in actual and '"$m"' not in actual:
            expected[(v.program_id, v.test_id)] = actual
    ambiguous = _ambiguous(pool, active, cands, expected)
    jobs, ok = [], {}
    for t in active:
        good = []
        st = stats[t.source]
        for i, (text, args) in enumerate(cands[t.problem_id]):
            exp = expected.get((t.ref_id, f"c{i}"))
            value = deserialize_value(exp) if exp is not None else None
            if exp is None:
                st["reference_failed"] += 1            # raised, timed out, or returned no plain value
                continue
            if (t.problem_id, i) in ambiguous:
                st["ambiguous_answer"] += 1            # "exactly one solution" does not hold for this input
                continue
            if value is None and t.out_kind == "value" and not t.examples_none:
                st["reference_returned_none"] += 1     # e.g. two-sum on an input with no answer
                continue
            if t.answer_bound is not None and isinstance(value, int) and not isinstance(value, bool) \
                    and not -t.answer_bound <= value < t.answer_bound:
                st["answer_out_of_range"] += 1         # "the answer fits in a 32-bit integer"
                continue
            kind, code, inp, out = _render(t, args, exp, f"test_hidden_r{rnd}_{i}")
            if kind != "call" and code is None:
                st["not_writable"] += 1
                continue
            if visibility(t.statement, kind, code, inp, out) != "hidden":
                st["visible_rejected"] += 1
                continue
            good.append((f"c{i}", args, text, exp, TestSpec(f"c{i}", kind, code=code, input=inp, expected=out)))
            t.seeds.append(args)            # valid inputs seed later rounds
        ok[t.problem_id] = good
        if good:
            jobs.append(_reference_job(t, [g[4] for g in good], wrapped=False))
    status = {k: v.status for k, (v, _) in merge_verdicts(list(pool.run(jobs))).items()} if jobs else {}
    for t in active:
        for cid, args, text, exp, _spec in ok[t.problem_id]:
            if len(t.kept) >= t.need:
                break
            if status.get((t.ref_id, cid)) == "pass":
                t.kept.append((args, text, exp))
            else:
                stats[t.source]["cross_check_failed"] += 1


def _ambiguous(pool, active: list, cands: dict, expected: dict) -> set:
    """(problem, candidate) pairs that break a stated unique-answer guarantee: where the answer names indices
    of a list argument (two-sum), the reference also runs on that list reversed, and the pair of answers must
    name the same elements (an input with two solutions gives the first one found from each end)."""
    from factory.sandbox import TestSpec, deserialize_value, serialize_value
    from factory.testgen.any_order import index_answer
    jobs, where = [], {}
    for t in active:
        if not t.unique or not t.answers or any(index_answer(a, args) is None for args, a in t.answers):
            continue
        specs = []
        for i, (_text, args) in enumerate(cands[t.problem_id]):
            exp = expected.get((t.ref_id, f"c{i}"))
            pos = index_answer(deserialize_value(exp), args) if exp is not None else None
            if pos is None:
                continue
            flipped = list(args)
            flipped[pos] = list(reversed(args[pos]))
            specs.append(TestSpec(f"u{i}", "call", input=serialize_value(flipped)))
            where[(t.ref_id, f"u{i}")] = (t.problem_id, i, len(args[pos]), sorted(deserialize_value(exp)))
        if specs:
            jobs.append(_reference_job(t, specs))
    bad = {(pid, i) for (pid, i, _n, _a) in where.values()}
    for v in pool.run(jobs) if jobs else []:
        info = where.get((v.program_id, v.test_id))
        if info is None or v.status != "no_expected" or v.actual is None:
            continue
        pid, i, n, answer = info
        with suppress(TypeError, ValueError, KeyError):
            other = deserialize_value(v.actual)
            if isinstance(other, list) and sorted(n - 1 - x for x in other) == answer:
                bad.discard((pid, i))
    return bad


def _decide_any_order(pool, targets: list, checker_rows: dict, judging: dict, stats: dict, summary: dict) -> None:
    """For each target whose statement says "in any order": the comparison depth the reference's answers allow
    (:func:`factory.testgen.any_order.relaxation`), verified by feeding a permuted reference answer back through
    the judge (must pass) and a wrong one (must fail); the relaxed comparison is attached only when both hold."""
    from factory.judging.rules import ProblemJudging, checker_hash
    from factory.sandbox import Job, TestSpec, deserialize_value
    from factory.sandbox.rows import merge_verdicts
    from factory.testgen.any_order import INNER, checker_source, permuted, relaxation, wrong
    jobs, plan = [], {}
    for t in targets:
        if t.any_order is None or not t.kept:
            continue
        summary["detected"] += 1
        answers = list(t.answers) + [(args, deserialize_value(exp)) for args, _, exp in t.kept]
        depth, why = relaxation(answers, t.question) if t.out_kind == "value" else (0, "the answer is a tree/list node")
        if depth and t.mode != "call":              # check/pytest tests relax the top level only
            depth, why = (1, why) if depth != INNER else (0, "a check/pytest test cannot keep the top level exact")
        if depth and t.problem_id in judging and judging[t.problem_id].policy is not None:
            depth, why = 0, "the problem has its own judging rule"
        t.why = why
        if not depth:
            summary["exact"] += 1
            continue
        t.depth = depth
        if t.mode == "call":
            code = checker_source(depth)
            base = judging.get(t.problem_id) or ProblemJudging()
            t.judging = ProblemJudging("program", None, None, code, checker_hash("program", None, None, code), base.cpu_s)
        probes = [k for k in t.kept if isinstance(v := deserialize_value(k[2]), list) and len(v) >= 2][:3]
        plan[t.problem_id] = len(probes)
        for j, (args, text, exp) in enumerate(probes):
            value = deserialize_value(exp)
            kind, code, inp, out = _render(t, args, exp, f"test_probe_{j}")
            for tag, answer, want in (("perm", permuted(value, depth), "pass"), ("wrong", wrong(value), "fail")):
                if (stub := _stub(t.entry_point, answer)) is None:
                    plan[t.problem_id] = -1
                    continue
                spec = TestSpec(f"{tag}{j}", kind, code=code, input=inp, expected=out)
                if t.judging is not None:
                    spec = t.judging.apply(spec)
                jobs.append((t.problem_id, want, Job(program_id=f"probe|{t.problem_id}|{tag}{j}", code=stub,
                                                     tests=[spec], entry_point=t.entry_point, preamble=t.preamble)))
    results = merge_verdicts(list(pool.run([j for _, _, j in jobs]))) if jobs else {}
    verified = {pid: n > 0 for pid, n in plan.items()}
    for pid, want, job in jobs:
        got = results.get((job.program_id, job.tests[0].test_id))
        if got is None or (got[0].status == "pass") != (want == "pass"):
            verified[pid] = False
    for t in targets:
        if t.depth == 0:
            continue
        if not verified.get(t.problem_id):
            summary["unverified"] += 1
            t.depth, t.judging = 0, None
            continue
        summary["relaxed"] += 1
        stats[t.source]["any_order_relaxed"] += 1
        if t.mode == "call":
            checker_rows[t.problem_id] = {
                "problem_id": t.problem_id, "policy": "program", "atol": None, "rtol": None, "code": t.judging.code,
                "origin": ORIGIN_ANY_ORDER, "detail": f"{t.any_order} ({t.why}; verified by permuted answers)"[:400],
                "checker_hash": t.judging.checker_hash}


def _existing_judging(con, ids: list[str]) -> dict:
    from factory.judging.rules import ProblemJudging
    from factory.lake.query import table_exists
    out = {}
    if table_exists(con, "silver.checkers"):
        out = {r[0]: ProblemJudging(*r[1:]) for r in con.execute(
            "SELECT problem_id, policy, atol, rtol, code, checker_hash FROM silver.checkers "
            "WHERE list_contains(?, problem_id)", [ids]).fetchall()}
    if table_exists(con, "silver.time_limits"):
        for pid, cpu_s in con.execute("SELECT problem_id, cpu_s FROM silver.time_limits WHERE cpu_s IS NOT NULL "
                                      "AND list_contains(?, problem_id)", [ids]).fetchall():
            j = out.get(pid) or ProblemJudging()
            out[pid] = ProblemJudging(j.policy, j.atol, j.rtol, j.code, j.checker_hash, cpu_s)
    return out


def run_hidden_tests(lake=None, sources: list[str] | None = None, per_problem: int = 8, seed: int = 0,
                     rounds: int = 3, per_round: int = 16, limits=None, workers: int | None = None) -> dict:
    """Generate up to ``per_problem`` hidden tests for each public-only problem; returns a summary per source
    (also the run's ops.runs message)."""
    from collections import defaultdict

    from factory.errors import FactoryError
    from factory.ingest.normalize import stable_hash
    from factory.judging.rules import ProblemJudging
    from factory.lake.commit import stage_run, utcnow
    from factory.sandbox import Limits, SandboxPool, TestSpec
    from factory.sandbox.rows import merge_verdicts, verdict_row
    if per_problem < 1 or rounds < 1 or per_round < 1:
        raise FactoryError(f"per_problem, rounds and per_round must be >= 1 (got {per_problem}, {rounds}, {per_round})")
    limits = limits or Limits()
    config = {"sources": sources, "per_problem": per_problem, "seed": seed, "rounds": rounds,
              "per_round": per_round, "limits": limits.as_dict(), "version": 2}
    with stage_run("hidden-tests", config, lake=lake) as run:
        skipped: dict = defaultdict(int)
        targets, no_seed = _targets(run.con, sources, per_problem, skipped)
        stats: dict = defaultdict(lambda: defaultdict(int))
        any_order: dict = defaultdict(int)
        for t in targets:
            stats[t.source]["problems"] += 1
            stats[t.source][f"mode_{t.mode}"] += 1
        test_rows, exec_rows, checker_rows = [], [], {}
        if targets:
            from factory.judging.jobs import executions_table
            judging = _existing_judging(run.con, [t.problem_id for t in targets])
            with SandboxPool(limits, workers) as pool:
                for rnd in range(rounds):
                    active = [t for t in targets if len(t.kept) < t.need]
                    if not active:
                        break
                    _round(pool, active, seed, rnd, per_round, stats)
                _decide_any_order(pool, targets, checker_rows, judging, stats, any_order)
                jobs, new, key = [], {}, {}
                for t in targets:
                    rule = t.judging or judging.get(t.problem_id) or ProblemJudging()
                    key[t.problem_id] = rule.limits_hash(limits)
                    specs = []
                    for args, text, exp in t.kept:
                        ordinal = t.next_ordinal
                        t.next_ordinal += 1
                        kind, code, inp, out = _render(t, args, exp, f"test_hidden_{ordinal}")
                        if kind != "call" and code is None:
                            continue
                        test_id = stable_hash(t.problem_id, ordinal, kind, code, inp)
                        new[test_id] = {"test_id": test_id, "problem_id": t.problem_id, "ordinal": ordinal,
                                        "kind": kind, "code": code, "input": inp, "expected": out,
                                        "comparison": "exact", "atol": None, "origin": "augment",
                                        "subset": SUBSET, "visibility": "hidden"}
                        specs.append(rule.apply(TestSpec(test_id, kind, code=code, input=inp, expected=out)))
                    if specs:   # the verdicts that validate them: the reference under the run's limits and rule
                        jobs.append(_reference_job(t, specs, wrapped=False))
                merged = merge_verdicts(list(pool.run(jobs))) if jobs else {}
            now = utcnow()
            target = {t.problem_id: t for t in targets}
            for test_id, row in new.items():
                t = target[row["problem_id"]]
                got = merged.get((t.ref_id, test_id))
                if got is None or got[0].status != "pass":
                    stats[t.source]["cross_check_failed"] += 1
                    continue
                test_rows.append(row)
                exec_rows.append(verdict_row(t.ref_id, test_id, got[0], got[1], key[t.problem_id], now))
                stats[t.source]["tests_added"] += 1
            with_tests = {r["problem_id"] for r in test_rows}
            for pid in with_tests:
                stats[target[pid].source]["problems_with_tests"] += 1
            run.write("silver.tests", test_rows)
            if exec_rows:
                run.write("silver.executions", executions_table(exec_rows))
            rows = [dict(r, created_at=now) for pid, r in sorted(checker_rows.items()) if pid in with_tests]
            if rows:
                run.delete("silver.checkers", "list_contains(?, problem_id)", [[r["problem_id"] for r in rows]])
                run.write("silver.checkers", rows)
        rejected = {k: sum(st.get(k, 0) for st in stats.values()) for k in REJECTIONS} if stats else {}
        report = {"problems": len(targets) + no_seed + sum(skipped.values()), "no_seed": no_seed,
                  "skipped": sum(skipped.values()), "skipped_by_reason": dict(skipped), "tests_added": len(test_rows),
                  "problems_with_tests": len({r["problem_id"] for r in test_rows}), "rejected_inputs": dict(rejected),
                  "any_order": dict(any_order), "by_source": {s: dict(v) for s, v in sorted(stats.items())}}
        run.summary = json.dumps(report, sort_keys=True)
    report["run_id"] = run.run_id
    return report
