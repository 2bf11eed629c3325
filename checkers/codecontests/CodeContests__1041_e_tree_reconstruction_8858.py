# CF 1041E: a tree on 1..n whose per-edge (max, max) component pairs equal the given multiset, or NO.
from collections import Counter


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n = data[0]
    want = Counter(tuple(sorted((data[1 + 2 * i], data[2 + 2 * i]))) for i in range(n - 1))
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
    if len(out) != 1 + 2 * (n - 1):
        return False, "expected %d edges" % (n - 1)
    e = [_int(t) for t in out[1:]]
    adj = [[] for _ in range(n + 1)]
    for i in range(n - 1):
        x, y = e[2 * i], e[2 * i + 1]
        if not (1 <= x <= n and 1 <= y <= n) or x == y:
            return False, "bad edge"
        adj[x].append(y)
        adj[y].append(x)
    # root at n; the component not containing n has max = max of the subtree
    parent = [0] * (n + 1)
    parent[n] = -1
    order = [n]
    for v in order:
        for u in adj[v]:
            if u != parent[v]:
                if parent[u]:
                    return False, "not a tree"
                parent[u] = v
                order.append(u)
    if len(order) != n:
        return False, "not connected"
    sub = list(range(n + 1))
    got = Counter()
    for v in reversed(order[1:]):
        got[(sub[v], n)] += 1
        if sub[v] > sub[parent[v]]:
            sub[parent[v]] = sub[v]
    if got != want:
        return False, "tree produces different pairs"
    return True
