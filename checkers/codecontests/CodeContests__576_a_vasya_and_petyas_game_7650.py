# CF 576A: a minimum-length list of divisibility questions that identifies every x in [1, n].
# The jury's k is the minimum; the questions must separate all x.


def check(input, expected, actual):
    n = int(input.split()[0])
    best = int(expected.split()[0])
    out = actual.split()
    if not out:
        return False, "empty output"
    k = _int(out[0])
    if k != best:
        return False, "k is %d, minimum is %d" % (k, best)
    if len(out) != 1 + k:
        return False, "expected %d questions" % k
    ys = [_int(t) for t in out[1:]]
    if any(not 1 <= y <= n for y in ys):
        return False, "question out of [1, n]"
    seen = set()
    for x in range(1, n + 1):
        sig = tuple(x % y == 0 for y in ys)
        if sig in seen:
            return False, "questions do not distinguish %d" % x
        seen.add(sig)
    return True
