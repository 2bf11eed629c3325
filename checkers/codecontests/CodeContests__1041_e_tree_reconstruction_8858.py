# CF 1041E: a tree on 1..n whose per-edge (max, max) component pairs equal the given multiset, or NO.
import re
from collections import Counter

_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _int(t):
    if not _INT.match(t) or t == "-0":
        raise ValueError("bad integer %r" % t)
    return int(t)


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n = data[0]
    want = Counter(tuple(sorted((data[1 + 2 * i], data[2 + 2 * i]))) for i in range(n - 1))
    jury = expected.split()[0].upper()
    out = actual.split()
    if not out:
        return False, "empty output"
    verdict = out[0].upper()
    if verdict not in ("YES", "NO"):
        return False, "expected YES/NO"
    if verdict != jury:
        return False, "answer says %s, jury says %s" % (verdict, jury)
    if verdict == "NO":
        return len(out) == 1, "NO"
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
