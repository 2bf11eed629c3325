# CF 1031E / 1071C: at most floor(n/3)+12 arithmetic-progression triple flips that zero the array, or NO.
# The three indices of an operation may be printed in any order (the statement allows it).

ALSO = ("CodeContests__1071_c_triple_flips_5739",)   # the same problem under its other id: judged by this file


def check(input, expected, actual):
    data = input.split()
    n = int(data[0])
    a = [0] + [int(t) for t in data[1:1 + n]]
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
    if len(out) < 2:
        return False, "missing m"
    m = _int(out[1])
    if m < 0 or m > n // 3 + 12:
        return False, "m out of [0, n/3 + 12]"
    if len(out) != 2 + 3 * m:
        return False, "expected %d operations" % m
    ops = [_int(t) for t in out[2:]]
    for q in range(m):
        x, y, z = sorted(ops[3 * q:3 * q + 3])
        if not (1 <= x < y < z <= n) or y - x != z - y:
            return False, "operation %d is not an arithmetic progression in [1, n]" % (q + 1)
        a[x] ^= 1
        a[y] ^= 1
        a[z] ^= 1
    if any(a):
        return False, "array is not all zeros"
    return True
