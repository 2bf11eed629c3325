"""Hub records -> rows of bronze.raw_records, silver.problems, silver.tests and silver.programs, as Arrow tables.

A :class:`Converter` takes the records of one file in order and hands out a :class:`Batch` every ~8 MiB of text;
it needs nothing but the plain values of its ``job`` dict, so it runs in the ingest's own process or in a worker
process (:mod:`factory.ingest.hub.ingest` decides). Exact-duplicate problems are dropped by the caller, who sees
every batch in order (:meth:`Batch.drop_repeated`).

Problem and test ids hash each test's sha256 instead of its text, so a 20 MB input is never serialised again to be
hashed.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from factory.ingest.hub.adapters import SkipRecord
from factory.ingest.normalize import stable_hash
from factory.ingest.outcome import validate
from factory.ingest.visibility import statement_text, visibility

BATCH_TEXT = 8 << 20     # a Batch is handed out once its rows hold about this many characters of text
ELIDE_CHARS = 4096       # a bulky column's string longer than this is replaced by its digest in bronze
PAYLOAD_COLUMNS = frozenset({"payload", "question", "starter_code", "test_preamble", "metadata", "code", "input",
                             "expected", "raw_completion"})   # lake files carry no min/max statistics for these
TABLES = ("bronze.raw_records", "silver.problems", "silver.tests", "silver.programs")
_TEST_FIELDS = ("kind", "code", "input", "expected", "comparison", "atol", "subset")
_TEST_COLUMNS = ("test_id", "problem_id", "ordinal", *_TEST_FIELDS, "visibility")
_TEXTS = ("code", "input", "expected")


@dataclass
class Batch:
    """Rows of consecutive records: ``tables`` (name -> Arrow table; tables without rows absent), and per problem
    row its id, split and numbers of tests and programs (in table order)."""

    tables: dict
    problem_ids: list = field(default_factory=list)
    splits: list = field(default_factory=list)
    tests: list = field(default_factory=list)
    programs: list = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    first_skip: str | None = None
    text_chars: int = 0

    def drop_repeated(self, seen: set) -> int:
        """Drop the problems (with their tests and programs) whose id is in ``seen`` or earlier in this batch, add
        the others' ids to ``seen``; the number dropped (their records stay in bronze)."""
        keep = []
        for pid in self.problem_ids:
            keep.append(pid not in seen)
            seen.add(pid)
        if all(keep):
            return 0
        import numpy as np
        import pyarrow as pa

        for name, counts in (("silver.problems", None), ("silver.tests", self.tests),
                             ("silver.programs", self.programs)):
            if name in self.tables:
                mask = keep if counts is None else np.repeat(keep, counts)
                self.tables[name] = self.tables[name].filter(pa.array(mask, pa.bool_()))
        self.splits = [s for s, k in zip(self.splits, keep) if k]
        self.problem_ids = [p for p, k in zip(self.problem_ids, keep) if k]
        return keep.count(False)


