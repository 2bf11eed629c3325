"""Helpers shared by the sandbox tests (plain module: tests/ is not a package)."""
from __future__ import annotations

from factory.sandbox import Limits

FAST = Limits(cpu_s=0.5, wall_factor=4.0, wall_min_s=2.0, memory_mb=256, max_procs=32,
              max_open_files=64, max_file_mb=8, tmpfs_mb=32, max_output_bytes=8 << 20)


def run(pool, jobs):
    """Run jobs; return {(program_id, test_id): Verdict}."""
    return {(v.program_id, v.test_id): v for v in pool.run(jobs)}
