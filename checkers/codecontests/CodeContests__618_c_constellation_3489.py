# CF 618C: three distinct stars forming a positive-area triangle with every other star strictly outside.


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n = data[0]
    xs, ys = data[1:1 + 2 * n:2], data[2:2 + 2 * n:2]
    out = actual.split()
    if len(out) != 3:
        return False, "expected three indices"
    idx = [_int(t) for t in out]
    if any(not 1 <= i <= n for i in idx) or len(set(idx)) != 3:
        return False, "indices not distinct in [1, n]"
    (ax, ay), (bx, by), (cx, cy) = ((xs[i - 1], ys[i - 1]) for i in idx)
    area = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    if area == 0:
        return False, "triangle has zero area"
    if area < 0:
        bx, by, cx, cy = cx, cy, bx, by
    chosen = set(i - 1 for i in idx)
    for i in range(n):
        if i in chosen:
            continue
        px, py = xs[i], ys[i]
        if ((bx - ax) * (py - ay) - (by - ay) * (px - ax) >= 0
                and (cx - bx) * (py - by) - (cy - by) * (px - bx) >= 0
                and (ax - cx) * (py - cy) - (ay - cy) * (px - cx) >= 0):
            return False, "star %d is not strictly outside the triangle" % (i + 1)
    return True
