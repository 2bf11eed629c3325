"""A write batch's tests as columns: their digests, test ids and visibility computed over the whole batch in DuckDB
(C++, both cores) instead of test by test in Python, which cost ~10 us per test (600 k tests of a few bytes: ~6 CPU-s).

Results equal the per-test rules exactly:
- digests: sha256 of each text, the same as :func:`~factory.ingest.hub.ingest.text_digest` (strings longer than
  ``ELIDE_CHARS`` are hashed once in Python, where hashing is ~4x faster and bronze needs them too);
- test ids: ``stable_hash(problem_id, ordinal, kind, code_digest, input_digest)``, its JSON written directly;
- visibility: a stdio test whose input or expected output starts (first 1024 characters, all ASCII) with a word
  (a run of letters and digits not after a '.') that is not in the normalised statement is 'hidden': normalise()
  keeps such a word as its lower case, and the statement must contain the whole normalised text. A test far larger
  than the statement is 'hidden' too; any other test gets ``ingest._visibility``'s verdict in Python.
"""
from __future__ import annotations

from operator import attrgetter

FIELDS = ("kind", "code", "input", "expected", "comparison", "atol", "subset")
TEXTS = ("code", "input", "expected")
FIRST_WORD = r"(^|[^.0-9A-Za-z])([0-9A-Za-z]+)"   # group 2: the first word the per-test rule would look at

_DIGESTS = f"""
SELECT i, problem, ordinal, kind, dc, di, de,
       coalesce(chars > 16 * length(statement) + 65536 OR (kind = 'stdio' AND has_input AND (
           (wi IS NOT NULL AND NOT contains(statement, wi)) OR (we IS NOT NULL AND NOT contains(statement, we)))),
           false) AS hidden
FROM (SELECT i, problem, ordinal, kind, input IS NOT NULL AS has_input,
             CASE WHEN known_code IS NULL THEN sha256(code) ELSE known_code END AS dc,
             CASE WHEN known_input IS NULL THEN sha256(input) ELSE known_input END AS di,
             CASE WHEN known_expected IS NULL THEN sha256(expected) ELSE known_expected END AS de,
             chars,
             CASE WHEN strlen(left(input, 1024)) = length(left(input, 1024))
                  THEN nullif(nullif(lower(regexp_extract(left(input, 1024), '{FIRST_WORD}', 2)), ''), 'none') END AS wi,
             CASE WHEN strlen(left(expected, 1024)) = length(left(expected, 1024))
                  THEN nullif(nullif(lower(regexp_extract(left(expected, 1024), '{FIRST_WORD}', 2)), ''), 'none')
                  END AS we
      FROM tests)   -- the texts are read here only: the join below carries no test text
JOIN statements s ON s.p = problem
"""
_PROBLEM_DIGESTS = """
SELECT problem, string_agg('["' || kind || '",' || coalesce('"' || dc || '"', 'null') || ','
                           || coalesce('"' || di || '"', 'null') || ',' || coalesce('"' || de || '"', 'null') || ']',
                           ',' ORDER BY ordinal)
FROM digests GROUP BY problem
"""
_TEST_IDS = """
SELECT substr(sha256('["' || k.problem_id || '",' || ordinal || ',"' || kind || '",'
                     || coalesce('"' || dc || '"', 'null') || ',' || coalesce('"' || di || '"', 'null') || ']'), 1, 16),
       k.problem_id
FROM digests JOIN kept k ON k.p = problem ORDER BY i
"""


