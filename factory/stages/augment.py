"""Suite adequacy stages: `factory augment` (tests that kill surviving mutants) and `factory suite-reduce` (greedy
set-cover suites with the same kill set, and the top-k that kill most) -> gold.reduced_suites.

`factory augment` works on problems with ``call`` tests (HumanEval+, MBPP+, LeetCode: input = JSON list of arguments) or
``stdio`` tests (CodeContests: shape-preserving stdin mutation under the seeds' inferred contract,
:mod:`factory.testgen.stdio_mutation`; problems whose statement accepts several answers are skipped) and mutants that
survive every valid test (oracle: the reference programs, as curation's default). Per round it mutates known inputs
(EvalPlus-style, :mod:`factory.testgen.input_mutation`), runs the reference on them in the sandbox for the expected
value (inputs on which the reference errors, times out or returns an unserializable value are discarded), runs the
reference again and the surviving mutants against that expected value, and keeps - in generation order - an input only
when it kills a mutant no kept input kills yet. It stops when every survivor is killed, the budget (augment tests per
problem, earlier runs included) is spent, or after the last round. Kept inputs are re-run on the reference and every
mutant of the problem under ``limits``; a test the reference fails there or that then kills nothing is dropped. What is
kept lands in one transaction: silver.tests (origin = subset = 'augment', test_id hashed as ingest does) and those
verdicts in silver.executions (same limits hash as `factory execute` with the same limits). Other programs (samples) get
verdicts on the new tests from the next `factory execute`. Candidates are seeded only from non-augment tests and a fixed
seed, so a re-run regenerates the same inputs and adds nothing twice.
"""
from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass, field

from factory.testgen.input_mutation import generate_inputs, greedy_rank, killed_by
from factory.testgen.stdio_mutation import generate_stdio_inputs, several_answers, stdio_contract
from factory.testgen.stdio_mutation import key as stdio_key
from factory.errors import FactoryError
from factory.ingest.normalize import stable_hash
from factory.ingest.visibility import statement_text, visibility
from factory.sandbox import Job, Limits, TestSpec, clean_text, deserialize_value, serialize_value
from factory.sandbox.rows import is_json, merge_verdicts, verdict_row
from factory.lake.commit import stage_run, utcnow

NOT_A_KILL = ("pass", "infra_error")   # an infra error says nothing about the program
DEEPCODER_K = 15                       # DeepCoder keeps 15 tests per problem


@dataclass
class _Target:
    problem_id: str
    source: str
    entry_point: str
    preamble: str
    ref_id: str
    ref_code: str
    comparison: str
    atol: float | None
    seeds: list = field(default_factory=list)          # deserialized argument lists
    seen: set = field(default_factory=set)             # serialized inputs already known (tests + candidates)
    max_chars: int = 200
    next_ordinal: int = 0
    budget_left: int = 0
    mutants: dict = field(default_factory=dict)        # every executed mutant: id -> code
    survivors: dict = field(default_factory=dict)      # mutants passing every valid test: id -> code
    left: set = field(default_factory=set)             # survivors no kept input kills yet
    kept: list = field(default_factory=list)           # (serialized input, expected)
    statement: str = ""                                 # normalised question + starter code (test visibility)
    kind: str = "call"                                  # call | stdio (seeds are then stdin texts)
    contract: object = None                             # stdio: the seeds' inferred input contract


def _in_sources(column: str, sources: list[str] | None) -> tuple[str, list]:
    if not sources:
        return "", []
    return f"AND {column} IN ({', '.join('?' for _ in sources)})", list(sources)


