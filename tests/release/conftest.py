"""Fixtures for release/export/report tests: a real lake (HumanEval + MBPP-sanitized, later APPS) and two releases.

Timeline of the session lake (each step one snapshot or more):
  ingest humaneval + mbpp-sanitized, write a few gold.rm_pairs rows  -> release r1
  ingest apps (stdio problems)                                       -> release r2
  delete the rm_pairs rows (a later stage changing a released table)
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from factory.stages.ingest import ingest_source
from factory.release import create_release
from factory.lake.commit import stage_run
from tests.lakeutil import factory_cli, init_lake  # noqa: F401  (re-exported to the release tests)

VIEWS = ["gold.rl_problems", "gold.rm_pairs"]


def add_pairs(lake: Path, n: int = 6) -> list[str]:
    """Write n preference pairs through stage_run: a HumanEval reference (chosen) vs a stub returning None."""
    from factory.lake import connect

    con = connect(lake, read_only=True)
    refs = con.execute("""
        SELECT p.problem_id, p.source, p.question, p.entry_point, g.program_id, g.code
        FROM silver.programs g JOIN silver.problems p USING (problem_id)
        WHERE g.origin = 'reference' AND p.source = 'humaneval' ORDER BY p.problem_id LIMIT ?""", [n]).fetchall()
    con.close()
    rows = []
    for problem_id, source, question, entry, program_id, code in refs:
        rejected = f"def {entry}(*args):\n    return None\n"
        rejected_id = hashlib.sha256(rejected.encode()).hexdigest()[:16]
        rows.append({"pair_id": hashlib.sha256(f"{program_id}:{rejected_id}".encode()).hexdigest()[:16],
                     "problem_id": problem_id, "source": source, "model": "reference+stub", "prompt": question,
                     "chosen": code, "rejected": rejected, "chosen_program_id": program_id,
                     "rejected_program_id": rejected_id, "chosen_pass_rate": 1.0, "rejected_pass_rate": 0.0})
    with stage_run("curate", {"test": "pairs"}, lake=lake) as run:
        run.write("gold.rm_pairs", rows)
    return [r["pair_id"] for r in rows]


@dataclass
class Releases:
    lake: Path
    root: Path          # releases dir
    r1: dict            # manifests
    r2: dict
    pair_ids: list[str]
    apps_problems: int   # APPS problems ingested
    apps_rl_rows: int    # ... of which have a hidden test (the RL rows; #31: public-only problems are left out)


@pytest.fixture(scope="session")
def releases(tmp_path_factory, shared_data) -> Releases:
    base = tmp_path_factory.mktemp("release")
    lake = init_lake(base / "lake")
    root = base / "releases"
    ingest_source("humaneval", None, lake=lake)
    ingest_source("mbpp-sanitized", [shared_data / "mbpp_sanitized" / "sanitized-mbpp.json"], lake=lake,
                  source="mbpp-sanitized")
    from factory.stages.curate import curate
    curate(lake, {})   # gold.rl_problems is a table curate writes (#40), so r1 freezes curated rows
    pair_ids = add_pairs(lake)
    r1 = create_release("r1", VIEWS, lake=lake, releases_dir=root, shard_rows=200)
    apps = ingest_source("apps", [shared_data / "apps_mapcoder150" / "selected150.jsonl"], lake=lake, source="apps")
    # APPS has no reference solution, so no test of it is validated: since #31 such train problems are held out
    # ('unvalidated'); these export tests need its stdio / call shapes, so the lake opts them in explicitly
    from factory.lake.templating import EXCLUSION_REASONS
    curate(lake, {"exclude": [r for r in EXCLUSION_REASONS if r != "unvalidated"]})
    add_pairs(lake)   # curate recomputed gold.rm_pairs (no executions here): the same pairs again
    r2 = create_release("r2", VIEWS, lake=lake, releases_dir=root, shard_rows=200)
    with stage_run("curate", {"test": "drop pairs"}, lake=lake) as run:
        run.delete("gold.rm_pairs", "true")
    from tests.lakeutil import query
    rl = query(lake, "SELECT count(*) FROM gold.rl_problems WHERE source = 'apps'")[0][0]
    return Releases(lake, root, r1, r2, pair_ids, apps.problems, rl)
