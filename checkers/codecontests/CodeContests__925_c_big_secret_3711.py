# CF 925C: a permutation of b whose prefix xors strictly increase, or "No" (only when impossible).
import re
from collections import Counter

_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _int(t):
    if not _INT.match(t) or t == "-0":
        raise ValueError("bad integer %r" % t)
    return int(t)


def check(input, expected, actual):
    data = input.split()
    n = int(data[0])
    b = [int(t) for t in data[1:1 + n]]
    jury = expected.split()[0].upper()
    out = actual.split()
    if not out:
        return False, "empty output"
    verdict = out[0].upper()
    if verdict not in ("YES", "NO"):
        return False, "expected Yes/No"
    if verdict != jury:
        return False, "answer says %s, jury says %s" % (verdict, jury)
    if verdict == "NO":
        return len(out) == 1, "No"
    if len(out) != n + 1:
        return False, "expected %d numbers, got %d" % (n, len(out) - 1)
    p = [_int(t) for t in out[1:]]
    if Counter(p) != Counter(b):
        return False, "not a permutation of b"
    a = 0
    for v in p:
        nxt = a ^ v
        if nxt <= a:
            return False, "prefix xor not strictly increasing"
        a = nxt
    return True
