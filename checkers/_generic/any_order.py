# Order-insensitive comparison of a call test's returned list (statements saying "return the answer in any
# order"): the candidate's list must hold exactly the expected elements, as a multiset. DEPTH 2 also ignores
# the order inside each element (3sum's triplets), which `factory hidden-tests` allows only where the
# reference's own inner lists are sorted and sorting them merges no two answers (permutations keep DEPTH 1).
# Runs in the sandbox (checker contract: check(input, expected, actual) on serialized values).
import json

DEPTH = 1


def _key(v):
    return json.dumps(v, sort_keys=True)


def _canon(v, depth):
    if depth > 0 and isinstance(v, list):
        return sorted((_canon(x, depth - 1) for x in v), key=_key)
    return v


def check(input, expected, actual):
    exp = json.loads(expected)
    act = json.loads(actual)
    if act == exp:
        return True
    if not isinstance(exp, list) or not isinstance(act, list):
        return False, "not a list"
    if len(act) != len(exp):
        return False, "expected %d elements, got %d" % (len(exp), len(act))
    if _canon(act, DEPTH) == _canon(exp, DEPTH):
        return True
    return False, "the elements differ (order ignored)"
