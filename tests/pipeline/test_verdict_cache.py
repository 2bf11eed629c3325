"""Verdict cache (factory.judging.cache): an identical (program, tests, limits, judge version) runs once.

Real lake, real HumanEval problems, real sandbox: repeated samples (as an RL group at temperature > 0 produces)
are judged once and their verdict rows are identical to a fresh run's; a changed limit, test or judge version
misses; --no-cache / FACTORY_VERDICT_CACHE=0 runs everything; the reward's in-process LRU does the same for
trainers.
"""
from __future__ import annotations

import json

import pytest

from factory.judging import cache as vc
from factory.sandbox import Job, Limits, TestSpec
from factory.stages.execute import add_samples, execute
from factory.stages.ingest import ingest_source
from tests.lakeutil import factory_cli, init_lake
from tests.lakeutil import query as q

LIMITS = Limits(cpu_s=2.0, wall_min_s=6.0)
TASKS = ["HumanEval/0", "HumanEval/2"]
ROW_COLUMNS = ("test_id", "limits_hash", "status", "stdout", "stderr", "error_type", "error_message", "limits",
               "sandbox_version", "judged_in_process")


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vcache")
    lake = init_lake(tmp / "lake")
    ingest_source("humaneval", lake=lake)
    return lake


def _samples(lake, tmp, model: str, copies: int = 3) -> list[str]:
    """Each task's reference `copies` times plus one wrong program: what n samples of one prompt look like."""
    refs = {sid: (code, entry) for sid, code, entry in q(lake, """
        SELECT pb.source_id, p.code, pb.entry_point FROM silver.programs p JOIN silver.problems pb USING (problem_id)
        WHERE p.origin = 'reference' AND list_contains(?, pb.source_id)""", [TASKS])}
    lines = []
    for task in TASKS:
        code, entry = refs[task]
        lines += [{"task_id": task, "solution": code}] * copies
        lines.append({"task_id": task, "solution": code + f"\n\ndef {entry}(*args):\n    return None\n"})
    path = tmp / f"{model}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return add_samples(lake, path, model, "humaneval")


def _rows(lake, ids) -> dict[str, list[tuple]]:
    cols = ", ".join(ROW_COLUMNS)
    out: dict[str, list[tuple]] = {}
    for pid, *row in q(lake, f"SELECT program_id, {cols} FROM silver.executions WHERE list_contains(?, program_id) "
                             "ORDER BY program_id, test_id", [ids]):
        out.setdefault(pid, []).append(tuple(row))
    return out


def _code(lake, pid) -> str:
    return q(lake, "SELECT code FROM silver.programs WHERE program_id = ?", [pid])[0][0]


def test_repeated_programs_are_served_from_cache(lake, tmp_path):
    first_ids = _samples(lake, tmp_path, "m1")
    report = execute(lake, selection="samples", program_ids=first_ids, limits=LIMITS, fill_expected=False)
    stats = report.cache
    assert stats.jobs == 8 and stats.hits == 0
    assert stats.misses == 4 and stats.batch_duplicates == 4      # 2 distinct programs per task, run once each
    assert q(lake, "SELECT count(*) FROM silver.verdict_cache")[0][0] == 4
    rows = _rows(lake, first_ids)
    assert len(rows) == 8
    by_code: dict[str, list] = {}
    for pid, r in rows.items():
        by_code.setdefault(_code(lake, pid), []).append(r)
    assert len(by_code) == 4
    for same in by_code.values():                                  # duplicates carry the same verdict rows
        assert all(r == same[0] for r in same)
    statuses = {s for r in rows.values() for (_, _, s, *_) in r}
    assert statuses >= {"pass", "fail"}

    # the same programs sampled again (another model name: new program ids): nothing runs
    again_ids = _samples(lake, tmp_path, "m2")
    assert not set(again_ids) & set(first_ids)
    report = execute(lake, selection="samples", program_ids=again_ids, limits=LIMITS, fill_expected=False)
    assert report.cache.hits == 8 and report.cache.misses == 0 and report.cache.saved_cpu_s > 0
    again = _rows(lake, again_ids)
    assert sorted(again.values()) == sorted(rows.values())         # identical verdict rows
    summary = q(lake, "SELECT message FROM ops.runs WHERE run_id = ?", [report.runs[-1]])
    assert summary and "8 hits" in summary[0][0]


def test_changed_limit_misses_and_no_cache_bypasses(lake, tmp_path):
    ids = _samples(lake, tmp_path, "m3")
    execute(lake, selection="samples", program_ids=ids, limits=LIMITS, fill_expected=False)
    other = Limits(cpu_s=3.0, wall_min_s=6.0)
    report = execute(lake, selection="samples", program_ids=ids, limits=other, fill_expected=False)
    assert report.cache.hits == 0 and report.cache.misses == 4    # new limits: a new key for every job
    # bypass: a fresh model's copies of the same programs all run, nothing is read or written
    ids = _samples(lake, tmp_path, "m4")
    entries = q(lake, "SELECT count(*) FROM silver.verdict_cache")[0][0]
    proc = factory_cli("execute", "--select", "samples", "--model", "m4", "--cpu-s", "2", "--no-expected",
                       "--no-cache", lake=lake)
    assert proc.returncode == 0, proc.stderr
    assert "verdict cache" not in proc.stdout and "programs executed: 8" in proc.stdout
    assert q(lake, "SELECT count(*) FROM silver.verdict_cache")[0][0] == entries
    assert q(lake, "SELECT count(*) FROM silver.executions WHERE list_contains(?, program_id)", [ids])[0][0] == 40


