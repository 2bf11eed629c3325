# CF 407A: integer right triangle with legs a, b and no side parallel to an axis, or NO.
from itertools import combinations


def check(input, expected, actual):
    a, b = map(int, input.split()[:2])
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
    if len(out) != 7:
        return False, "expected three pairs of coordinates"
    c = [_int(t) for t in out[1:]]
    if any(abs(v) > 10 ** 9 for v in c):
        return False, "coordinate exceeds 10^9"
    p = [(c[0], c[1]), (c[2], c[3]), (c[4], c[5])]
    if any(q[0] == r[0] or q[1] == r[1] for q, r in combinations(p, 2)):
        return False, "a side is parallel to an axis"
    want = sorted((a * a, b * b))
    for i in range(3):
        o, u, v = p[i], p[(i + 1) % 3], p[(i + 2) % 3]
        ux, uy = u[0] - o[0], u[1] - o[1]
        vx, vy = v[0] - o[0], v[1] - o[1]
        if ux * vx + uy * vy == 0 and sorted((ux * ux + uy * uy, vx * vx + vy * vy)) == want:
            return True
    return False, "not a right triangle with legs %d and %d" % (a, b)
