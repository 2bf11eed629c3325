"""MB-sized stdin and stdout through the sandbox (issue #41, goal 3): time and peak RSS against the size.

    python bench/sandbox_big_io.py pool  [--sizes 1,5,20,50]     # SandboxPool API: echo + sum programs
    python bench/sandbox_big_io.py serve [--sizes 1,5,20,50]     # the same through `factory serve` /run_code
    python bench/sandbox_big_io.py both --out bench/results/sandbox_big_io.json

Each size runs in a fresh process (pool mode) or against a fresh server (serve mode), after a warm-up job, so the
peak RSS figures are that size's alone: the trusted parent's (the pool: building the batch, collecting the
output, comparing it) and the zygote's (it must never hold the bytes: stdin is spliced into a memfd, stdout is
spliced to the pool). ``echo`` writes its stdin back (stdout = stdin, compared token by token against the
expected text = the input, as CodeContests / TACO tests are); ``echo_diff`` expects the input with its last byte
changed (must fail, and compares token by token: the slow path); ``sum`` reads it and prints one number. The
program's own process is not counted (it holds what it reads). Linear = time and RSS per MB flat across sizes.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ECHO = "import sys\nsys.stdout.buffer.write(sys.stdin.buffer.read())\n"
SUM = "import sys\nprint(sum(map(int, sys.stdin.buffer.read().split())))\n"


def make_input(mb: float) -> str:
    """About ``mb`` MiB of integers, one per line (a CodeContests-style big test)."""
    block = "".join(f"{(i * 7919) % 1000000007}\n" for i in range(100_000))   # ~0.95 MB
    n = int(mb * (1 << 20))
    text = block * (n // len(block) + 1)
    cut = text.rfind("\n", 0, n) + 1
    return text[:cut]


def expected_sum(text: str) -> str:
    return f"{sum(map(int, text.split()))}\n"


def _vm(pid, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_hwm(pid) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def child_pool(mb: float) -> None:
    """(child process) One size through SandboxPool: echo and sum; prints JSON."""
    from factory.sandbox import Job, Limits, SandboxPool, TestSpec

    text = make_input(mb)
    total = expected_sum(text)
    cap = int(len(text) * 1.5) + (1 << 20)
    limits = Limits(cpu_s=60.0, memory_mb=4096, max_output_bytes=cap, wall_factor=3.0, wall_min_s=30.0)
    out = {"mb": mb, "input_bytes": len(text)}
    with SandboxPool(limits, workers=1) as pool:
        zyg = pool.workers[0].proc.pid
        list(pool.run([Job("warm", ECHO, [TestSpec("t", "stdio", input="1 2\n", expected="1 2\n",
                                                   comparison="token")])]))
        diff = text[:-2] + ("1" if text[-2] != "1" else "2") + "\n"   # one byte different, at the very end
        for name, code, expected in (("sum", SUM, total), ("echo", ECHO, text), ("echo_diff", ECHO, diff)):
            job = Job(name, code, [TestSpec("t", "stdio", input=text, expected=expected, comparison="token")])
            _reset_hwm("self")
            _reset_hwm(zyg)
            base, zbase = _vm("self", "VmRSS"), _vm(zyg, "VmRSS")
            t0 = time.perf_counter()
            verdicts = list(pool.run([job]))
            wall = time.perf_counter() - t0
            del job, expected
            v = verdicts[0]
            out[name] = {"status": v.status, "error": v.error_type, "wall_s": round(wall, 3),
                         "program_wall_s": round(v.wall_ms / 1000, 3), "program_cpu_s": round(v.cpu_ms / 1000, 3),
                         "parent_peak_mb": round((_vm("self", "VmHWM") - base) / 2 ** 20, 1),
                         "zygote_peak_mb": round((_vm(zyg, "VmHWM") - zbase) / 2 ** 20, 1)}
    print(json.dumps(out))


def run_pool(sizes: list[float]) -> list[dict]:
    rows = []
    for mb in sizes:
        r = subprocess.run([sys.executable, __file__, "child-pool", str(mb)], capture_output=True, text=True,
                           cwd=ROOT, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(r.stderr[-3000:])
        row = json.loads(r.stdout.strip().splitlines()[-1])
        rows.append(row)
        for name in ("sum", "echo", "echo_diff"):
            x = row[name]
            print(f"pool  {mb:>5g} MB {name:9s}: {x['status']:6s} wall {x['wall_s']:6.2f} s (program "
                  f"{x['program_wall_s']:.2f} s), parent peak +{x['parent_peak_mb']:.0f} MB "
                  f"({x['parent_peak_mb'] / mb:.2f} x), zygote +{x['zygote_peak_mb']:.0f} MB", flush=True)
    return rows


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict, timeout: float = 600) -> dict:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def run_serve(sizes: list[float]) -> list[dict]:
    """Each size against a fresh `factory serve` (1 worker): /run_code with the sum and echo programs; the
    server process's peak RSS (its HWM reset before each request) and the request's round trip."""
    rows = []
    for mb in sizes:
        port = _free_port()
        body_mb = max(16, int(mb * 3) + 8)
        proc = subprocess.Popen([sys.executable, "-m", "factory.cli", "serve", "--port", str(port), "--workers", "1",
                                 "--max-body-mb", str(body_mb)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(600):
                try:
                    urllib.request.urlopen(url + "/ready", timeout=2).read()
                    break
                except OSError:
                    if proc.poll() is not None:
                        raise RuntimeError(proc.stderr.read().decode()[-3000:])
                    time.sleep(0.2)
            _post(url + "/run_code", {"code": ECHO, "language": "python", "stdin": "1 2\n"})
            text = make_input(mb)
            total = expected_sum(text)
            row = {"mb": mb, "input_bytes": len(text)}
            for name, code in (("sum", SUM), ("echo", ECHO)):
                _reset_hwm(proc.pid)
                base = _vm(proc.pid, "VmRSS")
                t0 = time.perf_counter()
                res = _post(url + "/run_code", {"code": code, "language": "python", "stdin": text,
                                                "run_timeout": 60})
                wall = time.perf_counter() - t0
                stdout = (res.get("run_result") or {}).get("stdout") or ""
                ok = res["status"] == "Success" and (stdout == total if name == "sum" else stdout == text)
                row[name] = {"status": res["status"], "correct": ok, "message": res.get("message"),
                             "factory_status": (res.get("factory") or {}).get("status"), "wall_s": round(wall, 3),
                             "server_peak_mb": round((_vm(proc.pid, "VmHWM") - base) / 2 ** 20, 1)}
                x = row[name]
                print(f"serve {mb:>5g} MB {name:4s}: {x['status']:7s} correct={ok} wall {wall:6.2f} s, server "
                      f"peak +{x['server_peak_mb']:.0f} MB ({x['server_peak_mb'] / mb:.2f} x)"
                      + (f" [{x['factory_status']}: {x['message']}]" if not ok else ""), flush=True)
            rows.append(row)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["pool", "serve", "both", "child-pool"])
    ap.add_argument("size", nargs="?", type=float)
    ap.add_argument("--sizes", type=lambda t: [float(x) for x in t.split(",")], default=[1, 5, 20, 50])
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.mode == "child-pool":
        return child_pool(args.size)
    res = {"load": os.getloadavg()[0], "cpus": os.cpu_count()}
    if args.mode in ("pool", "both"):
        res["pool"] = run_pool(args.sizes)
    if args.mode in ("serve", "both"):
        res["serve"] = run_serve(args.sizes)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
