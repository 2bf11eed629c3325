"""Test synthesis beyond AceCoder: an LLM writes an input *generator* and an input *validator* per problem.

For a problem with ``stdio`` or ``call`` tests the model is asked for two programs:

* ``generate(size: int, seed: int)`` -> one test input: the whole stdin text (stdio) or the list of positional
  arguments (call); ``size`` scales the input, ``seed`` fixes its randomness;
* ``validate(inp) -> bool`` -> True only when ``inp`` (the stdin text, or the argument list) meets every
  constraint of the statement.

Both run in the sandbox only (a ``call`` job on ``generate`` / ``validate`` with no expected value: the verdict
carries the returned value), never in this process. The pipeline, per problem:

1. generator: sizes x seeds runs -> inputs of the right type (deduplicated, new to the problem);
2. validator: must accept every known dataset input it is shown (else it is not trusted and nothing is kept),
   then filters the generated inputs;
3. outputs: the problem's reference program (run in the sandbox) or, without a reference, *mutual
   verification*: at least ``min_agree`` distinct programs (origin sample/synth) that pass every existing test
   run the input, and a strict majority of them, at least ``min_agree``, must produce the same output;
4. hacking: the reference's surviving mutants (mutants that pass every test the reference passes) run the new
   tests with the reference's output as expected value; tests killing a mutant no earlier test kills are kept
   first, then the rest in generation order, up to ``max_tests``.

Everything here works on :class:`Target` rows and a :class:`~factory.sandbox.SandboxPool`; the lake side (problem
selection, LLM calls through ``silver.llm_calls``, the one commit) is :mod:`factory.stages.gentests`.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from factory.ingest.normalize import stable_hash
from factory.sandbox.rows import is_json
from factory.sandbox.serialize import clean_text, deserialize_value, serialize_value
from factory.sandbox.types import Job, TestSpec

if TYPE_CHECKING:   # the pool (and its process machinery) is the caller's: importing this module stays cheap
    from factory.sandbox import SandboxPool

NOT_A_KILL = ("pass", "infra_error")   # as `factory augment`: an infra error says nothing about the program
DEFAULT_SIZES = (1, 10, 100, 1000)
MAX_QUESTION_CHARS = 3000
KNOWN_INPUTS_CHECKED = 10              # dataset inputs the validator must accept

GENERATOR_SYSTEM = "You are an expert competitive programmer who writes test-data generators in Python."

_GEN_TEMPLATE = """Write a random test-input generator for the programming problem below.

Problem:
\"\"\"
{question}
\"\"\"
{signature}
Example test inputs ({input_desc}):
{examples}

Write a Python function `generate(size: int, seed: int)` that returns ONE new test input: {returns}
- `size` (1 to 1000) scales the input: lengths, counts and magnitudes grow with it.
- Take every random choice from `rng = random.Random(seed)`, so the same (size, seed) gives the same input.
- The input must respect every constraint of the problem.
- Use only the Python standard library; do not read input, print or touch files.

