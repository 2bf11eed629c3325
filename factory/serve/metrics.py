"""Counters and latency windows of the verifier service, rendered in the Prometheus text format."""
from __future__ import annotations

import threading
import time
from collections import Counter, deque

WINDOW_S = 60.0
# programs taken back from the engine: client gone (disconnected / timed out) before or after they started;
# not started before a /run_code deadline (answered 504); started ones run out with their verdicts dropped
CANCEL_COUNTERS = ("client_gone_queued", "client_gone_running", "expired_queued", "abandoned_finished")


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Metrics:
    def __init__(self):
        self.lock = threading.Lock()
        self.started = time.time()
        self.counters: Counter = Counter()
        self.statuses: Counter = Counter()           # verdict status -> count
        self.responses: Counter = Counter()          # (endpoint, http code) -> count
        self.latency: dict[str, deque] = {}          # endpoint -> (time, seconds) of recent requests
        self.program_latency: deque = deque(maxlen=8192)
        self.done_times: deque = deque(maxlen=100_000)   # completion times of programs, for the rate
        self.verdict_times: deque = deque(maxlen=100_000)

    def count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counters[name] += n

    def program_done(self, ticket) -> None:
        now = time.monotonic()
        with self.lock:
            self.done_times.append(now)
            for v in ticket.verdicts:
                self.statuses[v.status] += 1
                self.verdict_times.append(now)
            if ticket.error:
                self.statuses["server_error"] += 1
            self.program_latency.append((ticket.finished or now) - ticket.submitted)

    def request_done(self, endpoint: str, code: int, seconds: float) -> None:
        with self.lock:
            self.responses[(endpoint, code)] += 1
            self.latency.setdefault(endpoint, deque(maxlen=4096)).append((time.monotonic(), seconds))

    def _rate(self, times: deque) -> float:
        now = time.monotonic()
        recent = [t for t in times if now - t <= WINDOW_S]
        if not recent:
            return 0.0
        return len(recent) / max(1.0, min(WINDOW_S, now - recent[0]))

    def programs_per_s(self) -> float:
        with self.lock:
            return self._rate(self.done_times)

    def snapshot(self, queue_depth: int = 0, pools: int = 0, workers: int = 0, ready: bool = True,
                 waiting: int = 0) -> dict:
        with self.lock:
            lat = {ep: [s for _, s in d] for ep, d in self.latency.items()}
            prog = list(self.program_latency)
            return {
                "uptime_s": round(time.time() - self.started, 1), "ready": ready, "queue_depth": queue_depth,
                "waiting": waiting, "pools": pools, "workers": workers,
                "cancelled": {k: self.counters.get(k, 0) for k in CANCEL_COUNTERS},
                "verdicts_per_s": round(self._rate(self.verdict_times), 2),
                "programs_per_s": round(self._rate(self.done_times), 2),
                "statuses": dict(self.statuses), "counters": dict(self.counters),
                "responses": {f"{ep} {code}": n for (ep, code), n in self.responses.items()},
                "latency_s": {ep: {"p50": round(_quantile(v, 0.5), 4), "p99": round(_quantile(v, 0.99), 4),
                                   "n": len(v)} for ep, v in lat.items()},
                "program_latency_s": {"p50": round(_quantile(prog, 0.5), 4), "p99": round(_quantile(prog, 0.99), 4)},
            }

    def prometheus(self, **state) -> str:
        s = self.snapshot(**state)
        out = [
            "# HELP factory_verifier_queue_depth Programs admitted and not finished (waiting or running).",
            "# TYPE factory_verifier_queue_depth gauge", f"factory_verifier_queue_depth {s['queue_depth']}",
            "# HELP factory_verifier_waiting Programs admitted and not started (cancellable).",
            "# TYPE factory_verifier_waiting gauge", f"factory_verifier_waiting {s['waiting']}",
            "# TYPE factory_verifier_ready gauge", f"factory_verifier_ready {int(s['ready'])}",
            "# TYPE factory_verifier_workers gauge", f"factory_verifier_workers {s['workers']}",
            "# TYPE factory_verifier_pools gauge", f"factory_verifier_pools {s['pools']}",
            "# HELP factory_verifier_verdicts_per_second Verdicts finished per second over the last 60 s.",
            "# TYPE factory_verifier_verdicts_per_second gauge",
            f"factory_verifier_verdicts_per_second {s['verdicts_per_s']}",
            "# TYPE factory_verifier_verdicts_total counter",
        ]
        out += [f'factory_verifier_verdicts_total{{status="{k}"}} {v}' for k, v in sorted(s["statuses"].items())]
        out.append("# HELP factory_verifier_cancelled_total Programs taken back: client gone before start "
                   "(queued) or while running (running), not started by a /run_code deadline (expired_queued), "
                   "abandoned programs that ran to their end (abandoned_finished).")
        out.append("# TYPE factory_verifier_cancelled_total counter")
        out += [f'factory_verifier_cancelled_total{{reason="{k}"}} {v}' for k, v in s["cancelled"].items()]
        out.append("# TYPE factory_verifier_events_total counter")
        out += [f'factory_verifier_events_total{{event="{k}"}} {v}' for k, v in sorted(s["counters"].items())]
        out.append("# TYPE factory_verifier_responses_total counter")
        with self.lock:
            responses = dict(self.responses)
        out += [f'factory_verifier_responses_total{{endpoint="{ep}",code="{code}"}} {n}'
                for (ep, code), n in sorted(responses.items())]
        out.append("# HELP factory_verifier_request_seconds Request latency over the last 4096 requests.")
        out.append("# TYPE factory_verifier_request_seconds summary")
        for ep, q in sorted(s["latency_s"].items()):
            out.append(f'factory_verifier_request_seconds{{endpoint="{ep}",quantile="0.5"}} {q["p50"]}')
            out.append(f'factory_verifier_request_seconds{{endpoint="{ep}",quantile="0.99"}} {q["p99"]}')
            out.append(f'factory_verifier_request_seconds_count{{endpoint="{ep}"}} {q["n"]}')
        out.append("# TYPE factory_verifier_program_seconds summary")
        out.append(f'factory_verifier_program_seconds{{quantile="0.5"}} {s["program_latency_s"]["p50"]}')
        out.append(f'factory_verifier_program_seconds{{quantile="0.99"}} {s["program_latency_s"]["p99"]}')
        return "\n".join(out) + "\n"
