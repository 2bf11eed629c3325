"""`factory gentests` end to end: the real CLI (a subprocess) talks HTTP to a real OpenAI-compatible server on
127.0.0.1 that answers rule-based generator/validator programs for real MBPP+ and CodeContests problems; the
programs run in the real sandbox against a real lake.

Problems and what the server answers:
* Mbpp/3 (is_not_prime, call): a correct generator whose seed-0 inputs break the constraint (n <= 0) and a
  validator that rejects them;
* Mbpp/4 (heap_queue_largest, call): a generator that crashes (ZeroDivisionError);
* Mbpp/2 (similar_elements, call): a generator that writes a file outside the sandbox before returning;
* CodeContests kth divisor (stdio, reference): correct generator + validator;
* CodeContests lcm, ingested without a reference (stdio): outputs by mutual verification of 3 correct
  samples (a fourth, wrong sample fails the dataset tests and gets no vote);
* Mbpp/6 (differ_At_One_Bit_Pos, call): a generator whose seed-0 inputs (a == b) kill the mutant `x > 0` ->
  `x >= 0` that survives the dataset's base tests (a hacking input);
* Mbpp/7 (call): a reply with no code at all.
"""
from __future__ import annotations

import gzip
import json
import textwrap

import pytest

from factory.stages.execute import add_samples, execute
from factory.stages.ingest import ingest_source
from factory.stages.mutate import run_mutate
from factory.sandbox import Limits, deserialize_value
from tests.generation.conftest import FakeOpenAIServer
from tests.lakeutil import factory_cli, init_lake, snapshot_id
from tests.lakeutil import query as q

LIMITS = Limits(cpu_s=0.5, wall_min_s=3.0)
MBPP = ["Mbpp/2", "Mbpp/3", "Mbpp/4", "Mbpp/6", "Mbpp/7"]
KTH = "CodeContests/762_a_kth_divisor_5057"
LCM = "CodeContests/1068_b_lcm_2510"

GEN_PRIME = """
import random

def generate(size, seed):
    rng = random.Random(seed)
    if seed == 0:
        return [-size]                      # out of the problem's domain: the validator must refuse it
    if seed == 1:
        return [rng.choice([4, 9, 25, 49, 121, 169]) * size]
    return [(size + 2) ** 2]
"""
VAL_PRIME = """
def validate(inp):
    return isinstance(inp, list) and len(inp) == 1 and type(inp[0]) is int and 1 <= inp[0] <= 10 ** 9
"""
GEN_CRASH = "def generate(size, seed):\n    return [[1, 2, 3], size // 0]\n"
VAL_ANY = "def validate(inp):\n    return isinstance(inp, list)\n"
GEN_ESCAPE = """
import os

def generate(size, seed):
    os.makedirs({outside!r}, exist_ok=True)
    with open(os.path.join({outside!r}, "escaped.txt"), "a") as fh:
        fh.write("generator code ran here\\n")
    return [[size, seed, 3], [seed, 7, size + 1]]
"""
GEN_BITS = """
import random

def generate(size, seed):
    rng = random.Random(seed)
    if seed == 0:
        return [size, size]
    a = rng.randint(0, 8 * size)
    return [a, a ^ (1 << rng.randint(0, 3))]
"""
VAL_BITS = """
def validate(inp):
    return isinstance(inp, list) and len(inp) == 2 and all(type(x) is int and x >= 0 for x in inp)
"""
GEN_KTH = """
import random

def generate(size, seed):
    rng = random.Random(seed)
    n = rng.randint(1, 12 * size * size)
    k = rng.randint(1, 8)
    return f"{n} {k}\\n"
"""
VAL_KTH = """
def validate(inp):
    lines = inp.strip().split("\\n")
    if len(lines) != 1:
        return False
    parts = lines[0].split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return False
    n, k = map(int, parts)
    return 1 <= n <= 10 ** 15 and 1 <= k <= 10 ** 9
"""
GEN_LCM = """
import random

def generate(size, seed):
    rng = random.Random(seed)
    return str(rng.randint(1, 50 * size)) + "\\n"
"""
VAL_LCM = """
def validate(inp):
    s = inp.strip()
    return s.isdigit() and 1 <= int(s) <= 10 ** 10
"""
# samples for the reference-less LCM problem: the answer is the number of divisors of b
LCM_SAMPLES = [
    "b = int(input())\nprint(sum(1 for d in range(1, int(b ** 0.5) + 1) if b % d == 0 for _ in {d, b // d}))\n",
    "b = int(input())\nc = 0\nd = 1\nwhile d * d <= b:\n    if b % d == 0:\n        c += 1 if d * d == b else 2\n"
    "    d += 1\nprint(c)\n",
    "import sys\nb = int(sys.stdin.read())\nn, cnt, p = b, 1, 2\nwhile p * p <= n:\n    e = 0\n"
    "    while n % p == 0:\n        n //= p\n        e += 1\n    cnt *= e + 1\n    p += 1\nif n > 1:\n"
    "    cnt *= 2\nprint(cnt)\n",
    "b = int(input())\nprint(b)\n",                      # wrong: fails the dataset tests, gets no vote
]


