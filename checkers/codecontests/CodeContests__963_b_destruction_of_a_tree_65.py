# CF 963B: an order destroying every vertex, each while it has even degree, or NO.


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
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
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
