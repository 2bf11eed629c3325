# CF 1521D: per test case, the minimum number k of (remove edge, add edge) operations (jury's k)
# that turn the tree into a bamboo (a path); the operations are simulated.


def _find(p, x):
    while p[x] != x:
        p[x] = p[p[x]]
        x = p[x]
    return x


def check(input, expected, actual):
    data = list(map(int, input.split()))
    exp = expected.split()
    out = actual.split()
    T = data[0]
    pos, ep, op = 1, 0, 0
    for case in range(T):
        n = data[pos]
        pos += 1
        edges = {}
        for _ in range(n - 1):
            a, b = data[pos], data[pos + 1]
            pos += 2
            key = (a, b) if a < b else (b, a)
            edges[key] = edges.get(key, 0) + 1
        best = int(exp[ep])
        ep += 1 + 4 * best
        if op >= len(out):
            return False, "case %d: missing k" % (case + 1)
        k = _int(out[op])
        op += 1
        if k != best:
            return False, "case %d: k is %d, minimum is %d" % (case + 1, k, best)
        if op + 4 * k > len(out):
            return False, "case %d: missing operations" % (case + 1)
        for _ in range(k):
            x1, y1, x2, y2 = (_int(t) for t in out[op:op + 4])
            op += 4
            if not all(1 <= v <= n for v in (x1, y1, x2, y2)) or x1 == y1 or x2 == y2:
                return False, "case %d: bad operation" % (case + 1)
            key = (x1, y1) if x1 < y1 else (y1, x1)
            if not edges.get(key):
                return False, "case %d: removed edge %d %d is not present" % (case + 1, x1, y1)
            edges[key] -= 1
            key = (x2, y2) if x2 < y2 else (y2, x2)
            edges[key] = edges.get(key, 0) + 1
        deg = [0] * (n + 1)
        parent = list(range(n + 1))
        for (a, b), c in edges.items():
            if c == 0:
                continue
            if c > 1:
                return False, "case %d: multiple edge %d %d" % (case + 1, a, b)
            deg[a] += 1
            deg[b] += 1
            ra, rb = _find(parent, a), _find(parent, b)
            if ra == rb:
                return False, "case %d: result has a cycle" % (case + 1)
            parent[ra] = rb
        if max(deg) > 2:
            return False, "case %d: a vertex has degree > 2" % (case + 1)
    if op != len(out):
        return False, "extra output"
    return True
