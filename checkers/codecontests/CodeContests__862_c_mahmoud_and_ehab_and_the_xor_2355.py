# CF 862C: n distinct integers in [0, 10^6] with xor sum x, or NO (only when impossible).
import re

_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _int(t):
    if not _INT.match(t) or t == "-0":
        raise ValueError("bad integer %r" % t)
    return int(t)


def check(input, expected, actual):
    n, x = map(int, input.split()[:2])
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
    if len(out) != n + 1:
        return False, "expected %d numbers, got %d" % (n, len(out) - 1)
    a = [_int(t) for t in out[1:]]
    if any(v < 0 or v > 10 ** 6 for v in a):
        return False, "number out of [0, 10^6]"
    if len(set(a)) != n:
        return False, "numbers not distinct"
    s = 0
    for v in a:
        s ^= v
    if s != x:
        return False, "xor is %d, not %d" % (s, x)
    return True
