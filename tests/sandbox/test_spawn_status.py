"""spawn.exit_status: a child's wait status, with and without a pidfd."""
from __future__ import annotations

import os
import select
import time

from factory.sandbox.spawn import exit_status


def _exited_child(code: int) -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(code)
    return pid


def _poll(pid: int, pidfd: int | None) -> int | None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ready = select.select([pidfd], [], [], 0.05)[0] if pidfd is not None else []
        status = exit_status(pid, pidfd, ready)
        if status is not None:
            return status
        time.sleep(0.01)
    return None


def test_exit_status_without_pidfd_keeps_the_status():
    """No pidfd (a kernel without pidfd_open): polling must not reap the child and lose its status."""
    pid = _exited_child(7)
    assert os.waitstatus_to_exitcode(_poll(pid, None)) == 7


def test_exit_status_with_pidfd():
    pid = _exited_child(5)
    pidfd = os.pidfd_open(pid)
    try:
        assert exit_status(pid, pidfd, []) is None   # its pidfd not (yet) among the ready ones
        assert os.waitstatus_to_exitcode(_poll(pid, pidfd)) == 5
    finally:
        os.close(pidfd)


def test_exit_status_of_a_running_child_is_none():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(r, 1)
        os._exit(0)
    try:
        assert exit_status(pid, None, []) is None
    finally:
        os.write(w, b"x")
        os.waitpid(pid, 0)
        os.close(r)
        os.close(w)