Reply with the code in one ```python block."""

_VAL_TEMPLATE = """Write an input validator for the programming problem below.

Problem:
\"\"\"
{question}
\"\"\"
{signature}
Example valid test inputs ({input_desc}):
{examples}

Write a Python function `validate(inp) -> bool`. `inp` is {param}. Return True only if `inp` satisfies every \
constraint and format rule of the problem (types, value ranges, lengths, number of lines and items), and False \
otherwise. It must never raise. Use only the Python standard library.

Reply with the code in one ```python block."""


@dataclass
class Target:
    """A problem the pipeline works on, with everything its sandbox runs need."""
    problem_id: str
    source: str
    source_id: str
    question: str
    kind: str                                   # call | stdio
    entry_point: str | None
    starter_code: str | None
    preamble: str
    comparison: str
    atol: float | None
    known: list = field(default_factory=list)   # dataset input texts (silver.tests.input), ordinal order
    existing: set = field(default_factory=set)  # canonical keys of every input the problem already has
    next_ordinal: int = 0
    ref_id: str | None = None
    ref_code: str | None = None
    voters: list = field(default_factory=list)  # (program_id, code): verified programs for mutual verification
    survivors: dict = field(default_factory=dict)  # surviving mutants of the reference: id -> code


@dataclass
class Outcome:
    """Per-problem yields of every stage (one silver.test_generators row) and the tests kept."""
    generator_status: str
    validator_status: str
    generator_code: str | None = None
    validator_code: str | None = None
    oracle: str = "none"                        # reference | mutual | none
    generator_runs: int = 0
    generator_ran: int = 0
    inputs_produced: int = 0
    known_checked: int = 0
    known_accepted: int = 0
    validator_accepted: int = 0
    outputs_agreed: int = 0
    tests_kept: int = 0
    surviving_mutants: int = 0
    mutants_killed: int = 0
    voters: int = 0
    kept: list = field(default_factory=list)    # dicts: input, expected, size, seed, kills, agreement
    details: list = field(default_factory=list)

    def note(self, text: str) -> None:
        if text and len(self.details) < 8:
            self.details.append(text[:400])


# -- prompts ---------------------------------------------------------------------------------------------
def _messages(t: Target, template: str, **fill) -> list[dict]:
    """The generator or validator request: the statement, the call signature and two dataset inputs."""
    if t.kind == "call":
        signature = f"The solution is a Python function `{t.entry_point}`; a test calls `{t.entry_point}(*args)`.\n"
        if t.starter_code and t.starter_code.strip():
            signature += f"Its signature:\n```python\n{t.starter_code.strip()}\n```\n"
        examples = "\n".join(f"args = {text}" for text in t.known[:2])
    else:
        signature = "The program reads the input from stdin.\n"
        examples = "\n".join(f"```\n{text.rstrip()}\n```" for text in t.known[:2])
    user = template.format(question=t.question.strip()[:MAX_QUESTION_CHARS], signature=signature,
                           input_desc="JSON lists of positional arguments" if t.kind == "call" else
                           "the whole stdin text", examples=examples or "(none)", **fill)
    return [{"role": "system", "content": GENERATOR_SYSTEM}, {"role": "user", "content": user}]


def build_generator_messages(t: Target) -> list[dict]:
    return _messages(t, _GEN_TEMPLATE, returns=(
        f"a list of the positional arguments for `{t.entry_point}` (JSON-compatible values: numbers, "
        "strings, booleans, None, lists, dicts)." if t.kind == "call"
        else "the complete stdin text as one string, lines separated by \"\\n\"."))


def build_validator_messages(t: Target) -> list[dict]:
    return _messages(t, _VAL_TEMPLATE, param=f"the list of positional arguments passed to `{t.entry_point}`"
                     if t.kind == "call" else "the complete stdin text (one string)")


# -- inputs ----------------------------------------------------------------------------------------------
def input_key(kind: str, text: str) -> str:
    """Canonical form of an input for de-duplication (stdio: whitespace-trimmed; call: re-serialized)."""
    if kind == "stdio":
        return text.strip()
    try:
        return serialize_value(list(deserialize_value(text)))
    except (TypeError, ValueError):
        return text


def input_value(kind: str, text: str):
    """What the validator receives for a stored input: the stdin text or the argument list."""
    if kind == "stdio":
        return text
    value = deserialize_value(text)
    return list(value) if isinstance(value, (list, tuple)) else value


def generated_input(kind: str, actual: str | None, max_chars: int) -> tuple[str | None, str]:
    """(input text, reason) from a generator's serialized return value; text None when unusable."""
    text = clean_text(actual) if actual is not None else None
    if text is None or not is_json(text):
        return None, "not_serializable"
    if '"$o"' in text:
        return None, "opaque_value"
    value = deserialize_value(text)
    if not isinstance(value, str if kind == "stdio" else (list, tuple)):
        return None, f"wrong_type:{type(value).__name__}"
    if kind == "stdio":
        if not value.strip():
            return None, "empty"
        out = value if value.endswith("\n") else value + "\n"
    else:
        out = serialize_value(list(value))
    return (None, "too_long") if len(out) > max_chars else (out, "ok")


def output_key(kind: str, comparison: str, text: str) -> str:
    """Outputs that the problem's comparison counts as equal share a key (mutual verification votes)."""
    if kind == "stdio" and comparison in ("token", "float"):
        return " ".join(text.split())
    if kind == "stdio" and comparison == "casefold":
        return " ".join(text.split()).casefold()
    return text


# -- sandbox pipeline ------------------------------------------------------------------------------------
def _error(v) -> str:
    return f"{v.status}: {v.error_type or ''} {(v.error_message or v.stderr or '').strip()[:200]}".strip()


def _spec(test_id: str, kind: str, text: str, expected: str | None, t: Target | None = None) -> TestSpec:
    return TestSpec(test_id=test_id, kind=kind, input=text, expected=expected,
                    comparison=t.comparison if t else "exact", atol=t.atol if t else None)


def _program_job(t: Target, program_id: str, code: str, specs: list[TestSpec]) -> Job:
    return Job(program_id=program_id, code=code, tests=specs, entry_point=t.entry_point if t.kind == "call" else None,
               preamble=t.preamble if t.kind == "call" else "")


