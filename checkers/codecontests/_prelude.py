# Shared helpers of this folder's checker programs: factory/judging/attach.py prepends this file to each of them
# when it is attached, so the stored checker stays one standalone program.
import re

_INT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def _int(t):
    if not _INT.match(t) or t == "-0":
        raise ValueError("bad integer %r" % t)
    return int(t)


def _yes_no(expected, out, yes="YES", no="NO"):
    """The verdict of an answer (``out``: its tokens) that is empty, not YES/NO (any case), not the jury's, or NO;
    None for a YES, which the checker goes on to verify."""
    jury = expected.split()[0].upper()
    if not out:
        return False, "empty output"
    verdict = out[0].upper()
    if verdict not in ("YES", "NO"):
        return False, "expected %s/%s" % (yes, no)
    if verdict != jury:
        return False, "answer says %s, jury says %s" % (verdict, jury)
    if verdict == "NO":
        return len(out) == 1, no


def _bfs(adj, start):
    """Edge distances from ``start`` over the adjacency lists ``adj`` (-1: unreachable)."""
    dist = [-1] * len(adj)
    dist[start] = 0
    q = [start]
    for a in q:
        for b in adj[a]:
            if dist[b] < 0:
                dist[b] = dist[a] + 1
                q.append(b)
    return dist
