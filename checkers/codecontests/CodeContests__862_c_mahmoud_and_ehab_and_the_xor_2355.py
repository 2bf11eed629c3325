# CF 862C: n distinct integers in [0, 10^6] with xor sum x, or NO (only when impossible).


def check(input, expected, actual):
    n, x = map(int, input.split()[:2])
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
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