def _fence(code: str) -> str:
    return f"Here is the code:\n```python\n{textwrap.dedent(code).strip()}\n```\n"


def _reply(outside):
    def reply(body, index):
        user = body["messages"][-1]["content"]
        gen = "test-input generator" in user
        if "non-prime" in user:
            return _fence(GEN_PRIME if gen else VAL_PRIME)
        if "n largest integers" in user:
            return _fence(GEN_CRASH if gen else VAL_ANY)
        if "shared elements" in user:
            return _fence(GEN_ESCAPE.format(outside=str(outside)) if gen else VAL_ANY)
        if "differ at one bit position" in user:
            return _fence(GEN_BITS if gen else VAL_BITS)
        if "k-th smallest divisor" in user:
            return _fence(GEN_KTH if gen else VAL_KTH)
        if "Ivan has number b" in user:
            return _fence(GEN_LCM if gen else VAL_LCM)
        return "I am not sure how to write this."
    return reply


def _mbpp_base(src, dst):
    rows = [json.loads(line) for line in gzip.open(src, "rt")]
    rows = [dict(r, plus_input=[]) for r in rows if r["task_id"] in MBPP]
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


def _yields(lake) -> dict:
    cols = ["generator_status", "validator_status", "oracle", "generator_runs", "generator_ran", "inputs_produced",
            "known_checked", "known_accepted", "validator_accepted", "outputs_agreed", "tests_kept",
            "surviving_mutants", "mutants_killed", "voters", "kept_tests", "detail"]
    rows = q(lake, f"SELECT pb.source_id, {', '.join('g.' + c for c in cols)} FROM silver.test_generators g "
                   "JOIN silver.problems pb USING (problem_id)")
    return {r[0]: dict(zip(cols, r[1:])) for r in rows}


@pytest.fixture(scope="module")
def run(tmp_path_factory, shared_data):
    tmp = tmp_path_factory.mktemp("gentests")
    lake = init_lake(tmp / "lake")
    ingest_source("mbppplus", [_mbpp_base(shared_data / "mbppplus" / "MbppPlus.jsonl.gz", tmp / "mbpp.jsonl")],
                  lake=lake, source="mbpp-base")
    cc = {json.loads(x)["task_id"]: json.loads(x)
          for x in (shared_data / "codecontests_subset300" / "codecontests_subset300.jsonl").open()}
    (tmp / "cc.jsonl").write_text(json.dumps(cc[KTH]) + "\n")
    ingest_source("codecontests", [tmp / "cc.jsonl"], lake=lake)
    (tmp / "noref.jsonl").write_text(json.dumps(cc[LCM]) + "\n")      # the same record, its reference dropped
    ingest_source("jsonl", [tmp / "noref.jsonl"], lake=lake, source="cc-noref", test_format="stdio",
                  mapping={"question": "description", "tests": "tests", "id": "task_id"})
    (tmp / "samples.jsonl").write_text("".join(json.dumps({"task_id": LCM, "solution": s}) + "\n"
                                               for s in LCM_SAMPLES))
    add_samples(lake, tmp / "samples.jsonl", "handwritten", source="cc-noref")
    execute(lake, selection="reference", limits=LIMITS)
    run_mutate(lake, max_per_program=10)
    execute(lake, selection="all", limits=LIMITS)
    outside = tmp / "outside"
    with FakeOpenAIServer() as srv:
        srv.reply = _reply(outside)
        args = ("gentests", "--backend", "openai", "--base-url", srv.base_url, "--model", "fake-model",
                "--limit", "20", "--sizes", "1,5,20", "--seeds", "3", "--max-tests", "4", "--cpu-s", "1")
        first = factory_cli(*args, lake=lake)
        assert first.returncode == 0, first.stderr
        before = snapshot_id(lake), q(lake, "SELECT count(*) FROM silver.tests")[0][0]
        second = factory_cli(*args, lake=lake)
        assert second.returncode == 0, second.stderr
        after = snapshot_id(lake), q(lake, "SELECT count(*) FROM silver.tests")[0][0]
        bodies = list(srv.bodies)
    return {"lake": lake, "first": json.loads(first.stdout), "second": json.loads(second.stdout),
            "before_rerun": before, "after_rerun": after, "bodies": bodies, "outside": outside, "cc": cc}


