"""Per-test metering in the zygote: CPU (cgroup or /proc), wall time, peak memory and OOM kills, and the
limit check that turns them (and the output cap) into a timeout/output reason."""
from __future__ import annotations

import os
import time

class Meter:
    """CPU (cgroup or /proc), wall time and peak memory of the current test."""

    def __init__(self, z, pids):
        self.z, self.pids = z, pids
        self.reset()

    def cpu_s(self) -> float:
        if self.z.slot:
            return self.z.slot.cpu_ns() / 1e9
        total = 0.0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
        return total

    def peak_kb(self):
        if self.z.slot:
            v = self.z.slot.peak_bytes()
            return None if v is None else v // 1024
        return None

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


def budgets(z):
    lim = z.limits
    speed = 1.0 if (z.slot and "cpu" in z.slot.controllers) else float(os.cpu_count() or 1)
    return lim["cpu_s"], max(lim["wall_factor"] * lim["cpu_s"], lim["wall_min_s"]), speed


IDLE_GRACE_S = 1.0    # a test whose processes use no CPU for its CPU budget + this is stalled: a timeout
IDLE_CPU_S = 0.001    # CPU that counts as progress


def check_limits(meter, st: dict, lim: dict, cpu_budget: float, wall_budget: float, speed: float):
    """(reason, seconds to wait): 'timeout' past the CPU budget, the wall backstop, or when the test made no
    progress (no CPU used) for the CPU budget plus a grace -- so no wait on a program, whatever it writes or
    whatever it stops, outlasts its own budget by more than the grace; 'output' past the cap."""
    used_cpu, used_wall = meter.used()
    idle_left = cpu_budget + IDLE_GRACE_S - meter.idle_s()
    if used_cpu > cpu_budget or used_wall > wall_budget or idle_left <= 0:
        return "timeout", 0.0
    if st["total"] > lim["max_output_bytes"]:
        return "output", 0.0
    return None, max(0.002, min(wall_budget - used_wall, (cpu_budget - used_cpu) / speed, idle_left, 1.0))
