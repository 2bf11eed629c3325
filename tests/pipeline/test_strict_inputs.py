"""Strict inputs (#35): a stage refuses what it cannot build on and says what to run or type instead - unknown
names list the valid ones, curate before execute names the execute to run, a missing Ray cluster or a missing
`scale` extra is one clear line - and nothing is written to the lake by a refused command."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake
from tests.lakeutil import query as q


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    lake = init_lake(tmp_path_factory.mktemp("strict") / "lake")
    ingest_source("humaneval", None, lake=lake)
    return lake


def _cli(*args, lake=None, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("FACTORY_LAKE", "RAY_ADDRESS")} | env
    cmd = [sys.executable, "-m", "factory.cli", *args] + (["--lake", str(lake)] if lake else [])
    return subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=300)


def _snapshots(lake) -> int:
    return q(lake, "SELECT count(*) FROM ops.runs")[0][0]


@pytest.mark.parametrize("args, message", [
    (["execute", "--source", "mbp"], "unknown source 'mbp'; the lake's sources: humaneval"),
    (["execute", "--select", "samples", "--model", "gpt9"],
     "unknown model 'gpt9'; the lake's models: none yet (run `factory sample` first)"),
    (["checkers", "--source", "humaneva"], "unknown source 'humaneva'; the lake's sources: humaneval"),
    (["mutate", "--source", "mbpp"], "unknown source 'mbpp'; the lake's sources: humaneval"),
    (["execute", "--engine", "ray", "--ray-address", "127.0.0.1:9"],
     "--engine ray: no Ray cluster at --ray-address '127.0.0.1:9'"),
])
def test_unknown_names_and_missing_services_are_one_clear_line(lake, args, message):
    before = _snapshots(lake)
    out = _cli(*args, lake=lake)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines == [f"error: {lines[0][len('error: '):]}"] and message in lines[0], out.stderr[-2000:]
    assert _snapshots(lake) == before


def test_unknown_recipe_lists_the_recipes(lake):
    out = _cli("recipe", "show", "deepcoderr")
    assert out.returncode == 2 and "unknown recipe 'deepcoderr'; known: " in out.stderr
    assert "deepcoder" in out.stderr.split("known: ", 1)[1] and "skywork-or1" in out.stderr


def test_curate_before_execute_names_the_execute_to_run(lake):
    out = _cli("curate", lake=lake)
    assert out.returncode == 0, out.stderr[-2000:]
    assert ("curate: humaneval: 164 of 164 references never executed" in out.stderr
            and "run `factory execute --select reference --source humaneval` first" in out.stderr), out.stderr
    # never-executed train problems are held out (humaneval is a benchmark: its rows are test split only)
    train = q(lake, """SELECT count(*) FROM gold.rl_problems r JOIN silver.programs p USING (problem_id)
                       WHERE r.split = 'train' AND p.origin = 'reference' AND NOT EXISTS
                       (SELECT 1 FROM silver.executions e WHERE e.program_id = p.program_id)""")[0][0]
    assert train == 0


def _can_download_extensions() -> bool:
    try:
        socket.create_connection(("extensions.duckdb.org", 80), timeout=3).close()
        return True
    except OSError:
        return False


def test_postgres_catalog_without_the_scale_extra_names_the_extra(tmp_path):
    if _can_download_extensions():
        pytest.skip("DuckDB would download the postgres extension here: the missing-extra path is not reachable")
    code = ("import sys; sys.modules['duckdb_extension_postgres'] = None\n"   # as if the scale extra were absent
            "from factory.cli import main; sys.exit(main(sys.argv[1:]))")
    lake = tmp_path / "pg"
    out = subprocess.run([sys.executable, "-c", code, "init", "--lake", str(lake), "--catalog",
                          "postgres:dbname=factory host=127.0.0.1 port=9"], capture_output=True, text=True,
                         env=dict(os.environ, HOME=str(tmp_path)), timeout=120)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "pip install 'code-rl-factory[scale]'" in out.stderr and "Traceback" not in out.stderr
    assert not lake.exists(), "a refused init leaves nothing behind"