def run_pipeline(pool: SandboxPool, work: list[tuple[Target, Outcome]], *, sizes=DEFAULT_SIZES, seeds: int = 3,
                 max_tests: int = 10, min_agree: int = 3, max_chars: int = 50_000) -> None:
    """Run generators, validators, oracles and surviving mutants for every (target, outcome) whose generator
    and validator were extracted; fills each outcome in place (yields, kept tests, details)."""
    for t, o in work:
        o.oracle = "reference" if t.ref_code is not None else "mutual" if len(t.voters) >= min_agree else "none"
        o.voters = len(t.voters) if t.ref_code is None else 0
        o.surviving_mutants = len(t.survivors)
    live = [(t, o) for t, o in work if o.generator_status == "ok" and o.validator_status == "ok"]
    runs = [(size, seed) for size in sizes for seed in range(seeds)]
    # 1. generators (sizes x seeds) and validators on the known dataset inputs
    jobs = []
    for t, o in live:
        o.generator_runs = len(runs)
        jobs.append(Job(program_id=f"{t.problem_id}:gen", code=o.generator_code, entry_point="generate",
                        tests=[_spec(f"g{i}", "call", serialize_value([size, seed]), None)
                               for i, (size, seed) in enumerate(runs)]))
        known = t.known[:KNOWN_INPUTS_CHECKED]
        o.known_checked = len(known)
        if known:
            jobs.append(Job(program_id=f"{t.problem_id}:val", code=o.validator_code, entry_point="validate",
                            tests=[_spec(f"k{i}", "call", serialize_value([input_value(t.kind, text)]), None)
                                   for i, text in enumerate(known)]))
    verdicts = {(v.program_id, v.test_id): v for v in pool.run(jobs) if v.test_id is not None}
    candidates: dict[str, list] = {}
    for t, o in live:
        seen, cands, reasons = set(t.existing), [], Counter()
        for i, (size, seed) in enumerate(runs):
            v = verdicts.get((f"{t.problem_id}:gen", f"g{i}"))
            if v is None or v.status != "no_expected":
                reasons[v.status if v else "no_verdict"] += 1
                if v is not None and reasons[v.status] == 1:
                    o.note(f"generate({size}, {seed}) {_error(v)}")
                continue
            text, why = generated_input(t.kind, v.actual, max_chars)
            if text is None:
                reasons[why] += 1
                continue
            o.generator_ran += 1
            key = input_key(t.kind, text)
            if key in seen:
                continue
            seen.add(key)
            cands.append({"input": text, "size": size, "seed": seed})
        if reasons:
            o.note("generator runs dropped: " + ", ".join(f"{k} {n}" for k, n in sorted(reasons.items())))
        o.inputs_produced = len(cands)
        accepted = [i for i in range(o.known_checked)
                    if _accepts(verdicts.get((f"{t.problem_id}:val", f"k{i}")))]
        o.known_accepted = len(accepted)
        if o.known_accepted < o.known_checked:
            bad = next(i for i in range(o.known_checked) if i not in accepted)
            v = verdicts.get((f"{t.problem_id}:val", f"k{bad}"))
            o.validator_status = "rejects_known_inputs"
            said = v.actual if v is not None and v.status == "no_expected" else _error(v) if v else "no verdict"
            o.note(f"validator rejects {o.known_checked - o.known_accepted} of {o.known_checked} dataset inputs, "
                   f"e.g. {t.known[bad][:80]!r} -> {said}")
            cands = []
        candidates[t.problem_id] = cands
    # 2. validators on the generated inputs
    jobs = [Job(program_id=f"{t.problem_id}:val", code=o.validator_code, entry_point="validate",
                tests=[_spec(f"c{i}", "call", serialize_value([input_value(t.kind, c["input"])]), None)
                       for i, c in enumerate(candidates[t.problem_id])])
            for t, o in live if candidates[t.problem_id]]
    verdicts = {(v.program_id, v.test_id): v for v in pool.run(jobs) if v.test_id is not None}
    for t, o in live:
        cands = candidates[t.problem_id]
        keep = [c for i, c in enumerate(cands) if _accepts(verdicts.get((f"{t.problem_id}:val", f"c{i}")))]
        if len(keep) < len(cands):
            o.note(f"validator rejected {len(cands) - len(keep)} of {len(cands)} generated inputs")
        o.validator_accepted = len(keep)
        candidates[t.problem_id] = keep
    # 3. outputs: the reference, else a majority of verified programs
    jobs = []
    for t, o in live:
        cands = candidates[t.problem_id]
        if o.oracle == "reference":
            programs = [(t.ref_id, t.ref_code)]
        elif o.oracle == "mutual":
            programs = t.voters
        else:
            if cands:
                o.note(f"no reference and {len(t.voters)} verified program(s) < {min_agree}: outputs not decided")
            continue
        if cands:
            specs = [_spec(f"c{i}", t.kind, c["input"], None) for i, c in enumerate(cands)]
            jobs += [_program_job(t, pid, code, specs) for pid, code in programs]
    verdicts = {(v.program_id, v.test_id): v for v in pool.run(jobs) if v.test_id is not None}
    for t, o in live:
        agreed = []
        for i, c in enumerate(candidates[t.problem_id] if o.oracle != "none" else []):
            if o.oracle == "reference":
                v = verdicts.get((t.ref_id, f"c{i}"))
                out = _output(t, v)
                if out is None:
                    o.note(f"reference fails on a generated input: {_error(v) if v else 'no verdict'}")
                    continue
                agreed.append(dict(c, expected=out, agreement="reference"))
                continue
            outs = [_output(t, verdicts.get((pid, f"c{i}"))) for pid, _ in t.voters]
            votes = Counter(output_key(t.kind, t.comparison, x) for x in outs if x is not None)
            if not votes:
                continue
            key, n = votes.most_common(1)[0]
            if n >= min_agree and 2 * n > len(t.voters):
                expected = next(x for x in outs if x is not None and output_key(t.kind, t.comparison, x) == key)
                agreed.append(dict(c, expected=expected, agreement=f"{n}/{len(t.voters)}"))
            else:
                top = [n for _, n in votes.most_common(3)]
                o.note(f"verified programs disagree: top votes {top} of {len(t.voters)}")
        candidates[t.problem_id] = agreed
    # 4. the reference again (its own output must pass: determinism) and the surviving mutants
    jobs = []
    for t, o in live:
        agreed = candidates[t.problem_id]
        if not agreed or o.oracle != "reference":
            continue
        specs = [_spec(f"c{i}", t.kind, c["input"], c["expected"], t) for i, c in enumerate(agreed)]
        jobs.append(_program_job(t, t.ref_id, t.ref_code, specs))
        jobs += [_program_job(t, mid, code, specs) for mid, code in sorted(t.survivors.items())]
    status = {(v.program_id, v.test_id): v.status for v in pool.run(jobs) if v.test_id is not None}
    for t, o in live:
        agreed = candidates[t.problem_id]
        if o.oracle == "reference":
            stable = [(i, c) for i, c in enumerate(agreed) if status.get((t.ref_id, f"c{i}")) == "pass"]
            if len(stable) < len(agreed):
                o.note(f"reference does not reproduce its output on {len(agreed) - len(stable)} input(s)")
            for i, c in stable:
                c["kills"] = sorted(m for m in t.survivors if status.get((m, f"c{i}"), "pass") not in NOT_A_KILL)
            agreed = [c for _, c in stable]
        else:
            for c in agreed:
                c["kills"] = []
        o.outputs_agreed = len(agreed)
        o.kept = _choose(agreed, max_tests)
        o.tests_kept = len(o.kept)
        o.mutants_killed = len({m for c in o.kept for m in c["kills"]})


def _accepts(v) -> bool:
    """A validator accepts only by returning exactly True (anything else, an error included, rejects)."""
    return v is not None and v.status == "no_expected" and clean_text(v.actual) == "true"


def _output(t: Target, v) -> str | None:
    """The program's output on an input with no expected value; None when it failed or gave no usable value."""
    if v is None or v.status != "no_expected" or v.actual is None:
        return None
    out = clean_text(v.actual)
    if t.kind == "stdio":
        return out if v.exit_code in (0, None) else None
    return out if is_json(out) and '"$o"' not in out else None


def _choose(agreed: list[dict], max_tests: int) -> list[dict]:
    """Hacking inputs first: in generation order, each test killing a mutant no chosen test kills yet; then the
    other tests in generation order, up to max_tests."""
    chosen, covered = [], set()
    for c in agreed:
        if len(chosen) < max_tests and set(c["kills"]) - covered:
            chosen.append(c)
            covered |= set(c["kills"])
    return chosen + [c for c in agreed if c not in chosen][:max(0, max_tests - len(chosen))]


def generated_test_id(problem_id: str, kind: str, text: str) -> str:
    """Stable id of a generated test: the same input of the same problem always gets the same id."""
    return stable_hash(problem_id, "gentests", kind, text)
