"""How each problem is judged: its checker (``silver.checkers``) and its calibrated time limit
(``silver.time_limits``), applied to sandbox jobs by `factory execute`.

A verdict's ``limits_hash`` identifies everything that decided it: the sandbox limits (with the problem's own CPU
limit when calibrated) and, where the problem has one, its checker. Changing either makes old verdicts stale
(they stay in the lake; `gold.latest_executions` reads the newest) and the next `factory execute` re-runs them.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from factory.sandbox import Limits, TestSpec
from factory.testgen.any_order import phrase

# "absolute or relative error does not exceed 10^{-6}", "10 - 6" (CodeContests' rendering of 10⁻⁶), "1e-6",
# "relative or absolute error ... 10^-9", "absolute or relative inaccuracy", "differs from the correct one by at
# most 10 - 9"
_EXPONENT = r"10\s*(?:\^\s*\{?\s*\(?\s*-\s*(\d+)\s*\)?\s*\}?|-\s*(\d+)|\s+-\s*(\d+))|1e-(\d+)"
_TOLERANCE = re.compile(
    r"(?:(?:absolute|relative)(?:\s+or\s+(?:absolute|relative))?\s+(?:measure\s+of\s+the\s+)?(?:error|inaccuracy)"
    r"|differs?\s+from\s+the\s+(?:correct|right|jury'?s?)\s+(?:one|answer)\s+by)"
    r"[^.\n]{0,80}?(?:" + _EXPONENT + r")", re.IGNORECASE)
_DIGITS = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+(?:digits|decimal\s+places|"
                     r"signs)\s+after\s+the\s+(?:decimal\s+)?point", re.IGNORECASE)
_WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
_ANY_CASE = re.compile(r"in\s+any\s+(?:letter\s+)?case|(?:each|every)\s+letter\s+in\s+any|case[- ]insensitive|"
                       r"any\s+case\s+\(upper\s+or\s+lower\)", re.IGNORECASE)
_YES_NO = {"yes", "no"}


@dataclass(frozen=True)
class Rule:
    """A built-in judging rule found for a problem."""
    policy: str
    atol: float | None
    rtol: float | None
    origin: str
    detail: str


def detect_rule(question: str, expected_outputs: list[str | None]) -> Rule | None:
    """The rule a stdin/stdout problem states for its outputs, if it states one we can apply without a checker:
    a numeric tolerance ("absolute or relative error ... 10^-k", "k digits after the point") or case-insensitive
    answers ("in any case", or every expected output is only YES/NO tokens, which Codeforces compares
    case-insensitively)."""
    if (m := _TOLERANCE.search(question or "")) and 0 < (k := int(next(g for g in m.groups() if g))) <= 15:
        return Rule("float", 10.0 ** -k, 10.0 ** -k, "statement", phrase(m))
    if m := _DIGITS.search(question or ""):
        word = m.group(1).lower()
        k = _WORDS.get(word) if word in _WORDS else int(word)
        if 0 < k <= 15:   # printed to k digits: equal up to the last printed digit
            return Rule("float", 10.0 ** -k, 0.0, "statement", phrase(m))
    if m := _ANY_CASE.search(question or ""):
        return Rule("casefold", None, None, "statement", phrase(m))
    outs = [o for o in expected_outputs if o is not None]
    if outs and all(o.split() and {t.casefold() for t in o.split()} <= _YES_NO for o in outs):
        return Rule("casefold", None, None, "answers", "every expected output is YES/NO tokens")
    return None


def checker_hash(policy: str, atol: float | None, rtol: float | None, code: str | None) -> str:
    return hashlib.sha256(json.dumps([policy, atol, rtol, code], sort_keys=True).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class ProblemJudging:
    """The judging overrides of one problem (None: the tests' own comparison / the run's CPU limit)."""
    policy: str | None = None
    atol: float | None = None
    rtol: float | None = None
    code: str | None = None
    checker_hash: str | None = None
    cpu_s: float | None = None

    def limits_hash(self, limits: Limits) -> str:
        """The verdict key of this problem's tests under ``limits``."""
        base = (limits if self.cpu_s is None else Limits(**{**limits.as_dict(), "cpu_s": self.cpu_s})).hash()
        return base if self.checker_hash is None else f"{base}-{self.checker_hash}"

    def apply(self, spec: TestSpec) -> TestSpec:
        """The test as this problem's rule judges it (only stdio and call tests have outputs to compare)."""
        if self.policy is None or spec.kind not in ("stdio", "call"):
            return spec
        if self.policy == "program":
            spec.checker = self.code
        elif spec.kind == "stdio":
            spec.comparison, spec.atol, spec.rtol = self.policy, self.atol, self.rtol
        elif self.policy == "float":
            spec.atol, spec.rtol = self.atol, self.rtol
        return spec


NO_OVERRIDE = ProblemJudging()


def _rows_if_table(con, sql: str) -> list[tuple]:
    """Rows of ``sql``, or none when its table is missing (a lake made before the table was declared; cheaper
    than listing the tables). Only outside a transaction (a failed statement aborts it): inside one, use
    :func:`factory.lake.query.table_exists`."""
    import duckdb

    try:
        return con.execute(sql).fetchall()
    except duckdb.CatalogException:
        return []


def load_judging(con, time_limits: bool = True) -> dict[str, ProblemJudging]:
    """problem_id -> its overrides, for problems that have a checker or (``time_limits``) a calibrated limit.
    A lake made before these tables existed simply has none."""
    checkers = {r[0]: r[1:] for r in _rows_if_table(
        con, "SELECT problem_id, policy, atol, rtol, code, checker_hash FROM silver.checkers")}
    limits = dict(_rows_if_table(con, "SELECT problem_id, cpu_s FROM silver.time_limits WHERE cpu_s IS NOT NULL")
                  if time_limits else [])
    return {pid: ProblemJudging(*checkers.get(pid, (None,) * 5), limits.get(pid))
            for pid in checkers.keys() | limits.keys()}


def key_lists(judging: dict[str, ProblemJudging], limits: Limits) -> tuple[list[str], list[str]]:
    """(problem ids, limits hashes) of the problems whose verdict key differs from ``limits.hash()``, as two
    parallel lists for SQL (``unnest`` them side by side)."""
    default = limits.hash()
    pairs = [(pid, h) for pid, j in sorted(judging.items()) if (h := j.limits_hash(limits)) != default]
    return [p for p, _ in pairs], [h for _, h in pairs]

# the (problem_id, limits_hash) pairs of key_lists() as a relation: bind the two lists, in that order
KEYS_SQL = "SELECT unnest(?::VARCHAR[]) AS problem_id, unnest(?::VARCHAR[]) AS limits_hash"
