"""Problems whose answer may come in any order, or that accept several answers (pure functions).

Detection reads the statement: a sentence about the returned answer that says "in any order" gets an
order-insensitive comparison (the checker program ``checkers/_generic/any_order.py``); "return any of them", "any
valid answer", "if there are multiple answers, return any" mean several answers are right, which no comparison
with one expected value can judge, so such problems get no generated test.

A detected phrase is only a claim. :func:`relaxation` accepts it on the reference's own answers:

* the answers are lists (a scalar answer has no order to relax: the phrase is about something else);
* the answers do not rearrange a list argument (sort-by-parity, "return any array that..."): there the order
  *is* the answer, and a multiset comparison would accept the input itself; a filter whose answer is sometimes
  the whole argument (invalid-transactions, critical-connections) shows it by the answers that are a proper part;
* the inner order is ignored too (``DEPTH = 2``) only where the inner lists are numbers, every inner list of
  every answer is sorted, sorting them merges no two answers (3sum's triplets yes; permutations no), and they
  are groups: of varying length or named so ("triplets", "combinations", "subsets", "solution set"), not
  records such as points ``[x, y]``;
* an answer that is always a pair of lists is a record (find-the-difference-of-two-arrays: ``[only in nums1,
  only in nums2]``): its positions mean something; where the lists vary in length they are sets and only the
  order inside them is ignored (``INNER``), else the comparison stays exact.

The stage then feeds a permuted reference answer back through the judge (it must pass) and a wrong one (an
element dropped or duplicated: it must fail) before it attaches the comparison.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_ANY_ORDER = re.compile(
    r"(?:return|output|answer|result|list|print|array|values|indices|triplets|pairs|solutions?|combinations)"
    r"[^.\n]{0,160}?\bin\s+any\s+order\b|\bin\s+any\s+order\b[^.\n]{0,40}?\b(?:return|answer)"
    r"|\b(?:return|answer)\b[^.\n]{0,40}?\bin\s+any\s+arbitrary\s+order\b|[^.\n]*\b(?:return|output|answer|result)[^.\n]*\border\b[^.\n]*\b(?:does\s+not|doesn't|"
    r"do\s+not)\s+matter|[^.\n]*\border\b[^.\n]*\b(?:return|output|answer|result)[^.\n]*\b(?:does\s+not|doesn't|"
    r"do\s+not)\s+matter", re.IGNORECASE)
_NOT_ORDER_FREE = re.compile(r"\b(?:sorted|ascending|descending|lexicographical(?:ly)?|increasing|decreasing)\s+"
                             r"order\b[^.\n]{0,60}$|^[^.\n]{0,60}\bsorted\b", re.IGNORECASE)
_SEVERAL = re.compile(
    r"return\s+any\s+(?:one\s+)?(?:of\s+them|of\s+(?:the|these|those)\b|valid|such|possible|answer|solution|one\b)"
    r"|any\s+(?:of\s+them|valid\s+(?:answer|solution|result|order))|(?:multiple|several|many|more\s+than\s+one)\s+"
    r"(?:valid\s+|possible\s+|correct\s+)?(?:answers|solutions|results|outputs|orders|ways)[^.\n]{0,80}?"
    r"\b(?:return|output|print)\s+any|(?:any|either)\s+(?:one\s+)?(?:of\s+them|answer)\s+(?:is|will\s+be)\s+accepted"
    r"|(?:may|can)\s+return\s+any\b", re.IGNORECASE)


def _text(question: str | None) -> str:
    return (question or "").replace("\xa0", " ")


def phrase(m: re.Match | None) -> str | None:
    """A matched phrase as quoted back: whitespace collapsed, at most 200 characters (None: no match)."""
    return " ".join(m.group(0).split())[:200] if m else None


_SOLUTION_SET = re.compile(r"\bthe\s+solution\s+set\s+must\s+not\s+contain\s+duplicate\s+\w+", re.IGNORECASE)
_UNIQUE = re.compile(r"exactly\s+one\s+(?:valid\s+)?(?:solution|answer)|only\s+one\s+valid\s+answer|"
                     r"unique\s+(?:solution|answer)", re.IGNORECASE)


def any_order_phrase(question: str | None) -> str | None:
    """The statement's sentence saying the answer may come in any order, or that it is a *set* of solutions
    (3sum: "the solution set must not contain duplicate triplets"); None: no such sentence."""
    for m in _ANY_ORDER.finditer(_text(question)):
        if not _NOT_ORDER_FREE.search(m.group(0)):
            return phrase(m)
    return phrase(_SOLUTION_SET.search(_text(question)))


def unique_answer_phrase(question: str | None) -> str | None:
    """The statement's guarantee that each input has exactly one answer (two-sum), or None."""
    return phrase(_UNIQUE.search(_text(question)))


