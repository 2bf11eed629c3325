# CF 1438D: at most n xor-triple operations that make all elements equal, or NO.


def check(input, expected, actual):
    data = input.split()
    n = int(data[0])
    a = [int(t) for t in data[1:1 + n]]
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
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
