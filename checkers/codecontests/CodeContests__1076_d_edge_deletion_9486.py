# CF 1076D: keep at most k distinct edges so that the number of good vertices is maximal,
# which is min(n, k + 1) (a shortest-path tree).  A vertex is good iff it is reachable from 1
# through kept edges that are tight (d[x] + w == d[y]).
import gc
import heapq


def check(input, expected, actual):
    gc.disable()  # large graphs: millions of small objects, no cycles
    try:
        return _check(input, expected, actual)
    finally:
        gc.enable()


def _check(input, expected, actual):
    data = list(map(int, input.split()))
    n, m, k = data[:3]
    ex, ey, ew = data[3::3][:m], data[4::3][:m], data[5::3][:m]
    out = actual.split()
    if not out:
        return False, "empty output"
    e = _int(out[0])
    if not 0 <= e <= k:
        return False, "e out of [0, k]"
    if len(out) != 1 + e:
        return False, "expected %d edge indices" % e
    keep = [_int(x) for x in out[1:]]
    if any(not 1 <= i <= m for i in keep) or len(set(keep)) != e:
        return False, "edge indices not distinct in [1, m]"
    nb = [[] for _ in range(n + 1)]
    wt = [[] for _ in range(n + 1)]
    for x, y, w in zip(ex, ey, ew):
        nb[x].append(y)
        wt[x].append(w)
        nb[y].append(x)
        wt[y].append(w)
    dist = [-1] * (n + 1)
    done = [False] * (n + 1)
    dist[1] = 0
    N = n + 1
    pq = [1]  # heap of dist * N + vertex (no tuples: this is the hot loop)
    pop, push = heapq.heappop, heapq.heappush
    while pq:
        d, v = divmod(pop(pq), N)
        if done[v]:
            continue
        done[v] = True
        for u, w in zip(nb[v], wt[v]):
            nd = d + w
            du = dist[u]
            if du < 0 or nd < du:
                dist[u] = nd
                push(pq, nd * N + u)
    tight = [[] for _ in range(n + 1)]
    for i in keep:
        x, y, w = ex[i - 1], ey[i - 1], ew[i - 1]
        if dist[x] + w == dist[y]:
            tight[x].append(y)
        elif dist[y] + w == dist[x]:
            tight[y].append(x)
    cnt = sum(d >= 0 for d in _bfs(tight, 1))   # good vertices: reachable from 1 through tight kept edges
    best = min(n, k + 1)
    if cnt != best:
        return False, "%d good vertices, %d possible" % (cnt, best)
    return True
