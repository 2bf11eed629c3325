# CF 45H: add the minimum number t of new roads (jury's t; -1 if impossible) so that the graph
# has no bridge (2-edge-connected); no road may duplicate an existing or another new road.


def _has_bridge(n, edges):
    adj = [[] for _ in range(n + 1)]
    for i, (a, b) in enumerate(edges):
        adj[a].append((b, i))
        adj[b].append((a, i))
    tin = [0] * (n + 1)
    low = [0] * (n + 1)
    timer = 1
    for root in range(1, n + 1):
        if tin[root]:
            continue
        if root != 1:
            return True  # disconnected
        tin[root] = low[root] = timer
        timer += 1
        stack = [(root, -1, 0)]
        while stack:
            v, pe, it = stack[-1]
            if it < len(adj[v]):
                stack[-1] = (v, pe, it + 1)
                u, ei = adj[v][it]
                if ei == pe:
                    continue
                if tin[u]:
                    if tin[u] < low[v]:
                        low[v] = tin[u]
                else:
                    tin[u] = low[u] = timer
                    timer += 1
                    stack.append((u, ei, 0))
            else:
                stack.pop()
                if stack:
                    p = stack[-1][0]
                    if low[v] < low[p]:
                        low[p] = low[v]
                    if low[v] > tin[p]:
                        return True
    return False


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n, m = data[0], data[1]
    edges = [(data[2 + 2 * i], data[3 + 2 * i]) for i in range(m)]
    best = int(expected.split()[0])
    out = actual.split()
    if not out:
        return False, "empty output"
    t = _int(out[0])
    if t != best:
        return False, "t is %d, jury's is %d" % (t, best)
    if t == -1:
        return len(out) == 1, "-1"
    if len(out) != 1 + 2 * t:
        return False, "expected %d roads" % t
    v = [_int(x) for x in out[1:]]
    have = set((min(a, b), max(a, b)) for a, b in edges)
    for i in range(t):
        a, b = v[2 * i], v[2 * i + 1]
        if not (1 <= a <= n and 1 <= b <= n) or a == b:
            return False, "bad road %d %d" % (a, b)
        key = (min(a, b), max(a, b))
        if key in have:
            return False, "road %d %d already exists" % (a, b)
        have.add(key)
        edges.append((a, b))
    if _has_bridge(n, edges):
        return False, "the resulting network still has a bridge"
    return True
