# CF 925C: a permutation of b whose prefix xors strictly increase, or "No" (only when impossible).
from collections import Counter


def check(input, expected, actual):
    data = input.split()
    n = int(data[0])
    b = [int(t) for t in data[1:1 + n]]
    out = actual.split()
    verdict = _yes_no(expected, out, "Yes", "No")
    if verdict:
        return verdict
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
