"""Ctrl-C through a real pseudo-terminal: `factory execute` stops within seconds, keeps the committed batches,
rolls back the one in flight, says how to resume, and resuming finishes the work with no duplicate verdict."""
from __future__ import annotations

import json
import os
import pty
import select
import signal
import sys
import time

import pytest

from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

PROGRAMS, BATCH = 60, 6


@pytest.fixture()
def slow_lake(tmp_path):
    src = tmp_path / "slow.jsonl"
    src.write_text("".join(json.dumps({
        "id": f"s{i}", "q": f"Return {i} after some work.", "t": [f"assert f() == {i}"],
        "s": f"def f():\n    n = 0\n    for _ in range(4_000_000):\n        n += 1\n    return {i}\n"}) + "\n"
        for i in range(PROGRAMS)))
    lake = init_lake(tmp_path / "lake")
    ingest_source("jsonl", [src], lake=lake, mapping={"id": "id", "question": "q", "tests": "t", "solution": "s"})
    return lake


def _drive(lake, send, wait_for_rows: int) -> tuple[int, float, str, int]:
    """Run `factory execute` on a pty; once the lake holds >= wait_for_rows verdicts, `send` (b'\\x03' typed
    on the terminal, or a signal number); returns (exit code, seconds from the signal to exit, output, pid)."""
    env = dict(os.environ, FACTORY_LAKE=str(lake))
    pid, fd = pty.fork()
    if pid == 0:  # child: the real CLI with the pty as its controlling terminal
        # a user's shell starts it with default dispositions; an ignore inherited from the test process (which a
        # library loaded by an earlier test may have set) would survive exec and make the CLI keep ignoring ^C
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})   # a blocked mask survives exec too
        os.execve(sys.executable, [sys.executable, "-m", "factory.cli", "execute", "--batch-programs", str(BATCH),
                                   "--commit-every", "1", "--cpu-s", "10",
                                   # one worker: the run lasts >= PROGRAMS x one program's time on a machine of
                                   # any size, so the signal lands mid-run (16 workers on CI finished 60 programs
                                   # before the poll saw the first batch)
                                   "--workers", "1"], env)
    out, sent, start = b"", None, time.monotonic()
    while True:
        if sent is None and q(lake, "SELECT count(*) FROM silver.executions")[0][0] >= wait_for_rows:
            if isinstance(send, bytes):
                os.write(fd, send)
            else:
                os.kill(pid, send)
            sent = time.monotonic()
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        if time.monotonic() - start > 240:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"no exit within 240 s; output:\n{out.decode(errors='replace')[-2000:]}")
    _, status = os.waitpid(pid, 0)
    assert sent is not None, out.decode(errors="replace")[-2000:]
    return os.waitstatus_to_exitcode(status), time.monotonic() - sent, out.decode(errors="replace"), pid


@pytest.mark.parametrize("send", [b"\x03", signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_one_interrupt_stops_execute_and_resume_finishes(slow_lake, send):
    code, seconds, out, cli = _drive(slow_lake, send, wait_for_rows=BATCH)
    assert code == 130, out[-2000:]
    assert seconds < 10, f"took {seconds:.1f} s to stop"
    assert "interrupted: execute stopped by" in out and "Run the same command again to resume" in out
    assert "Traceback" not in out
    done = q(slow_lake, "SELECT count(*), count(DISTINCT program_id) FROM silver.executions")[0]
    # committed work or nothing of it: each committed program with its verdict, the commit in flight rolled back
    assert done[0] == done[1] and BATCH <= done[0] < PROGRAMS
    runs = q(slow_lake, "SELECT count(*), sum(json_extract(config, '$.programs')::INT) FROM ops.runs "
                        "WHERE stage = 'execute'")[0]
    assert runs[0] >= 1 and runs[1] == done[0]
    # no sandbox process outlives the run
    time.sleep(0.5)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_orphan_zygote(p, cli)]
    from factory.stages.execute import execute
    from factory.sandbox import Limits
    report = execute(slow_lake, limits=Limits(cpu_s=10, memory_mb=1024))   # the CLI's limits: same hash
    assert report.programs == PROGRAMS - done[0]
    assert q(slow_lake, "SELECT count(*), count(DISTINCT program_id), bool_and(status = 'pass') "
                        "FROM silver.executions") == [(PROGRAMS, PROGRAMS, True)]


def _is_orphan_zygote(pid: str, cli: int) -> bool:
    """A sandbox zygote left by the CLI process: still its child, or orphaned (re-parented to init)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return b"factory.sandbox.zygote import main" in cmd and ppid in (1, cli)
