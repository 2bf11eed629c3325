"""A real `factory serve` (uvicorn, real sandbox pool) on a loopback port, started as its own process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.netutil import free_port

ROOT = Path(__file__).resolve().parents[2]


class Server:
    def __init__(self, *args: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "factory.cli", "serve", "--port", str(self.port), *args],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"factory serve exited: {self.proc.stdout.read()}")
            try:
                with urllib.request.urlopen(self.url + "/ready", timeout=2) as r:
                    if json.loads(r.read())["ready"]:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("factory serve did not become ready in 90 s")

    def stop(self, sig=signal.SIGTERM, timeout: float = 30) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.stdout.read() if self.proc.stdout else ""


@pytest.fixture(scope="session")
def server():
    s = Server("--workers", "2")
    yield s
    s.stop()


def post(url: str, body, timeout: float = 120) -> tuple[int, dict, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"{}")


os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
