"""`factory execute` commits by time, not by program count (#35): a real SIGINT to the running CLI loses at most
--commit-every seconds of finished work, however large --batch-programs is."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone

from factory.stages.execute import next_batch_size
from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake
from tests.lakeutil import query as q

PROGRAMS = 200
WORK_CPU_S = 0.3    # CPU seconds each program spends: the run's length scales with the load, not the machine's speed
COMMIT_EVERY = 10.0


def test_next_batch_size_follows_the_measured_rate():
    assert next_batch_size(8, 2.0, 60, 500) == 120        # 4 programs/s for 30 s
    assert next_batch_size(8, 200.0, 60, 500) == 1        # slower than the target: one program at a time
    assert next_batch_size(8, 0.01, 60, 500) == 500       # capped by --batch-programs
    assert next_batch_size(0, 0.0, 60, 500) == 500


def test_sigint_loses_at_most_commit_every_seconds(tmp_path):
    src = tmp_path / "slow.jsonl"
    src.write_text("".join(json.dumps({
        "id": f"s{i}", "q": f"Return {i} after some work.", "t": [f"assert f() == {i}"],
        "s": f"import time\n\ndef f():\n    t0 = time.process_time()\n    while time.process_time() - t0 < {WORK_CPU_S}:\n"
             f"        pass\n    return {i}\n"}) + "\n"
        for i in range(PROGRAMS)))
    lake = init_lake(tmp_path / "lake")
    ingest_source("jsonl", [src], lake=lake, mapping={"id": "id", "question": "q", "tests": "t", "solution": "s"})

    # --batch-programs 1000: counted batches would hold every program in one transaction (an interrupt loses all)
    cmd = [sys.executable, "-m", "factory.cli", "execute", "--lake", str(lake), "--cpu-s", "20",
           "--batch-programs", "1000", "--commit-every", str(COMMIT_EVERY)]
    def default_signals():   # as a user's shell starts it: an ignored or blocked SIGINT would survive exec
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    log = (tmp_path / "execute.log").open("w+")   # a file, not a pipe: progress output never blocks the CLI
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, preexec_fn=default_signals)
    commits = "SELECT count(*) FROM ops.runs WHERE stage = 'execute' AND status = 'success'"
    deadline = time.monotonic() + 300
    while q(lake, commits)[0][0] < 3:
        assert proc.poll() is None, (tmp_path / "execute.log").read_text()[-2000:]
        assert time.monotonic() < deadline, "no three commits within 300 s"
        time.sleep(0.2)
    time.sleep(COMMIT_EVERY * 0.8)   # well into a batch
    assert proc.poll() is None, "the run finished before the interrupt: nothing was tested"
    sent = datetime.now(timezone.utc).replace(tzinfo=None)
    os.kill(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("no exit within 120 s of SIGINT") from None
    err = (tmp_path / "execute.log").read_text()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err and "Traceback" not in err, err[-2000:]

    last, runs = q(lake, "SELECT max(finished_at), count(*) FROM ops.runs WHERE stage = 'execute' "
                         "AND status = 'success'")[0]
    done = q(lake, "SELECT count(DISTINCT program_id) FROM silver.executions")[0][0]
    lost_s = (sent - last).total_seconds()
    print(f"\nSIGINT after {runs} commits ({done}/{PROGRAMS} programs committed): work lost {lost_s:.1f} s "
          f"(--commit-every {COMMIT_EVERY:g})")
    assert 0 < done < PROGRAMS and runs >= 3
    assert lost_s <= COMMIT_EVERY, f"{lost_s:.1f} s of finished work lost (> {COMMIT_EVERY} s)"

    resumed = subprocess.run(cmd[:-1] + ["60"], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    rows = q(lake, "SELECT count(*), count(DISTINCT program_id), bool_and(status = 'pass') FROM silver.executions")
    assert rows[0] == (PROGRAMS, PROGRAMS, True)