class TestBatch:
    """The tests of the problems of one write batch, column by column; problems are numbered in order of add()."""

    def __init__(self):
        self.columns: dict[str, list] = {k: [] for k in ("problem", "ordinal", "chars", *FIELDS, "known_code",
                                                         "known_input", "known_expected")}
        self.statements: list[str] = []
        self.chars = 0   # the batch's test text, in characters

    def add(self, tests: list, statement: str, elide_chars: int, digest) -> dict:
        """One problem's tests; returns {id(text): sha256} of its texts longer than ``elide_chars`` (hashed here by
        ``digest``, once: bronze elides those by the same digests)."""
        cols, n, known = self.columns, len(tests), {}
        cols["problem"] += [len(self.statements)] * n
        cols["ordinal"] += range(n)
        self.statements.append(statement)
        longest = 0
        for name in FIELDS:
            values = list(map(attrgetter(name), tests))
            cols[name] += values
            if name in TEXTS:
                top = max(map(len, filter(None, values)), default=0)
                longest += top
                self.chars += sum(map(len, filter(None, values)))
                digests = [digest(v) if v is not None and len(v) > elide_chars else None for v in values] \
                    if top > elide_chars else [None] * n
                cols["known_" + name] += digests
                known.update((id(v), d) for v, d in zip(values, digests) if d)
        # a test's characters (Python's len is O(1), DuckDB's length reads the text), for the size shortcut, which
        # no test of a problem whose three longest texts sum to at most 64 Ki characters can meet
        cols["chars"] += [sum(len(v) for v in (t.code, t.input, t.expected) if v) for t in tests] \
            if longest > 65536 else [0] * n
        return known

    def digests(self, con) -> list[str]:
        """Per problem, the JSON of its tests' [kind, code digest, input digest, expected digest] lists (the part
        of the problem id that depends on its tests)."""
        import pyarrow as pa

        cols = self.columns
        self.tests = pa.table({"i": pa.array(range(len(cols["problem"])), pa.int64()),
                               **{k: _texts(cols.pop(k)) if k in TEXTS else
                                  pa.array(cols.pop(k), pa.float64() if k == "atol" else
                                           pa.int64() if k == "chars" else
                                           pa.int32() if k in ("problem", "ordinal") else pa.string())
                                  for k in list(cols)}})
        con.register("tests", self.tests)
        con.register("statements", pa.table({"p": pa.array(range(len(self.statements)), pa.int32()),
                                             "statement": self.statements}))
        self.digest_rows = con.execute(_DIGESTS).arrow().read_all()   # Arrow, not a DuckDB table: DuckDB keeps
        con.register("digests", self.digest_rows)                       # what its tables used (+27 MB measured)
        out = [""] * len(self.statements)
        for p, text in con.execute(_PROBLEM_DIGESTS).fetchall():
            out[p] = text
        return out

    def table(self, con, problem_ids: list, schema, run_id: str, visibility):
        """The silver.tests rows of the problems whose id is not None (``problem_ids[p]``), in ``schema``'s
        columns; ``visibility(statement, test)`` decides the tests the shortcuts leave open."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from factory.ingest.normalize import TestRow

        kept = [p for p, pid in enumerate(problem_ids) if pid is not None]
        con.register("kept", pa.table({"p": pa.array(kept, pa.int32()),
                                       "problem_id": [problem_ids[p] for p in kept]}))
        open_rows = [i for (i,) in con.execute("SELECT i FROM digests WHERE NOT hidden ORDER BY i").fetchall()]
        verdicts = ["hidden"] * self.tests.num_rows
        if open_rows:
            rows = self.tests.select(["problem", *FIELDS]).take(open_rows).to_pylist()
            for i, row in zip(open_rows, rows):
                verdicts[i] = visibility(self.statements[row.pop("problem")], TestRow(**row))
        ids = con.execute(_TEST_IDS).arrow().read_all()
        tests = self.tests.append_column("visibility", pa.array(verdicts, pa.string()))
        if len(kept) < len(problem_ids):
            tests = tests.filter(pc.is_in(tests["problem"], pa.array(kept, pa.int32())))
        del self.tests, self.digest_rows
        for name in ("tests", "statements", "kept", "digests"):
            con.unregister(name)
        n = tests.num_rows
        columns = {"test_id": ids.column(0), "problem_id": ids.column(1), "origin": pa.array(["dataset"] * n),
                   "run_id": pa.array([run_id] * n), **{k: tests[k] for k in tests.column_names}}
        pa.default_memory_pool().release_unused()   # the builders' spare capacity (~2x a MB-sized text): to the OS
        return pa.Table.from_arrays([columns[f.name].cast(f.type) for f in schema], schema=schema)


def _texts(values: list, slice_chars: int = 8 << 20):
    """A text column as Arrow, converted ~``slice_chars`` characters at a time, each slice's Python strings
    released once converted (a write batch's text is held about once, not as Python strings and Arrow together)."""
    import pyarrow as pa
    from bisect import bisect_right
    from itertools import accumulate

    ends = list(accumulate(len(v) if v else 0 for v in values))
    chunks, start = [], 0
    while start < len(values):
        stop = max(start + 1, bisect_right(ends, (ends[start - 1] if start else 0) + slice_chars))
        chunks.append(pa.array(values[start:stop], pa.string()))
        values[start:stop] = [None] * (stop - start)
        start = stop
    return pa.chunked_array(chunks, pa.string())
