# CF 464B: permute the numbers within each line so the 8 points are a cube's vertices, or NO.
# Cube test: the 28 squared distances are 12 x d, 12 x 2d, 4 x 3d with d > 0.


def check(input, expected, actual):
    c = list(map(int, input.split()[:24]))
    rows = [sorted(c[3 * i:3 * i + 3]) for i in range(8)]
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
    if len(out) != 25:
        return False, "expected 8 points"
    v = [_int(t) for t in out[1:]]
    p = [v[3 * i:3 * i + 3] for i in range(8)]
    for i in range(8):
        if sorted(p[i]) != rows[i]:
            return False, "line %d is not a permutation of the input line" % (i + 1)
    d = sorted(sum((p[i][t] - p[j][t]) ** 2 for t in range(3)) for i in range(8) for j in range(i + 1, 8))
    s = d[0]
    if s == 0 or d != [s] * 12 + [2 * s] * 12 + [3 * s] * 4:
        return False, "points are not the vertices of a cube"
    return True
