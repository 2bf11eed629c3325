# CF 715B / 716D: positive weights (<= 10^18) for the erased edges so that dist(s, t) == L, or NO.
# Edges may be printed in any order (and either orientation); fixed weights must be unchanged.
import heapq

ALSO = ("CodeContests__716_d_complete_the_graph_158",)   # the same problem under its other id: judged by this file


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n, m, L, s, t = data[:5]
    given = {}
    for i in range(m):
        u, v, w = data[5 + 3 * i:8 + 3 * i]
        given[(min(u, v), max(u, v))] = w
    out = actual.split()
    verdict = _yes_no(expected, out)
    if verdict:
        return verdict
    if len(out) != 1 + 3 * m:
        return False, "expected %d edges" % m
    e = [_int(x) for x in out[1:]]
    adj = [[] for _ in range(n)]
    used = set()
    for i in range(m):
        u, v, w = e[3 * i:3 * i + 3]
        key = (min(u, v), max(u, v))
        if key not in given or key in used:
            return False, "edge %d %d is not an input edge or is repeated" % (u, v)
        used.add(key)
        g = given[key]
        if g and w != g:
            return False, "weight of edge %d %d was changed" % (u, v)
        if not 1 <= w <= 10 ** 18:
            return False, "weight out of [1, 10^18]"
        adj[u].append((v, w))
        adj[v].append((u, w))
    dist = [None] * n
    dist[s] = 0
    pq = [(0, s)]
    while pq:
        d, v = heapq.heappop(pq)
        if d > dist[v]:
            continue
        if v == t:
            break
        for u, w in adj[v]:
            nd = d + w
            if dist[u] is None or nd < dist[u]:
                dist[u] = nd
                heapq.heappush(pq, (nd, u))
    if dist[t] != L:
        return False, "shortest path is %s, not %d" % (dist[t], L)
    return True
