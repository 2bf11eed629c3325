# CF 27B: the missing game "x y" (x won) such that all results fit distinct speeds,
# i.e. the completed tournament is transitive (all win counts distinct).


def check(input, expected, actual):
    data = list(map(int, input.split()))
    n = data[0]
    m = n * (n - 1) // 2 - 1
    games = [0] * (n + 1)
    wins = [0] * (n + 1)
    for i in range(m):
        x, y = data[1 + 2 * i], data[2 + 2 * i]
        games[x] += 1
        games[y] += 1
        wins[x] += 1
    missing = sorted(v for v in range(1, n + 1) if games[v] != n - 1)
    out = actual.split()
    if len(out) != 2:
        return False, "expected exactly two integers"
    x, y = _int(out[0]), _int(out[1])
    if sorted((x, y)) != missing:
        return False, "(%d, %d) is not the missing game" % (x, y)
    wins[x] += 1
    if sorted(wins[1:]) != list(range(n)):
        return False, "results are not consistent with distinct speeds"
    return True
