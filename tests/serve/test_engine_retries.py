"""The verifier engine retries infrastructure failures itself: a sandbox zygote killed twice under a running
program (the pool restarts it once, the engine re-runs the program after the second loss) still yields the
program's real verdict, with the retry counted; nothing is reported as a failed test."""
from __future__ import annotations

import threading
import time

from factory.sandbox import Job, Limits, TestSpec
from factory.serve.engine import VerifierEngine

SLOW_OK = ("import time\ndef f(x):\n    t = time.process_time()\n    while time.process_time() - t < 1.5:\n"
           "        pass\n    return x\n")


def _kill_zygote_twice(engine: VerifierEngine, limits: Limits, stop: threading.Event) -> list[int]:
    killed: list[int] = []
    while len(killed) < 2 and not stop.is_set():
        pool = engine.pools.get(limits)
        proc = pool.pool.workers[0].proc if pool else None
        if proc is not None and proc.poll() is None and proc.pid not in killed:
            time.sleep(0.6)                       # the program is running inside it now
            if proc.poll() is None:
                proc.kill()
                killed.append(proc.pid)
        time.sleep(0.05)
    return killed


def test_a_zygote_lost_twice_is_retried_not_scored():
    limits = Limits(cpu_s=10.0, wall_min_s=20.0)
    engine = VerifierEngine(1, base_limits=limits, infra_retries=2)
    engine.warm()
    done: list = []
    finished = threading.Event()

    def on_done(ticket):
        done.append(ticket)
        finished.set()
    stop = threading.Event()
    killed: list[int] = []
    killer = threading.Thread(target=lambda: killed.extend(_kill_zygote_twice(engine, limits, stop)))
    killer.start()
    try:
        engine.admit(1)
        engine.submit([Job("slow", SLOW_OK, [TestSpec("t", "assert", code="assert f(3) == 3")], entry_point="f")],
                      limits, on_done)
        assert finished.wait(120), "the program never finished"
    finally:
        stop.set()
        killer.join(10)
        engine.drain(5)
    ticket = done[0]
    assert len(killed) == 2
    assert ticket.error is None and [v.status for v in ticket.verdicts] == ["pass"]
    assert ticket.infra_retries == 1 and engine.metrics.counters["infra_retries"] == 1
