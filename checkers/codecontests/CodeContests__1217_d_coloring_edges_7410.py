# CF 1217D: an edge coloring with the minimum k (jury's k) and no monochromatic cycle.


def _acyclic(n, edges):
    indeg = [0] * (n + 1)
    adj = [[] for _ in range(n + 1)]
    for u, v in edges:
        adj[u].append(v)
        indeg[v] += 1
    stack = [v for v in range(1, n + 1) if indeg[v] == 0]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        for u in adj[v]:
            indeg[u] -= 1
            if indeg[u] == 0:
                stack.append(u)
    return seen == n


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n, m = data[0], data[1]
    edges = [(data[2 + 2 * i], data[3 + 2 * i]) for i in range(m)]
    best = int(expected.split()[0])
    out = actual.split()
    if not out:
        return False, "empty output"
    k = _int(out[0])
    if k != best:
        return False, "k is %d, minimum is %d" % (k, best)
    if len(out) != 1 + m:
        return False, "expected %d colors" % m
    c = [_int(t) for t in out[1:]]
    if any(not 1 <= x <= k for x in c):
        return False, "color out of [1, k]"
    groups = {}
    for e, x in zip(edges, c):
        groups.setdefault(x, []).append(e)
    for x, es in groups.items():
        if not _acyclic(n, es):
            return False, "color %d has a cycle" % x
    return True