def _targets(con, sources: list[str] | None, budget: int, public_only: bool = False) -> list[_Target]:
    """Problems with valid call tests and surviving mutants, with everything augmentation needs (public_only:
    the suite is the statement's examples plus earlier augment tests, as if the hidden tests were not there)."""
    src, params = _in_sources("pb.source", sources)
    if public_only:
        src += " AND (coalesce(t.subset = 'public', t.visibility = 'public') OR t.origin = 'augment')"
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _aug_valid AS
        SELECT t.test_id, t.problem_id FROM silver.tests t JOIN silver.problems pb USING (problem_id)
        JOIN gold.latest_executions e USING (test_id)
        JOIN silver.programs r ON r.program_id = e.program_id AND r.problem_id = t.problem_id
        WHERE r.origin = 'reference' {src}
        GROUP BY ALL HAVING bool_and(e.status = 'pass')""", params)
    mutants = con.execute("""
        SELECT m.problem_id, m.program_id, m.code, bool_and(e.status = 'pass') AS survived
        FROM silver.programs m JOIN gold.latest_executions e USING (program_id)
        JOIN _aug_valid v ON v.test_id = e.test_id AND v.problem_id = m.problem_id
        WHERE m.origin = 'mutant' GROUP BY ALL ORDER BY m.problem_id, m.program_id""").fetchall()
    by_problem: dict[str, list] = defaultdict(list)
    for problem_id, program_id, code, survived in mutants:
        by_problem[problem_id].append((program_id, code, survived))
    candidates = sorted(p for p, ms in by_problem.items() if any(s for _, _, s in ms))
    if not candidates:
        return []
    problems = con.execute("""
        SELECT pb.problem_id, pb.source, pb.entry_point, pb.test_preamble, r.program_id, r.code, pb.question,
               pb.starter_code
        FROM silver.problems pb JOIN silver.programs r ON r.problem_id = pb.problem_id AND r.origin = 'reference'
        WHERE list_contains(?, pb.problem_id)
        QUALIFY row_number() OVER (PARTITION BY pb.problem_id ORDER BY r.program_id) = 1
        ORDER BY pb.problem_id""", [candidates]).fetchall()
    tests = con.execute("""
        SELECT t.problem_id, t.kind, t.input, t.comparison, t.atol, t.origin, t.ordinal,
               v.test_id IS NOT NULL AS valid
        FROM silver.tests t LEFT JOIN _aug_valid v USING (test_id, problem_id)
        WHERE list_contains(?, t.problem_id) ORDER BY t.problem_id, t.ordinal""", [candidates]).fetchall()
    con.execute("DROP TABLE _aug_valid")
    tests_of: dict[str, list] = defaultdict(list)
    for row in tests:
        tests_of[row[0]].append(row[1:])
    out = []
    for problem_id, source, entry_point, preamble, ref_id, ref_code, question, starter in problems:
        rows = tests_of[problem_id]
        calls = [r for r in rows if r[0] == "call" and r[6] and r[1] is not None] if entry_point else []
        stdio = [r for r in rows if r[0] == "stdio" and r[6] and r[1] is not None and r[4] != "augment"]
        if not calls and (not stdio or several_answers(question)):   # stdio: one expected output must judge it
            continue
        first = (calls or stdio)[0]
        t = _Target(problem_id, source, entry_point, preamble or "", ref_id, ref_code, comparison=first[2],
                    atol=first[3], statement=statement_text(question, starter), kind="call" if calls else "stdio")
        if t.kind == "stdio":
            t.seen = {stdio_key(r[1]) for r in rows if r[0] == "stdio" and r[1] is not None}
            t.seeds = [r[1] for r in stdio]
            t.max_chars = min(max(200, *(2 * len(r[1]) for r in stdio)), 20000)
            t.contract = stdio_contract(t.seeds)
        for kind, text, _, _, origin, _, valid in rows:
            if kind == "call" and text is not None and t.kind == "call":
                t.seen.add(text)
                args = deserialize_value(text)
                if isinstance(args, list):
                    t.seen.add(serialize_value(args))
                    if valid and origin != "augment":
                        t.seeds.append(args)
                        t.max_chars = max(t.max_chars, 4 * len(text))
        t.max_chars = min(t.max_chars, 20000)
        t.next_ordinal = max(r[5] for r in rows) + 1
        t.budget_left = budget - sum(1 for r in rows if r[4] == "augment")
        t.mutants = {pid: code for pid, code, _ in by_problem[problem_id]}
        t.survivors = {pid: code for pid, code, survived in by_problem[problem_id] if survived}
        t.left = set(t.survivors)
        if t.seeds and t.budget_left > 0:
            out.append(t)
    return out


def _spec(t: _Target, test_id: str, text: str, expected: str | None) -> TestSpec:
    return TestSpec(test_id=test_id, kind=t.kind, input=text, expected=expected, comparison=t.comparison, atol=t.atol)


def _job(t: _Target, program_id: str, code: str, specs: list[TestSpec]) -> Job:
    return Job(program_id=program_id, code=code, tests=specs, entry_point=t.entry_point, preamble=t.preamble)


def _round(pool: SandboxPool, active: list[_Target], seed: int, rnd: int, per_round: int, stats: dict) -> None:
    """One round: generate, compute expected values, screen the survivors, keep killing inputs."""
    cands: dict[str, list] = {}
    for t in active:
        rng = random.Random(f"augment|{seed}|{t.problem_id}|{rnd}")
        cands[t.problem_id] = (generate_stdio_inputs(t.seeds, per_round, rng, t.seen, t.max_chars,
                                                     contract=t.contract) if t.kind == "stdio" else
                               generate_inputs(t.seeds, per_round, rng, t.seen, t.max_chars))
        stats[t.source]["candidates"] += len(cands[t.problem_id])
    jobs = [_job(t, t.ref_id, t.ref_code, [_spec(t, f"c{i}", text, None) for i, (text, _) in
                                           enumerate(cands[t.problem_id])]) for t in active if cands[t.problem_id]]
    expected: dict[tuple[str, str], str] = {}
    stdio_refs = {t.ref_id for t in active if t.kind == "stdio"}
    for v in pool.run(jobs):
        actual = clean_text(v.actual) if v.status == "no_expected" and v.actual is not None else None
        if v.program_id in stdio_refs:     # stdout of a clean exit, not blank
            if actual is not None and actual.strip() and v.exit_code in (0, None):
                expected[(v.program_id, v.test_id)] = actual
        elif actual is not None and is_json(actual) and '"$o"' not in actual:
            expected[(v.program_id, v.test_id)] = actual
    screened: dict[str, list] = {}
    jobs = []
    for t in active:
        ok = [(f"c{i}", text, args) for i, (text, args) in enumerate(cands[t.problem_id])
              if (t.ref_id, f"c{i}") in expected]
        stats[t.source]["reference_rejected"] += len(cands[t.problem_id]) - len(ok)
        t.seeds += [args for _, _, args in ok]         # valid inputs seed later rounds (EvalPlus grows its corpus)
        screened[t.problem_id] = ok
        if specs := [_spec(t, cid, text, expected[(t.ref_id, cid)]) for cid, text, _ in ok]:
            jobs.append(_job(t, t.ref_id, t.ref_code, specs))   # the reference must pass its own expected value
            jobs += [_job(t, mid, t.survivors[mid], specs) for mid in sorted(t.left)]
    status = {(v.program_id, v.test_id): v.status for v in pool.run(jobs) if v.test_id is not None}
    for t in active:
        for cid, text, _ in screened[t.problem_id]:
            if t.budget_left <= 0 or not t.left:
                break
            if status.get((t.ref_id, cid)) != "pass":
                stats[t.source]["reference_rejected"] += 1
                continue
            if kills := {m for m in t.left if status.get((m, cid), "pass") not in NOT_A_KILL}:
                t.kept.append((text, expected[(t.ref_id, cid)]))
                t.left -= kills
                t.budget_left -= 1


def _final(pool: SandboxPool, targets: list[_Target], limits_hash: str, stats: dict) -> tuple[list, list]:
    """Re-run kept inputs on the reference and every mutant; returns (test rows, execution rows)."""
    tests: dict[str, dict] = {}
    jobs = []
    for t in targets:
        if not t.kept:
            continue
        specs = []
        for text, expected in t.kept:
            ordinal = t.next_ordinal
            t.next_ordinal += 1
            test_id = stable_hash(t.problem_id, ordinal, t.kind, None, text)
            tests[test_id] = {"test_id": test_id, "problem_id": t.problem_id, "ordinal": ordinal, "kind": t.kind,
                              "code": None, "input": text, "expected": expected, "comparison": t.comparison,
                              "atol": t.atol, "origin": "augment", "subset": "augment",
                              "visibility": visibility(t.statement, t.kind, None, text, expected)}
            specs.append(_spec(t, test_id, text, expected))
        jobs.append(_job(t, t.ref_id, t.ref_code, specs))
        jobs += [_job(t, mid, code, specs) for mid, code in sorted(t.mutants.items())]
    merged = merge_verdicts(list(pool.run(jobs))) if jobs else {}
    now = utcnow()
    test_rows, exec_rows = [], []
    for t in targets:
        killed: set = set()
        added = 0
        for tid in [tid for tid, row in tests.items() if row["problem_id"] == t.problem_id]:
            ref = merged.get((t.ref_id, tid))
            kills = {m for m in t.mutants if (m, tid) in merged and merged[(m, tid)][0].status not in NOT_A_KILL}
            if ref is None or ref[0].status != "pass" or not kills:
                stats[t.source]["dropped_on_rerun"] += 1
                continue
            killed |= kills
            added += 1
            test_rows.append(tests[tid])
            for pid in [t.ref_id, *t.mutants]:
                if (pid, tid) in merged:
                    v, in_process = merged[(pid, tid)]
                    exec_rows.append(verdict_row(pid, tid, v, in_process, limits_hash, now))
        s = stats[t.source]
        s["tests_added"] += added
        s["survivors_killed"] += len(killed & set(t.survivors))
        s["problems_all_killed"] += int(set(t.survivors) <= killed)
    return test_rows, exec_rows


def run_augment(lake=None, sources: list[str] | None = None, budget: int = 10, seed: int = 0, rounds: int = 4,
                per_round: int = 20, limits: Limits | None = None, workers: int | None = None,
                public_only: bool = False) -> dict:
    """Add up to `budget` generated call tests per problem that kill surviving mutants; returns the yield
    summary per source (also the run's ops.runs message)."""
    if budget < 1 or rounds < 1 or per_round < 1:
        raise FactoryError(f"budget, rounds and per_round must be >= 1 (got {budget}, {rounds}, {per_round})")
    limits = limits or Limits()
    config = {"sources": sources, "budget": budget, "seed": seed, "rounds": rounds, "per_round": per_round,
              "limits": limits.as_dict(), **({"public_only": True} if public_only else {})}
    with stage_run("augment", config, lake=lake) as run:
        targets = _targets(run.con, sources, budget, public_only)
        stats: dict[str, dict] = defaultdict(lambda: defaultdict(int))
        for t in targets:
            stats[t.source]["problems"] += 1
            stats[t.source]["survivors"] += len(t.survivors)
        test_rows, exec_rows = [], []
        if targets:
            from factory.judging.jobs import executions_table
            from factory.sandbox import SandboxPool   # the pool loads here: `factory --help` stays fast
            with SandboxPool(limits, workers) as pool:
                for rnd in range(rounds):
                    active = [t for t in targets if t.left and t.budget_left > 0]
                    if not active:
                        break
                    _round(pool, active, seed, rnd, per_round, stats)
                test_rows, exec_rows = _final(pool, targets, limits.hash(), stats)
            run.write("silver.tests", test_rows)
            if exec_rows:
                run.write("silver.executions", executions_table(exec_rows))
        report = {"problems": len(targets), "tests_added": len(test_rows), "verdicts": len(exec_rows),
                  "by_source": {s: dict(v) for s, v in sorted(stats.items())}}
        run.summary = json.dumps(report, sort_keys=True)
    report["run_id"] = run.run_id
    return report


# -- set cover -------------------------------------------------------------------------------------------
def run_suite_reduce(lake=None, sources: list[str] | None = None, k: int = DEEPCODER_K) -> dict:
    """Per problem with executed mutants: the greedy minimal suite with the full valid suite's kill set and the
    top-k tests that kill most -> gold.reduced_suites (rows of the selected sources replaced)."""
    if k < 1:
        raise FactoryError(f"k must be >= 1, got {k}")
    with stage_run("suite-reduce", {"sources": sources, "k": k}, lake=lake) as run:
        con = run.con
        src, params = _in_sources("pb.source", sources)
        stale = con.execute(f"""
            SELECT count(*) FROM silver.tests t JOIN silver.problems pb USING (problem_id)
            WHERE t.test_id NOT IN (SELECT test_id FROM gold.test_validation) {src}""", params).fetchone()[0]
        if stale:
            raise FactoryError(f"gold.test_validation is older than silver.tests ({stale} tests have no validation "
                               "row): run `factory curate` first")
        valid = con.execute(f"""
            SELECT t.problem_id, pb.source, t.test_id, t.ordinal FROM gold.test_validation v
            JOIN silver.tests t USING (test_id) JOIN silver.problems pb ON pb.problem_id = t.problem_id
            WHERE v.valid {src} ORDER BY t.problem_id, t.ordinal""", params).fetchall()
        verdicts = con.execute(f"""
            SELECT m.problem_id, m.program_id, e.test_id, e.status NOT IN ('pass', 'infra_error') AS kill
            FROM silver.programs m JOIN gold.latest_executions e USING (program_id)
            JOIN gold.test_validation v USING (test_id) JOIN silver.problems pb ON pb.problem_id = m.problem_id
            JOIN silver.tests t ON t.test_id = e.test_id AND t.problem_id = m.problem_id
            WHERE m.origin = 'mutant' AND v.valid {src}""", params).fetchall()
        mutants: dict[str, set] = defaultdict(set)
        kill_pairs: dict[str, set] = defaultdict(set)
        for problem_id, mutant, test_id, kill in verdicts:
            mutants[problem_id].add(mutant)
            if kill:
                kill_pairs[test_id].add(mutant)
        suites: dict[str, dict] = {}
        for problem_id, source, test_id, ordinal in valid:
            if problem_id in mutants:
                suites.setdefault(problem_id, {"source": source, "ordinal": {}})["ordinal"][test_id] = ordinal
        rows = []
        for problem_id, s in sorted(suites.items()):
            kills = {t: frozenset(kill_pairs.get(t, ())) for t in s["ordinal"]}
            ranking, cover = greedy_rank(kills, s["ordinal"])
            full, reduced, top = killed_by(kills, ranking), killed_by(kills, ranking[:cover]), ranking[:k]
            rows.append({"problem_id": problem_id, "source": s["source"], "k": k,
                         "mutants": len(mutants[problem_id]), "full_tests": len(ranking), "full_killed": len(full),
                         "reduced_tests": cover, "reduced_killed": len(reduced),
                         "top_k_tests": len(top), "top_k_killed": len(killed_by(kills, top)),
                         "kill_set_unchanged": reduced == full,
                         "reduced_test_ids": json.dumps(ranking[:cover]), "top_k_test_ids": json.dumps(top)})
        run.delete("gold.reduced_suites", f"problem_id IN (SELECT problem_id FROM silver.problems pb "
                                          f"WHERE true {src})", params)
        run.write("gold.reduced_suites", rows)
        report = {"problems": len(rows), "k": k, "by_source": {}}
        for r in rows:
            b = report["by_source"].setdefault(r["source"], defaultdict(int))
            for key in ("full_tests", "reduced_tests", "top_k_tests", "full_killed", "reduced_killed", "top_k_killed"):
                b[key] += r[key]
            b["problems"] += 1
            b["kill_set_changed"] += int(not r["kill_set_unchanged"])
        report["by_source"] = {s: dict(v) for s, v in sorted(report["by_source"].items())}
        run.summary = json.dumps(report, sort_keys=True)
    report["run_id"] = run.run_id
    return report


# -- command line ----------------------------------------------------------------------------------------
def register(sub, add_lake) -> None:
    """Add `augment` and `suite-reduce` to the `factory` parser."""
    p = sub.add_parser("augment", help="generated call tests that kill surviving mutants (origin=augment)")
    add_lake(p)
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--budget", type=int, default=10, help="augment tests per problem (earlier runs count)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=4, help="generate-and-screen rounds")
    p.add_argument("--per-round", type=int, default=20, help="candidate inputs per problem and round")
    p.add_argument("--public-only", action="store_true",
                   help="seed from and kill the survivors of the public tests (statement examples) only")
    p.add_argument("--cpu-s", type=float, default=4.0, help="CPU seconds per test (as `factory execute`)")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--workers", type=int, help="sandbox workers (default: CPU count)")
    p.set_defaults(fn=cmd_augment)

    p = sub.add_parser("suite-reduce", help="greedy set-cover suites with the same kill set -> gold.reduced_suites")
    add_lake(p)
    p.add_argument("--source", action="append", help="only problems of these sources (repeatable)")
    p.add_argument("--k", type=int, default=DEEPCODER_K, help="size of the 'top-k that kill most' suite")
    p.set_defaults(fn=cmd_suite_reduce)


def cmd_augment(args) -> None:
    report = run_augment(args.lake, args.source, budget=args.budget, seed=args.seed, rounds=args.rounds,
                         per_round=args.per_round, limits=Limits(cpu_s=args.cpu_s, memory_mb=args.memory_mb),
                         public_only=args.public_only, workers=args.workers)
    print(f"{report['tests_added']} tests added to {report['problems']} problems with surviving mutants "
          f"({report['verdicts']} verdicts); by source: {json.dumps(report['by_source'])}")
    print("run `factory curate` to see the new mutation scores (gold.suite_adequacy)")


def cmd_suite_reduce(args) -> None:
    report = run_suite_reduce(args.lake, args.source, args.k)
    print(f"{report['problems']} problems reduced (k={report['k']}); by source: {json.dumps(report['by_source'])}")
