"""What an ingest run reports and checks, shared by the file adapters (`factory ingest`) and the streamed Hub
ingest (factory.ingest.hub): the per-source result and its per-file lines, a normalized record's validation, and
the counts of a source already in the lake."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from factory.answers.checks import ANSWER_RULES
from factory.ingest.normalize import COMPARISONS, TEST_FORMATS, Normalized, input_error

if TYPE_CHECKING:
    from factory.lake.commit import StageRun


@dataclass
class IngestResult:
    source: str
    status: str  # ingested | unchanged
    problems: int
    tests: int
    programs: int
    raw_records: int
    run_id: str | None
    duplicates: int = 0  # records identical to an earlier one (same id and content), kept in bronze only
    file_splits: dict | None = None  # file name -> {split: problems}: what split each ingested file got
    skipped: list | None = None  # (file, why): files in a --path folder this ingest did not read as records

    def file_lines(self) -> list[str]:
        """One line per file: what it became (source, split(s), problems, benchmark role), or why it was skipped."""
        lines = []
        for f, counts in (self.file_splits or {}).items():
            splits = ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
            lines.append(f"{f} -> {self.source}: {sum(counts.values())} problems ({splits}); "
                         f"benchmark: {benchmark_role(self.source, counts)}")
        lines += [f"{f}: skipped ({why})" for f, why in self.skipped or ()]
        return lines


def benchmark_role(source: str, splits: dict) -> str:
    """How decontamination treats a source's rows: a default benchmark source (every check, text included), a
    test split (a train problem sharing a test or a lineage id with it is contaminated), or neither."""
    from factory.lake.templating import DEFAULT_BENCHMARKS

    if source in DEFAULT_BENCHMARKS:
        return "yes (a default decontamination benchmark)"
    tests = splits.get("test", 0)
    if tests and tests == sum(splits.values()):
        return "test split (shared-test and lineage checks; name it with decontam --benchmark for the text check)"
    return f"no ({tests} test-split rows: shared-test and lineage checks)" if tests else "no"


def validate(norm: Normalized, ctx: tuple[str, int]) -> None:
    if norm.test_format not in TEST_FORMATS:
        raise input_error(ctx, f"unknown test format {norm.test_format!r} (known: {', '.join(TEST_FORMATS)})",
                          "test_format")
    if not norm.tests:
        raise input_error(ctx, "problem has no tests", "tests")
    for t in norm.tests:
        if t.kind not in TEST_FORMATS:
            raise input_error(ctx, f"unknown test kind {t.kind!r}", "tests")
        if t.comparison not in (ANSWER_RULES if t.kind == "answer" else COMPARISONS):
            raise input_error(ctx, f"unknown {'answer rule' if t.kind == 'answer' else 'comparison'} {t.comparison!r}"
                              + (f" (known: {', '.join(ANSWER_RULES)})" if t.kind == "answer" else ""), "tests")
        if t.kind == "answer" and not (t.expected and t.expected.strip()):
            raise input_error(ctx, "empty answer", "tests")
        if t.kind in ("assert", "check", "pytest", "unittest", "harness") and not (t.code and t.code.strip()):
            raise input_error(ctx, f"empty {t.kind} test", "tests")


def source_counts(run: "StageRun", source: str) -> tuple[int, int, int, int]:
    return run.con.execute(
        "SELECT (SELECT count(*) FROM silver.problems WHERE source = $s), "
        "(SELECT count(*) FROM silver.tests JOIN silver.problems USING (problem_id) WHERE source = $s), "
        "(SELECT count(*) FROM silver.programs JOIN silver.problems USING (problem_id) WHERE source = $s), "
        "(SELECT count(*) FROM bronze.raw_records WHERE source = $s)", {"s": source}).fetchone()


def file_splits(run: "StageRun", source: str) -> dict:
    """file -> {split: problems} of a source already in the lake (from bronze: one raw record per problem)."""
    out: dict = {}
    for f, split, n in run.con.execute(
            "SELECT r.file, coalesce(p.split, 'unsplit'), count(DISTINCT p.problem_id) FROM bronze.raw_records r "
            "JOIN silver.problems p USING (source, source_id) WHERE r.source = ? GROUP BY ALL ORDER BY ALL",
            [source]).fetchall():
        out.setdefault(f, {})[split] = n
    return out
