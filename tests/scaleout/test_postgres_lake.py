"""A lake whose DuckLake catalog is a real PostgreSQL server: two `factory execute --shard i/2` processes commit
into it at the same time, every verdict lands exactly once and equals the single-writer SQLite lake's, and time
travel and `factory sql` work on it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from factory.stages.execute import execute
from factory.stages.ingest import ingest_source
from factory.sandbox import Limits
from tests.lakeutil import init_lake
from tests.lakeutil import query as q
from tests.scaleout.conftest import conninfo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], cwd=ROOT, capture_output=True, text=True)


def test_two_sharded_writers_commit_into_one_postgres_lake(postgres, tmp_path):
    pytest.importorskip("duckdb_extension_postgres")
    postgres["createdb"]("lake_two_writers")
    lake = tmp_path / "pglake"
    r = cli("init", "--lake", str(lake), "--catalog", conninfo(postgres, "lake_two_writers"),
            "--data-path", str(tmp_path / "pgdata"))
    assert r.returncode == 0, r.stderr
    cfg = json.loads((lake / "lake.json").read_text())
    assert cfg["catalog"].startswith("postgres:") and not (lake / "catalog.sqlite").exists()
    assert cli("ingest", "humaneval", "--lake", str(lake)).returncode == 0
    assert cli("mutate", "--lake", str(lake), "--max-per-program", "1").returncode == 0

    args = ["execute", "--lake", str(lake), "--select", "all", "--cpu-s", "0.5", "--batch-programs", "40",
            "--commit-every", "1", "--workers", "1", "--no-expected"]   # commits at least every second of work
    procs = [subprocess.Popen([sys.executable, "-m", "factory.cli", *args, "--shard", f"{i}/2"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]

    rows = q(lake, "SELECT count(*), count(DISTINCT (program_id, test_id)) FROM silver.executions")[0]
    expected = q(lake, "SELECT count(*) FROM silver.programs JOIN silver.tests USING (problem_id)")[0][0]
    assert rows[0] == rows[1] == expected          # every (program, test) exactly once
    commits = q(lake, "SELECT count(*) FROM ops.runs WHERE stage = 'execute'")[0][0]
    assert commits >= 2 * 3                        # both writers committed several batches each

    # the same verdicts as one writer on a local SQLite lake
    local = init_lake(tmp_path / "sqlite")
    ingest_source("humaneval", None, lake=local)
    from factory.stages.mutate import run_mutate
    run_mutate(local, ["humaneval"], max_per_program=1)
    execute(local, selection="all", limits=Limits(cpu_s=0.5), fill_expected=False)
    sql = "SELECT program_id, test_id, status FROM silver.executions ORDER BY ALL"
    assert q(lake, sql) == q(local, sql)

    # time travel: the snapshot before the first execute commit has no verdicts
    first = q(lake, "SELECT min(snapshot_id) FROM ducklake_snapshots('lake') WHERE commit_message LIKE '%execute%'")
    r = cli("sql", "--lake", str(lake), "--snapshot", str(first[0][0] - 1), "--format", "csv",
            "SELECT count(*) AS n FROM silver.executions")
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "0", r.stderr


def _rule_row(recipe: str, removed: int) -> dict:
    return {"recipe": recipe, "position": 1, "rule": "clean", "kind": "clean", "stage": None, "params": "{}",
            "source": "test", "candidates": 10, "removed": removed, "remaining": 10 - removed, "recipe_hash": "h"}


def test_conflicting_commits_are_retried_on_the_new_state(postgres, tmp_path):
    """Two writers replace rows of one table at once (two recipes on a PostgreSQL catalog): DuckLake refuses the
    second commit (a transaction conflict), run_stage re-runs that writer's body on the new state, and both
    writers' rows land exactly once; the retry is counted in ops.runs."""
    import threading

    from factory.lake.commit import run_stage

    postgres["createdb"]("lake_conflicts")
    lake = tmp_path / "pglake"
    assert cli("init", "--lake", str(lake), "--catalog", conninfo(postgres, "lake_conflicts"),
               "--data-path", str(tmp_path / "pgdata")).returncode == 0
    run_stage("seed", {}, lambda run: run.write("gold.recipe_rules", [_rule_row("a", 0), _rule_row("b", 0)]),
              lake=lake)
    a_wrote, b_committed = threading.Event(), threading.Event()
    attempts = {"a": [], "b": []}

    def body_a(run):
        attempts["a"].append(run.commit_retries)
        run.delete("gold.recipe_rules", "recipe = ?", ["a"])
        run.write("gold.recipe_rules", [_rule_row("a", 1)])
        if run.commit_retries == 0:
            a_wrote.set()
            assert b_committed.wait(120)   # commit only after B: A's first commit must conflict
        return run.commit_retries

    def body_b(run):
        attempts["b"].append(run.commit_retries)
        assert a_wrote.wait(120)
        run.delete("gold.recipe_rules", "recipe = ?", ["b"])
        run.write("gold.recipe_rules", [_rule_row("b", 2)])
        return run.commit_retries

    result = {}
    thread = threading.Thread(target=lambda: result.update(a=run_stage("writer_a", {}, body_a, lake=lake,
                                                                      backoff_s=0.05)))
    thread.start()
    result["b"] = run_stage("writer_b", {}, body_b, lake=lake)
    b_committed.set()
    thread.join(180)
    assert result == {"a": 1, "b": 0} and attempts == {"a": [0, 1], "b": [0]}
    assert q(lake, "SELECT recipe, removed FROM gold.recipe_rules ORDER BY recipe") == [("a", 1), ("b", 2)]
    messages = dict(q(lake, "SELECT stage, message FROM ops.runs WHERE stage LIKE 'writer_%'"))
    assert "commit retries after conflicts: 1" in messages["writer_a"] and "retries" not in (messages["writer_b"] or "")
