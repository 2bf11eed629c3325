"""Per-test metering in the zygote: CPU (cgroup or /proc), wall time, peak memory and OOM kills, and the
limit check that turns them (and the output cap) into a timeout/output reason."""
from __future__ import annotations

import contextlib
import os
import select
import time

from .spawn import exit_status, open_pidfd
from .zygote_io import router_of


class Meter:
    """CPU (cgroup or /proc), wall time and peak memory of the current test, and :meth:`check` of ``lim``'s budgets:
    CPU seconds, the wall backstop, and ``speed`` (CPU seconds one wall second can hold)."""

    def __init__(self, z, pids, lim: dict):
        self.z, self.pids, self.lim = z, pids, lim
        self.cpu_budget, self.wall_budget = lim["cpu_s"], max(lim["wall_factor"] * lim["cpu_s"], lim["wall_min_s"])
        self.speed = 1.0 if (z.slot and "cpu" in z.slot.controllers) else float(os.cpu_count() or 1)
        self.reset()

    def cpu_s(self) -> float:
        if self.z.slot:
            return self.z.slot.cpu_ns() / 1e9
        total = 0.0
        for pid in self.pids:
            with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{pid}/stat") as f:
                total += sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:15]) / os.sysconf("SC_CLK_TCK")
        return total

    def peak_kb(self):
        v = self.z.slot.peak_bytes() if self.z.slot else None
        return None if v is None else v // 1024

    def reset(self):
        self.t0, self.c0 = time.monotonic(), self.cpu_s()
        self.mark_t, self.mark_cpu = self.t0, 0.0   # when the test's processes last used CPU
        self.oom0 = self.z.slot.oom_kills() if self.z.slot else 0
        if self.z.slot:
            self.z.slot.reset_peak()

    def used(self):
        cpu, now = self.cpu_s() - self.c0, time.monotonic()
        if cpu > self.mark_cpu + IDLE_CPU_S:
            self.mark_t, self.mark_cpu = now, cpu
        return cpu, now - self.t0

    def idle_s(self) -> float:
        """Seconds since the test's processes last made progress (used CPU): a program that blocks, stops
        itself or its judge, or leaves the judge waiting on a half-written frame makes none."""
        return time.monotonic() - self.mark_t

    def oom(self) -> bool:
        return bool(self.z.slot and self.z.slot.oom_kills() > self.oom0)

    def numbers(self) -> dict:
        cpu, wall = self.used()
        return {"cpu_ms": cpu * 1000, "wall_ms": wall * 1000, "peak_kb": self.peak_kb()}

    def check(self, st: dict):
        """(reason, seconds to wait): 'timeout' past the CPU budget, the wall backstop, or when the test made no
        progress (no CPU used) for the CPU budget plus a grace -- so no wait on a program, whatever it writes or
        whatever it stops, outlasts its own budget by more than the grace; 'output' past the cap."""
        used_cpu, used_wall = self.used()
        idle_left = self.cpu_budget + IDLE_GRACE_S - self.idle_s()
        if used_cpu > self.cpu_budget or used_wall > self.wall_budget or idle_left <= 0:
            return "timeout", 0.0
        if st["total"] > self.lim["max_output_bytes"]:
            return "output", 0.0
        cpu_wait = (self.cpu_budget - used_cpu) / self.speed
        return None, max(0.002, min(self.wall_budget - used_wall, cpu_wait, idle_left, 1.0))


IDLE_GRACE_S = 1.0    # a test whose processes use no CPU for its CPU budget + this is stalled: a timeout
IDLE_CPU_S = 0.001    # CPU that counts as progress


def watch(z, pid: int, streams: list, st: dict, lim: dict) -> tuple[str | None, int | None, Meter]:
    """Run the lone process ``pid`` to its end within ``lim``'s budgets, forwarding each ``(fd, idx, i, stream)``
    (capped by ``st``) to the pool: (reason -- None, 'timeout', 'output' or 'parent' when the pool closed --,
    its wait status, its meter)."""
    pidfd, router, meter = open_pidfd(pid), router_of(z), Meter(z, [pid], lim)
    reason, status, eofs = None, None, set()
    try:
        while True:
            reason, wait = meter.check(st)
            if reason:
                break
            rd = [s[0] for s in streams if s[0] not in eofs] + [fd for fd in (pidfd, z.ctl_in) if fd is not None]
            ready, _, _ = select.select(rd, [], [], wait)
            if z.ctl_in in ready:
                reason = "parent"
                break
            for fd, idx, i, stream in streams:
                if fd in ready and fd not in eofs and router.pump(fd, idx, i, stream, st):
                    eofs.add(fd)
            status = exit_status(pid, pidfd, ready)
            if status is not None:
                break
        for fd, idx, i, stream in streams:
            router.pump(fd, idx, i, stream, st)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    if reason is None and st["total"] > lim["max_output_bytes"]:
        reason = "output"
    return reason, status, meter
