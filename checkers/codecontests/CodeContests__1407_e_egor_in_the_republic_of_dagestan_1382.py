# CF 1407E: a city coloring whose shortest safe 1 -> n path is the longest possible
# (jury's value; -1 = no path).  The coloring is checked by a BFS over roads u -> v with t == color[u].


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n, m = data[0], data[1]
    best = int(expected.split()[0])
    out = actual.split()
    if len(out) != 2:
        return False, "expected the length and the schedule"
    val = _int(out[0])
    if val != best:
        return False, "length is %d, optimum is %d" % (val, best)
    s = out[1]
    if len(s) != n or s.strip("01"):
        return False, "schedule is not a string of %d binary digits" % n
    adj = [[] for _ in range(n + 1)]
    for i in range(m):
        u, v, t = data[2 + 3 * i:5 + 3 * i]
        if t == ord(s[u - 1]) - 48:
            adj[u].append(v)
    dist = _bfs(adj, 1)
    if dist[n] != val:
        return False, "with this schedule the shortest path is %d, not %d" % (dist[n], val)
    return True
