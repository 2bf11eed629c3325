# CF 507E: the minimum number k of affected roads (jury's k), each a real road changed to the
# other state, after which the working roads are exactly one shortest 1 -> n path.


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n, m = data[0], data[1]
    state = {}
    adj = [[] for _ in range(n + 1)]
    for i in range(m):
        x, y, z = data[2 + 3 * i:5 + 3 * i]
        state[(min(x, y), max(x, y))] = z
        adj[x].append(y)
        adj[y].append(x)
    best = int(expected.split()[0])
    out = actual.split()
    if not out:
        return False, "empty output"
    k = _int(out[0])
    if k != best:
        return False, "k is %d, minimum is %d" % (k, best)
    if len(out) != 1 + 3 * k:
        return False, "expected %d roads" % k
    v = [_int(t) for t in out[1:]]
    done = set()
    for i in range(k):
        x, y, z = v[3 * i:3 * i + 3]
        key = (min(x, y), max(x, y))
        if key not in state or key in done:
            return False, "road %d %d does not exist or is repeated" % (x, y)
        if z not in (0, 1) or z == state[key]:
            return False, "road %d %d: new state must differ from the old one" % (x, y)
        done.add(key)
        state[key] = z
    dist = _bfs(adj, 1)
    work = [[] for _ in range(n + 1)]
    cnt = 0
    for (x, y), z in state.items():
        if z:
            cnt += 1
            work[x].append(y)
            work[y].append(x)
    if cnt != dist[n]:
        return False, "%d working roads remain, a shortest path has %d" % (cnt, dist[n])
    if _bfs(work, 1)[n] < 0:
        return False, "working roads do not connect 1 and n"
    return True