def test_prompts_carry_statement_and_known_inputs(run):
    prompts = [b["messages"][-1]["content"] for b in run["bodies"]]
    assert len(prompts) == 2 * 7                            # generator + validator per problem, asked once
    kth = [p for p in prompts if "k-th smallest divisor" in p]
    assert len(kth) == 2 and any("test-input generator" in p for p in kth) and any("validator" in p for p in kth)
    assert all("```\n12 5\n```" in p for p in kth)         # the first dataset input, shown as stdin
    prime = [p for p in prompts if "non-prime" in p]
    assert all("args = [1]" in p and "is_not_prime(*args)" in p for p in prime)


def test_yields_reflect_good_and_broken_generators(run):
    y = _yields(run["lake"])
    assert set(y) == {*MBPP, KTH, LCM}
    # a correct generator / validator pair with a reference: tests kept, surviving mutants killed
    p = y["Mbpp/3"]
    assert (p["generator_status"], p["validator_status"], p["oracle"]) == ("ok", "ok", "reference")
    assert p["generator_runs"] == 9 and p["generator_ran"] == 9
    assert p["known_checked"] == p["known_accepted"] >= 3          # the base inputs
    assert p["validator_accepted"] == p["inputs_produced"] - 3       # the three n <= 0 inputs
    assert p["outputs_agreed"] == p["validator_accepted"] and 1 <= p["tests_kept"] <= 4
    assert p["surviving_mutants"] == 0                              # the base inputs kill every mutant
    # a hacking input: the one mutant surviving Mbpp/6's base tests is killed, and that test comes first
    h = y["Mbpp/6"]
    assert (h["oracle"], h["surviving_mutants"], h["mutants_killed"], h["tests_kept"]) == ("reference", 1, 1, 4)
    kept = json.loads(h["kept_tests"])
    assert kept[0]["kills"] == 1 and (kept[0]["seed"], kept[0]["size"]) == (0, 1)
    assert all(c["kills"] == int(c["seed"] == 0) for c in kept)     # only the a == b inputs kill it
    k = y[KTH]
    assert (k["generator_status"], k["validator_status"], k["oracle"]) == ("ok", "ok", "reference")
    assert k["known_checked"] == k["known_accepted"] == 10 and k["tests_kept"] == 4
    # broken: the generator crashes on every run -> nothing downstream
    b = y["Mbpp/4"]
    assert b["generator_status"] == "ok" and b["generator_ran"] == 0 and b["inputs_produced"] == 0
    assert b["tests_kept"] == 0 and "ZeroDivisionError" in b["detail"]
    # no code in the reply: extraction fails, nothing runs
    n = y["Mbpp/7"]
    assert (n["generator_status"], n["validator_status"]) == ("no_code", "no_code")
    assert n["generator_runs"] == 0 and n["tests_kept"] == 0
    # the run's own report adds the same per-stage yields up
    totals = run["first"]["yields"]
    assert totals["tests_kept"] == sum(r["tests_kept"] for r in y.values())
    assert totals["generator_extracted"] == 6 and totals["validator_extracted"] == 6
    assert totals["validator_accepted"] == sum(r["validator_accepted"] for r in y.values())


def test_validator_rejects_out_of_constraint_inputs(run):
    rows = q(run["lake"], """SELECT t.input, t.expected FROM silver.tests t JOIN silver.problems pb USING (problem_id)
                             WHERE pb.source_id = 'Mbpp/3' AND t.origin = 'gentests'""")
    assert rows
    for text, expected in rows:
        (n,) = deserialize_value(text)
        assert n >= 1                                       # no n <= 0 input was kept
        is_prime = n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))
        assert deserialize_value(expected) is (not is_prime)


