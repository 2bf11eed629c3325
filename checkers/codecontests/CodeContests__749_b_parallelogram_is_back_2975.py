# CF 749B: all (always 3) possible fourth vertices, in any order.


def check(input, expected, actual):
    c = list(map(int, input.split()[:6]))
    p = [(c[0], c[1]), (c[2], c[3]), (c[4], c[5])]
    want = sorted((p[i][0] + p[j][0] - p[k][0], p[i][1] + p[j][1] - p[k][1])
                  for i, j, k in ((0, 1, 2), (0, 2, 1), (1, 2, 0)))
    out = actual.split()
    if not out:
        return False, "empty output"
    k = _int(out[0])
    if k != len(want):
        return False, "k is %d, expected %d" % (k, len(want))
    if len(out) != 1 + 2 * k:
        return False, "expected %d points" % k
    v = [_int(t) for t in out[1:]]
    got = sorted((v[2 * i], v[2 * i + 1]) for i in range(k))
    if got != want:
        return False, "wrong set of points"
    return True
