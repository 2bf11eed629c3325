# CF 136D: split 8 distinct points into a square (line 2) and a rectangle (line 3), or NO.


def _shape(pts, square):
    # distinct points a, b, c, d form a rectangle iff for some split into diagonals (a,b),(c,d)
    # the diagonals share their midpoint and have equal length; a square iff also perpendicular
    for (i, j), (k, l) in (((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))):
        a, b, c, d = pts[i], pts[j], pts[k], pts[l]
        if a[0] + b[0] != c[0] + d[0] or a[1] + b[1] != c[1] + d[1]:
            continue
        ux, uy = a[0] - b[0], a[1] - b[1]
        vx, vy = c[0] - d[0], c[1] - d[1]
        if ux * ux + uy * uy != vx * vx + vy * vy:
            continue
        if square and ux * vx + uy * vy != 0:
            continue
        return True
    return False


def check(input, expected, actual):
    c = list(map(int, input.split()[:16]))
    p = [(c[2 * i], c[2 * i + 1]) for i in range(8)]
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
    if len(out) != 9:
        return False, "expected 8 indices"
    idx = [_int(t) for t in out[1:]]
    if sorted(idx) != list(range(1, 9)):
        return False, "indices are not a partition of 1..8"
    if not _shape([p[i - 1] for i in idx[:4]], True):
        return False, "first four points are not a square"
    if not _shape([p[i - 1] for i in idx[4:]], False):
        return False, "last four points are not a rectangle"
    return True
