# CF 1325C: distinct edge labels 0..n-2 minimizing the maximum MEX over all paths.
# If the tree is a path every labelling gives n-1.  Otherwise the optimum is 2, reached iff the
# edges labelled 0, 1 and 2 do not all lie on one simple path (with 0 and 1 always on one, MEX >= 2).
from itertools import combinations


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n = data[0]
    eu, ev = data[1:2 * n - 1:2], data[2:2 * n - 1:2]
    out = actual.split()
    if len(out) != n - 1:
        return False, "expected %d labels" % (n - 1)
    lab = [_int(t) for t in out]
    if sorted(lab) != list(range(n - 1)):
        return False, "labels are not distinct values in [0, n-2]"
    deg = [0] * (n + 1)
    adj = [[] for _ in range(n + 1)]
    for a, b in zip(eu, ev):
        deg[a] += 1
        deg[b] += 1
        adj[a].append(b)
        adj[b].append(a)
    if max(deg) <= 2:
        return True
    parent = [0] * (n + 1)
    depth = [0] * (n + 1)
    parent[1] = -1
    order = [1]
    for v in order:
        for u in adj[v]:
            if u != parent[v]:
                parent[u] = v
                depth[u] = depth[v] + 1
                order.append(u)
    where = {x: i for i, x in enumerate(lab)}
    # an edge is named by its deeper endpoint
    target = set()
    ends = set()
    for x in (0, 1, 2):
        a, b = eu[where[x]], ev[where[x]]
        target.add(a if parent[a] == b else b)
        ends.update((a, b))
    for p, q in combinations(sorted(ends), 2):
        path = set()
        while p != q:
            if depth[p] < depth[q]:
                p, q = q, p
            path.add(p)
            p = parent[p]
        if target <= path:
            return False, "labels 0, 1, 2 lie on one path: max MEX >= 3, optimum is 2"
    return True