class Converter:
    """The records of one file -> :class:`Batch` es. ``job``: adapter, source, sha256, revision, run_id, now,
    license, bulky (the adapter's columns elided in bronze), schemas (table -> Arrow schema), opts (the adapter's
    options), file (the name errors give), rel (the file's path in the dataset), named (its split from the name)."""

    def __init__(self, job: dict):
        from factory.ingest.sources import ADAPTERS

        self.job = job
        self.convert = ADAPTERS[job["adapter"]].convert
        self._start()

    def _start(self) -> None:
        self.rows = {t: [] for t in TABLES if t != "silver.tests"}
        self.test_columns = {k: [] for k in _TEST_COLUMNS}
        self.batch = Batch({})

    def add(self, line: int, rec: dict) -> None:
        job, batch, rows = self.job, self.batch, self.rows
        try:
            norm = self.convert(rec, (job["file"], line), job["opts"])
        except SkipRecord as why:
            reason = str(why)
            batch.skipped[reason] += 1
            batch.first_skip = batch.first_skip or f"{job['rel']}:{line} ({reason})"
            norm = None
        known, digests = {}, None
        if norm is not None:
            validate(norm, (job["file"], line))
            named = job["named"]
            if named == "test" or (named and norm.split is None):
                norm.split = named
            digests, known = _digests(norm.tests)
        bulky = job["bulky"]
        payload = json.dumps({k: (_elide(v, known) if k in bulky else v) for k, v in rec.items()},
                             ensure_ascii=False, default=str)
        del rec, known
        now, run_id = job["now"], job["run_id"]
        rows["bronze.raw_records"].append({
            "source": job["source"], "source_id": norm.source_id if norm else f"{job['rel']}:{line}",
            "payload": payload, "file": job["rel"], "line": line, "ingested_at": now, "source_sha256": job["sha256"],
            "run_id": run_id, "source_revision": job["revision"]})
        batch.text_chars += len(payload)
        if norm is None:
            return
        problem_id = stable_hash(job["source"], norm.source_id, norm.question, norm.starter_code, digests)
        statement = statement_text(norm.question, norm.starter_code)
        rows["silver.problems"].append({
            "problem_id": problem_id, "source": job["source"], "source_id": norm.source_id,
            "question": norm.question, "starter_code": norm.starter_code, "entry_point": norm.entry_point,
            "test_preamble": norm.test_preamble, "language": norm.language, "test_format": norm.test_format,
            "difficulty_label": norm.difficulty_label, "license": job["license"], "split": norm.split,
            "metadata": json.dumps({**(norm.metadata or {}), "hub_revision": job["revision"]}, default=str),
            "created_at": now, "run_id": run_id})
        batch.problem_ids.append(problem_id)
        batch.splits.append(norm.split or "unsplit")
        batch.text_chars += len(norm.question)
        tests, n = self.test_columns, len(norm.tests)
        tests["test_id"] += _test_ids(problem_id, digests)
        tests["problem_id"] += [problem_id] * n
        tests["ordinal"] += range(n)
        for name in _TEST_FIELDS:
            values = list(map(attrgetter(name), norm.tests))
            tests[name] += values
            if name in _TEXTS:
                batch.text_chars += sum(map(len, filter(None, values)))
        values = None   # the last column (maybe MB-sized texts) must not outlive its place in the buffer
        tests["visibility"] += [_visibility(statement, t) for t in norm.tests]
        batch.tests.append(n)
        program_ids = set()
        for p in norm.programs:
            pid = stable_hash(problem_id, p.origin, p.model, p.sample_index, p.code)
            if pid in program_ids:
                continue
            program_ids.add(pid)
            rows["silver.programs"].append({
                "program_id": pid, "problem_id": problem_id, "origin": p.origin, "model": p.model,
                "sample_index": p.sample_index, "code": p.code, "raw_completion": p.raw_completion,
                "extraction_status": None, "reported_pass_rate": p.reported_pass_rate, "parent_program_id": None,
                "metadata": json.dumps(p.metadata) if p.metadata else None, "created_at": now, "run_id": run_id,
                "language": p.language})
            batch.text_chars += len(p.code) + len(p.raw_completion or "")
        batch.programs.append(len(program_ids))

    def take(self) -> Batch:
        """The rows added since the last take, as Arrow (the Python rows are released as they are converted)."""
        import pyarrow as pa

        batch, schemas = self.batch, self.job["schemas"]
        for t, rows in self.rows.items():
            if rows:
                batch.tables[t] = _to_arrow(pa, rows, schemas[t])
        if self.test_columns["test_id"]:
            batch.tables["silver.tests"] = _columns_to_arrow(pa, self.test_columns, schemas["silver.tests"],
                                                             self.job["run_id"])
        self._start()
        return batch


def convert_records(job: dict, records) -> Iterator[Batch]:
    """Yield a :class:`Batch` for every ~BATCH_TEXT characters of ``records`` ((line, record) pairs, in order)."""
    converter = Converter(job)
    for line, rec in records:
        converter.add(line, rec)
        del rec
        if converter.batch.text_chars >= BATCH_TEXT:
            yield converter.take()
    if converter.rows["bronze.raw_records"]:
        yield converter.take()


