"""Whole-run progress when output is piped: plain periodic lines with count, percentage, rate and ETA."""
from __future__ import annotations

import io
import time

from factory.progress import Progress


def test_piped_progress_prints_count_rate_and_eta_once_per_interval():
    out = io.StringIO()   # not a tty: no bar, plain lines
    p = Progress(10, "execute", "test", every_s=0.05, file=out)
    for _ in range(4):
        p.update()
    time.sleep(0.06)
    p.update()   # 5/10 after the interval: one line
    for _ in range(5):
        p.update()
    p.close()
    p.close()    # closing twice prints nothing more
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("execute: 5/10 tests (50%)") and "ETA 0:00:0" in lines[0] and "/s" in lines[0]
    assert lines[-1].startswith("execute: 10/10 tests (100%)") and "ETA" not in lines[-1]
    assert len(lines) == 2


def test_unknown_total_and_disabled():
    out = io.StringIO()
    p = Progress(None, "sample", "problem", every_s=0, file=out)
    p.update(3)
    p.close()
    assert out.getvalue().splitlines()[0].startswith("sample: 3 problems")
    quiet = io.StringIO()
    q = Progress(5, "x", enabled=False, file=quiet)
    q.update(5)
    q.close()
    assert quiet.getvalue() == ""
