# Order-insensitive comparison of a call test's returned list (statements saying "return the answer in any
# order"): the candidate's list must hold exactly the expected elements, as a multiset. DEPTH 2 also ignores
# the order inside each element (3sum's triplets), which `factory hidden-tests` allows only where the
# reference's own inner lists are sorted and sorting them merges no two answers (permutations keep DEPTH 1).
# OUTER False keeps the top-level order (find-the-difference: [only in nums1, only in nums2], each unordered).
# Runs in the sandbox (checker contract: check(input, expected, actual) on serialized values).
import json

DEPTH = 1
OUTER = True


def _key(v):
    return json.dumps(v, sort_keys=True)


def _canon(v, depth, top=False):
    if depth > 0 and isinstance(v, list):
        items = [_canon(x, depth - 1) for x in v]
        return items if top and not OUTER else sorted(items, key=_key)
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
    if _canon(act, DEPTH, True) == _canon(exp, DEPTH, True):
        return True
    return False, "the elements differ (order ignored)"