def text_digest(text: str | None) -> str | None:
    """sha256 of a string's UTF-8 bytes, encoded 1 MiB at a time (no second full-size copy)."""
    if text is None:
        return None
    step = 1 << 20
    if len(text) <= step:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    h = hashlib.sha256()
    for i in range(0, len(text), step):
        h.update(text[i:i + step].encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _elide(value, known: dict):
    """A bulky column for bronze: long strings -> {"$elided": sha256, "chars": n}; nested values keep their shape.
    ``known``: id(string) -> its digest, for the strings already hashed as tests (each is hashed once)."""
    if isinstance(value, str):
        return value if len(value) <= ELIDE_CHARS else \
            {"$elided": "sha256:" + (known.get(id(value)) or text_digest(value)), "chars": len(value)}
    if isinstance(value, list):
        if set(map(type, value)) <= {str} and max(map(len, value), default=0) <= ELIDE_CHARS:
            return value   # a list of short strings (many tiny tests) is kept as it is, without a call per item
        return [_elide(v, known) for v in value]
    if isinstance(value, dict):
        return {k: _elide(v, known) for k, v in value.items()}
    return value


def _digests(tests: list) -> tuple[list[tuple], dict]:
    """[(kind, code digest, input digest, expected digest)] of a problem's tests (sha256 of each text, None for
    none), and {id(text): digest} of its texts longer than ELIDE_CHARS (bronze elides those: each is hashed once)."""
    sha256, columns, known = hashlib.sha256, [], {}
    for name in _TEXTS:
        texts = list(map(attrgetter(name), tests))
        longest = max(map(len, filter(None, texts)), default=0)
        if longest == 0 and "" not in texts:
            columns.append([None] * len(texts))   # e.g. no test has code: nothing to hash
            continue
        digests = [None if x is None else sha256(x.encode("utf-8", "surrogatepass")).hexdigest() for x in texts] \
            if longest <= 1 << 20 else list(map(text_digest, texts))
        columns.append(digests)
        if longest > ELIDE_CHARS:
            known.update((id(x), d) for x, d in zip(texts, digests) if len(x or "") > ELIDE_CHARS)
    return list(zip(map(attrgetter("kind"), tests), *columns)), known


def _test_ids(problem_id: str, digests: list[tuple]) -> list[str]:
    """stable_hash(problem_id, ordinal, kind, code_digest, input_digest) of each test, its JSON written directly
    (hex ids, an int and a kind of TEST_FORMATS need no escaping): the same ids at a fraction of the cost."""
    sha256, head = hashlib.sha256, f'["{problem_id}",'
    quoted = [["null" if d is None else f'"{d}"' for d in column] for column in list(zip(*digests))[1:3]]
    return [sha256(f'{head}{o},"{k}",{c},{i}]'.encode()).hexdigest()[:16]
            for o, (k, c, i) in enumerate(zip(map(itemgetter(0), digests), *quoted))]


def _visibility(statement: str, t) -> str:
    """factory.ingest.visibility's verdict, but 'hidden' without normalising (most of the ingest's CPU, and ~10
    copies of a 20 MB input) for a test far larger than the statement or a stdio test whose input or output
    provably is not in it."""
    if len(t.input or "") + len(t.expected or "") + len(t.code or "") > 16 * len(statement) + 65536:
        return "hidden"
    if t.kind == "stdio" and t.input is not None and (_not_in(statement, t.expected) or _not_in(statement, t.input)):
        return "hidden"
    return visibility(statement, t.kind, t.code, t.input, t.expected)


_DROPPED = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f0."   # the only ASCII characters normalise() removes
_WORD = re.compile(r"(?<![.0-9A-Za-z])[0-9A-Za-z]+")    # kept by normalise() as its lower case (not after a '.')


def _not_in(statement: str, text: str | None) -> bool:
    """True only when normalise(text) cannot occur in the normalised ``statement`` (stdio visibility needs both the
    input and the output there): for ASCII text, normalise() maps every character to one, except whitespace, '0'
    and '.', which it may drop, so its result is at least the rest long; and a run of letters and digits not after
    a '.' (other than 'none') is in its result as its lower case. Anything else: False (the full rule decides)."""
    if text is None or not text.isascii():
        return False
    first = _WORD.search(text, 0, 1024)   # most often decides alone (a tiny test's output is one word)
    if first is not None:
        if (word := first.group().lower()) != "none" and word not in statement:
            return True
        if any(w not in statement for w in map(str.lower, _WORD.findall(text, first.end(), 1024)) if w != "none"):
            return True
    return len(text) > len(statement) and len(text) - sum(map(text.count, _DROPPED)) > len(statement)


def _to_arrow(pa, rows: list, schema, slice_chars: int = 8 << 20):
    """``rows`` -> one Arrow table, converted ~``slice_chars`` of text at a time; each slice's Python rows are
    released once converted (the list is emptied), so a write batch's text is held about once, not twice."""
    parts, start, chars = [], 0, 0
    bulky = [c for c in schema.names if c in PAYLOAD_COLUMNS]   # the columns whose text counts
    texts = itemgetter(*bulky) if len(bulky) > 1 else lambda row: (row[bulky[0]],)
    for i in range(len(rows)):
        chars += sum(map(len, filter(None, texts(rows[i]))))
        if chars >= slice_chars or i == len(rows) - 1:
            parts.append(pa.Table.from_pylist(rows[start:i + 1], schema=schema))
            rows[start:i + 1] = [None] * (i + 1 - start)   # the slice's strings are freed now
            start, chars = i + 1, 0
    rows.clear()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _columns_to_arrow(pa, columns: dict, schema, run_id: str, slice_chars: int = 8 << 20):
    """silver.tests columns -> one Arrow table in ``schema``; the text columns are converted ~``slice_chars`` at a
    time and each slice's Python strings released once converted (as :func:`_to_arrow` does for rows). Empties
    ``columns``."""
    from bisect import bisect_right
    from itertools import accumulate

    n = len(columns["test_id"])
    arrays = {"origin": pa.array(["dataset"] * n, pa.string()), "run_id": pa.array([run_id] * n, pa.string())}
    for name in list(columns):
        values, kind = columns[name], schema.field(name).type
        columns[name] = []
        if name not in _TEXTS:
            arrays[name] = pa.array(values, kind)
            continue
        longest, chunks, start = max(map(len, filter(None, values)), default=0), [], 0
        ends = list(accumulate(len(v) if v else 0 for v in values)) if longest > 1 << 16 else None
        while start < n:   # slices of ~slice_chars: by row count when no text is long, else by running length
            stop = min(n, start + max(1, slice_chars // max(1, longest))) if ends is None else \
                max(start + 1, bisect_right(ends, (ends[start - 1] if start else 0) + slice_chars))
            chunks.append(pa.array(values[start:stop], kind))
            values[start:stop] = [None] * (stop - start)   # the slice's strings are freed now
            start = stop
        arrays[name] = pa.chunked_array(chunks, kind)
    return pa.table([arrays[f.name] for f in schema], schema=schema)