def test_generator_code_never_runs_in_this_process(run):
    y = _yields(run["lake"])["Mbpp/2"]
    assert y["generator_ran"] == 9                          # it ran - in the sandbox's private /tmp
    assert not run["outside"].exists()


def test_mutual_verification_without_reference(run):
    y = _yields(run["lake"])[LCM]
    assert (y["oracle"], y["voters"]) == ("mutual", 3)
    assert y["tests_kept"] >= 1 and y["surviving_mutants"] == 0
    kept = json.loads(y["kept_tests"])
    assert {c["agreement"] for c in kept} == {"3/3"}
    rows = q(run["lake"], """SELECT t.input, t.expected FROM silver.tests t JOIN silver.problems pb USING (problem_id)
                             WHERE pb.source = 'cc-noref' AND t.origin = 'gentests'""")
    assert len(rows) == y["tests_kept"]
    for text, expected in rows:
        b = int(text)
        assert int(expected) == sum(1 for d in range(1, b + 1) if b % d == 0)


def test_new_tests_are_stable_and_pass_the_reference(run):
    lake = run["lake"]
    rows = q(lake, "SELECT test_id, kind, subset, ordinal FROM silver.tests WHERE origin = 'gentests'")
    assert len(rows) == run["first"]["yields"]["tests_kept"] > 0
    assert {r[2] for r in rows} == {"generated"}
    assert q(lake, "SELECT count(*) FROM (SELECT problem_id, ordinal FROM silver.tests GROUP BY ALL "
                   "HAVING count(*) > 1)") == [(0,)]
    execute(lake, selection="all", limits=LIMITS)
    verdicts = q(lake, """
        SELECT p.origin, e.status, t.test_id, p.program_id FROM silver.tests t
        JOIN gold.latest_executions e USING (test_id) JOIN silver.programs p USING (program_id)
        WHERE t.origin = 'gentests'""")
    assert {s for o, s, _, _ in verdicts if o == "reference"} == {"pass"}
    # every kill recorded for a kept test is a failing verdict of that mutant on that test
    failing = {(t, p) for o, s, t, p in verdicts if o == "mutant" and s != "pass"}
    kept = [c for (k,) in q(lake, "SELECT kept_tests FROM silver.test_generators") for c in json.loads(k)]
    claimed = {(c["test_id"], m) for c in kept for m in c["killed"]}
    assert claimed and claimed <= failing
    assert all(c["kills"] == len(c["killed"]) for c in kept)


def test_rerun_is_a_noop(run):
    second = run["second"]
    assert second["new_calls"] == 0 and second["processed"] == 0 and second["skipped_done"] == 7
    assert second["run_id"] is None
    assert run["after_rerun"] == run["before_rerun"]          # no snapshot, no new test
    assert q(run["lake"], "SELECT count(*) FROM silver.test_generators") == [(7,)]


def test_mutual_verification_needs_a_large_enough_majority():
    """Outputs without a reference: a strict majority of at least min_agree verified programs, else dropped."""
    from factory.testgen.generators import Outcome, Target, run_pipeline
    from factory.sandbox import SandboxPool

    voters = [("a", "print(int(input()) * 2)\n"), ("b", "x = int(input())\nprint(x + x)\n"),
              ("c", "print(int(input()) + 2)\n")]                   # a and b agree, c does not
    gen = "def generate(size, seed):\n    return f'{size + 10}\\n'\n"
    val = "def validate(inp):\n    return inp.strip().isdigit()\n"

    def outcome(min_agree):
        t = Target("p1", "s", "x", "Print twice the number.", "stdio", None, None, "", "token", None,
                   known=["3\n"], existing={"3"}, voters=voters)
        o = Outcome("ok", "ok", generator_code=gen, validator_code=val)
        with SandboxPool(Limits(cpu_s=1.0), 1) as pool:
            run_pipeline(pool, [(t, o)], sizes=(1, 2), seeds=1, min_agree=min_agree)
        return o

    strict = outcome(3)
    assert (strict.oracle, strict.voters, strict.validator_accepted) == ("mutual", 3, 2)
    assert strict.outputs_agreed == 0 and strict.tests_kept == 0 and "disagree" in " ".join(strict.details)
    loose = outcome(2)
    assert loose.tests_kept == 2
    assert [(c["input"], c["expected"], c["agreement"]) for c in loose.kept] == [("11\n", "22\n", "2/3"),
                                                                              ("12\n", "24\n", "2/3")]