def test_judge_version_and_every_key_part_must_match(lake, tmp_path, monkeypatch):
    ids = _samples(lake, tmp_path, "m7")
    execute(lake, selection="samples", program_ids=ids, limits=LIMITS, fill_expected=False)
    # another judge (a sandbox release or source change) invalidates every entry
    monkeypatch.setattr(vc, "_JUDGE_VERSION", vc.judge_version() + "-next")
    ids = _samples(lake, tmp_path, "m8")
    report = execute(lake, selection="samples", program_ids=ids, limits=LIMITS, fill_expected=False)
    assert report.cache.hits == 0 and report.cache.misses == 4


def test_key_covers_program_tests_limits_and_judge():
    tests = [TestSpec("t0", "assert", code="assert f(1) == 2")]
    job = Job("p", "def f(x):\n    return x + 1\n", tests, entry_point="f")
    base = vc.job_key(job, LIMITS)
    assert vc.job_key(Job("other-id", job.code, tests, entry_point="f"), LIMITS) == base   # ids are not content
    variants = [
        Job("p", job.code + "\n", tests, entry_point="f"),
        Job("p", job.code, [TestSpec("t0", "assert", code="assert f(1) == 3")], entry_point="f"),
        Job("p", job.code, [TestSpec("t0", "call", input="[1]", expected="2", checker="def check(): ...")],
            entry_point="f"),
        Job("p", job.code, tests, entry_point="f", cpu_s=1.0),
        Job("p", job.code, tests, entry_point="f", stop_at_timeout=False),
        Job("p", job.code, tests, entry_point="f", language="cpp"),
    ]
    keys = {vc.job_key(v, LIMITS).key for v in variants} | {base.key, vc.job_key(job, Limits(cpu_s=2.0)).key,
                                                             vc.job_key(job, LIMITS, "0.0.0").key}
    assert len(keys) == len(variants) + 3
    # an entry stored under the same digest but other parts is not reused
    store = vc.MemoryCache()
    store.put_many([(vc.CacheKey(base.program_sha, base.suite_sha, base.limits_hash, "forged"), [{}])])
    store._data[base.key] = store._data.pop(vc.CacheKey(base.program_sha, base.suite_sha, base.limits_hash,
                                                        "forged").key)
    assert store.get_many([base]) == {}


def test_reward_lru_serves_repeated_completions(monkeypatch):
    from factory import reward

    gt = {"inputs": [[1], [5]], "outputs": [2, 6], "fn_name": "f"}
    good, bad = "def f(x):\n    return x + 1\n", "def f(x):\n    return x\n"
    reward.VERDICT_CACHE.clear()
    before = reward.CACHE_STATS.hits + reward.CACHE_STATS.batch_duplicates
    group = [good, bad, good, good]
    assert reward.score_completions(group, [gt] * 4) == [1.0, 0.0, 1.0, 1.0]
    assert reward.CACHE_STATS.batch_duplicates + reward.CACHE_STATS.hits - before == 2
    assert len(reward.VERDICT_CACHE) == 2
    assert reward.score_completions([bad, good], [gt] * 2) == [0.0, 1.0]
    assert reward.CACHE_STATS.hits + reward.CACHE_STATS.batch_duplicates - before == 4
    # another expected output is another suite: judged afresh
    assert reward.score_completions([good], [{**gt, "outputs": [2, 7]}]) == [0.5]
    monkeypatch.setenv("FACTORY_VERDICT_CACHE", "0")
    runs = reward.CACHE_STATS.misses
    assert reward.score_completions([good, good], [gt] * 2) == [1.0, 1.0]
    assert reward.CACHE_STATS.misses - runs == 2


def test_timeouts_are_not_stored_they_depend_on_the_machines_load():
    """A program that timed out (perhaps only because the machine was busy) is judged again next time; its
    identical copies in the same call still share the verdict. Its passing twin is stored."""
    from factory.sandbox import run_jobs

    tests = [TestSpec("t0", "assert", code="assert f(1) == 2")]
    looping = "def f(x):\n    while True:\n        pass\n"
    good = "def f(x):\n    return x + 1\n"
    jobs = [Job("a", looping, tests, entry_point="f"), Job("b", looping, tests, entry_point="f"),
            Job("c", good, tests, entry_point="f")]
    limits = Limits(cpu_s=0.5, wall_min_s=3.0)
    store, stats = vc.MemoryCache(), vc.CacheStats()
    ran: list[int] = []

    def runner(batch):
        ran.append(len(batch))
        return run_jobs(batch, limits, workers=1)

    first = vc.run_cached(jobs, limits, runner, store, stats)
    assert [v.status for v in first] == ["timeout", "timeout", "pass"] and ran == [2]
    assert stats.batch_duplicates == 1 and stats.stored == 1 and len(store) == 1
    second = vc.run_cached(jobs, limits, runner, store, stats)
    assert [v.status for v in second] == ["timeout", "timeout", "pass"] and ran == [2, 1]   # the loop ran again
    assert stats.hits == 1