def index_answer(answer, args: list) -> int | None:
    """The position of the list argument whose indices ``answer`` (a list of ints) names, or None."""
    if not (isinstance(answer, list) and answer and all(isinstance(x, int) and not isinstance(x, bool)
                                                        for x in answer)):
        return None
    lists = [i for i, a in enumerate(args) if isinstance(a, list) and a]
    if len(lists) != 1:
        return None
    n = len(args[lists[0]])
    return lists[0] if all(0 <= x < n for x in answer) else None


def several_answers_phrase(question: str | None) -> str | None:
    """The statement's words saying several answers are accepted (None: none)."""
    return phrase(_SEVERAL.search(_text(question)))


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _is_rearrangement(answer: list, args: list) -> bool:
    """Whether ``answer`` holds exactly the elements of one of the list arguments (or of the string argument's
    characters): its order then is what the problem asks for."""
    mine = sorted(map(_key, answer))
    return any(isinstance(a, (list, str)) and len(a) == len(answer) and sorted(map(_key, list(a))) == mine
               for a in args)


def _is_selection(answer: list, args: list) -> bool:
    """Whether ``answer`` is a proper part of a list argument's elements (a filter: the others were dropped)."""
    from collections import Counter
    mine = Counter(map(_key, answer))
    return any(isinstance(a, list) and len(answer) < len(a) and not mine - Counter(map(_key, a)) for a in args)


_GROUPS = re.compile(r"\b(?:triplets?|quadruplets?|combinations?|subsets?|solution\s+set)\b", re.IGNORECASE)


INNER = 3      # depth: only the order inside each element is free (a fixed record of unordered lists)


def relaxation(answers: list[tuple[list, Any]], question: str | None = None) -> tuple[int, str]:
    """(depth, why) for the reference's (arguments, answer) pairs: depth 0 = keep the exact comparison, 1 = the
    top-level order is free, 2 = the order inside each element too, ``INNER`` = only inside each element."""
    lists = [(args, a) for args, a in answers if isinstance(a, list)]
    if not lists or len(lists) < len(answers):
        return 0, "the answer is not always a list"
    if not any(len(a) >= 2 for _, a in lists):
        return 0, "no answer has two elements to reorder"
    if len(lists) >= 3 and {len(a) for _, a in lists} == {2} \
            and all(isinstance(x, list) for _, a in lists for x in a):
        if len({len(x) for _, a in lists for x in a}) > 1 and any(len(x) >= 2 for _, a in lists for x in a):
            return INNER, "every answer is a pair of lists: its positions mean something, the lists' order not"
        return 0, "every answer is a pair of lists: its positions mean something"
    long = [(args, a) for args, a in lists if len(a) >= 2]
    if 2 * sum(_is_rearrangement(a, args) for args, a in long) >= len(long) \
            and not any(_is_selection(a, args) for args, a in lists):
        return 0, "the answers rearrange an argument: their order is the answer"
    inner = [x for _, a in lists for x in a]
    numeric = all(isinstance(x, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in x)
                  for x in inner)
    groups = numeric and (len({len(x) for x in inner}) > 1 or bool(_GROUPS.search(question or "")))
    if inner and numeric and groups and any(len(x) >= 2 for x in inner):
        try:
            all_sorted = all(all(p <= q for p, q in zip(x, x[1:])) for x in inner)
        except TypeError:
            all_sorted = False
        merges = any(len({_key(sorted(x, key=_key)) for x in a}) < len({_key(x) for x in a}) for _, a in lists)
        if all_sorted and not merges:
            return 2, "elements and their inner lists are unordered (inner lists sorted, none merge)"
    return 1, "the elements are unordered"


def permuted(answer: list, depth: int) -> list:
    """The answer with its order changed (reversed; inner lists reversed too at depth 2, only they at
    ``INNER``), for the feed-back check: the relaxed judge must accept it."""
    out = list(reversed(answer)) if depth != INNER else list(answer)
    if len(out) >= 2 and out == answer and depth != INNER:      # a palindrome: rotate instead
        out = answer[1:] + answer[:1]
    if depth >= 2:
        out = [list(reversed(x)) if isinstance(x, list) else x for x in out]
    return out


def wrong(answer: list) -> list:
    """A wrong answer of the same shape: the last element dropped (or an element repeated when there is one)."""
    return answer[:-1] if len(answer) >= 2 else answer + answer


def checker_source(depth: int) -> str:
    """The any-order checker program for ``depth`` (``checkers/_generic/any_order.py``)."""
    from factory.assets import path
    code = Path(path("checkers", "_generic", "any_order.py")).read_text(encoding="utf-8")
    if depth == INNER:
        code = code.replace("\nOUTER = True\n", "\nOUTER = False\n")
    return code.replace("\nDEPTH = 1\n", f"\nDEPTH = {min(depth, 2)}\n") if depth != 1 else code
