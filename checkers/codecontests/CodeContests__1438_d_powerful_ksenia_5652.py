# CF 1438D: at most n xor-triple operations that make all elements equal, or NO.
import re

_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _int(t):
    if not _INT.match(t) or t == "-0":
        raise ValueError("bad integer %r" % t)
    return int(t)


def check(input, expected, actual):
    data = input.split()
    n = int(data[0])
    a = [int(t) for t in data[1:1 + n]]
    jury = expected.split()[0].upper()
    out = actual.split()
    if not out:
        return False, "empty output"
    verdict = out[0].upper()
    if verdict not in ("YES", "NO"):
        return False, "expected YES/NO"
    if verdict != jury:
        return False, "answer says %s, jury says %s" % (verdict, jury)
    if verdict == "NO":
        return len(out) == 1, "NO"
    if len(out) < 2:
        return False, "missing m"
    m = _int(out[1])
    if m < 0 or m > n:
        return False, "m out of [0, n]"
    if len(out) != 2 + 3 * m:
        return False, "expected %d operations" % m
    ops = [_int(t) for t in out[2:]]
    for q in range(m):
        i, j, k = ops[3 * q], ops[3 * q + 1], ops[3 * q + 2]
        if not (1 <= i <= n and 1 <= j <= n and 1 <= k <= n) or i == j or j == k or i == k:
            return False, "operation %d: indices not distinct in [1, n]" % (q + 1)
        v = a[i - 1] ^ a[j - 1] ^ a[k - 1]
        a[i - 1] = a[j - 1] = a[k - 1] = v
    if any(v != a[0] for v in a):
        return False, "elements are not all equal"
    return True
