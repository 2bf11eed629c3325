# CF 963B: an order destroying every vertex, each while it has even degree, or NO.
import re

_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _int(t):
    if not _INT.match(t) or t == "-0":
        raise ValueError("bad integer %r" % t)
    return int(t)


def check(input, expected, actual):
    data = input.split()
    n = int(data[0])
    adj = [[] for _ in range(n + 1)]
    deg = [0] * (n + 1)
    for i in range(1, n + 1):
        p = int(data[i])
        if p:
            adj[i].append(p)
            adj[p].append(i)
            deg[i] += 1
            deg[p] += 1
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
    if len(out) != n + 1:
        return False, "expected %d vertices" % n
    gone = [False] * (n + 1)
    for t in out[1:]:
        v = _int(t)
        if not 1 <= v <= n or gone[v]:
            return False, "vertex %d out of range or destroyed twice" % v
        if deg[v] % 2:
            return False, "vertex %d has odd degree when destroyed" % v
        gone[v] = True
        for u in adj[v]:
            if not gone[u]:
                deg[u] -= 1
    return True
