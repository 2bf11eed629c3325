# CF 633C: a sentence of dictionary words (exact spelling) whose lowercased, per-word reversed,
# concatenated form equals the ciphered text.
def check(input, expected, actual):
    data = input.split()
    t = data[1]
    m = int(data[2])
    words = set(data[3:3 + m])
    out = actual.split()
    if not out:
        return False, "empty output"
    for w in out:
        if w not in words:
            return False, "%r is not in the word list" % w[:50]
    if "".join(w.lower()[::-1] for w in out) != t:
        return False, "sentence does not encrypt to the text"
    return True
