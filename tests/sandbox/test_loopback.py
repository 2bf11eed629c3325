"""A program's own loopback (Job.own_network, what SandboxFusion's /run_code gives every run): it can serve and
connect on 127.0.0.1 inside its own network namespace, each test in a fresh one (a port a test left listening
or in TIME_WAIT is not there for the next); without it a program has no network at all."""
from __future__ import annotations

import pytest

from factory.sandbox import Job, Limits, SandboxPool, TestSpec

ECHO = """
import socket, sys, threading
port = int(sys.stdin.read())
srv = socket.socket()
srv.bind(("127.0.0.1", port))       # no SO_REUSEADDR: a TIME_WAIT left on this port would make it fail
srv.listen(1)
def serve():
    c, _ = srv.accept()
    c.sendall(b"echo:" + c.recv(16))
    c.close()                         # the server closes first: its side of the connection enters TIME_WAIT
threading.Thread(target=serve, daemon=True).start()
cli = socket.create_connection(("127.0.0.1", port), timeout=5)
cli.sendall(b"hi")
print(cli.recv(32).decode())
"""


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(Limits(cpu_s=5.0, wall_min_s=10.0), workers=1) as p:
        yield p


def test_own_loopback_per_test_and_none_without(pool):
    tests = [TestSpec(f"t{k}", "stdio", input="45678", expected="echo:hi") for k in range(3)]   # same port 3 times
    own = list(pool.run([Job("own", ECHO, tests, own_network=True, stop_at_timeout=False)]))
    assert [v.status for v in own] == ["pass"] * 3, [(v.status, v.stderr[-300:]) for v in own]
    none = list(pool.run([Job("none", ECHO, tests[:1])]))
    assert none[0].status == "runtime_error" and ("Errno 99" in none[0].stderr or "Errno 101" in none[0].stderr
                                                 or "unreachable" in none[0].stderr), none[0].stderr[-300:]
