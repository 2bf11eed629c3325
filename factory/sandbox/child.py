"""Code that runs inside the sandbox (process G, pid 1 of its namespace) and the test loops.

Protocol: JSON lines on fd 3 (never stdout): ``L`` program loaded, ``X`` load failed,
``S`` test i started, ``R`` test i result (raw values / exception, never a verdict for equality
tests), ``E`` all done.  Anything missing (early exit, crash, kill) is judged by the zygote.
"""
from __future__ import annotations

import atexit

import builtins
import gc
import json
import os
import signal
import sys
import time
import traceback

from .serialize import _type_name, deserialize_value, serialize_value

RES_FD = 3
ACK_FD = 5
_write = os.write
_dumps = json.dumps


_OWNER = [None]


_HELD: list = []


def send(msg: dict, hold: bool = False) -> None:
    """Write one protocol line; ``hold`` keeps it for the next send (one write and one wake-up of the
    zygote for e.g. ``R`` + next ``S``). Only hold right before a send that no user code precedes."""
    if _OWNER[0] is not None and os.getpid() != _OWNER[0]:
        return  # a fork of the runner (user code) must not speak for it
    _HELD.append(_dumps(msg, ensure_ascii=False) + "\n")
    if hold:
        return
    data = "".join(_HELD).encode("utf-8", "surrogatepass")
    _HELD.clear()
    view = memoryview(data)
    while view:
        n = _write(RES_FD, view)
        view = view[n:]


def fresh_stdio() -> None:
    """Real-fd text streams like the interpreter's own (``.buffer``, ``.mode``, ``fileno()``)."""
    sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def flush_stdio() -> None:
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            s.flush()
        except BaseException:  # noqa: BLE001
            pass


def exc_info(e: BaseException, filename: str | None = None) -> dict:
    try:
        msg = str(e)[:2000]
    except BaseException:  # noqa: BLE001
        msg = "<unprintable>"
    where = None
    try:
        for fr in traceback.extract_tb(e.__traceback__):
            if filename is None or fr.filename == filename:
                where = f"{fr.filename}:{fr.lineno}"
    except BaseException:  # noqa: BLE001
        pass
    if isinstance(e, SystemExit):
        msg = f"SystemExit({msg}) raised during test"
    return {"etype": _type_name(e), "emsg": msg, "where": where, "mem": isinstance(e, MemoryError)}


def _namespace(name: str) -> dict:
    return {"__name__": name, "__builtins__": builtins, "__file__": "/tmp/main.py"}


# ---------------------------------------------------------------- function-style tests
def run_func(job: dict, start: int) -> None:
    ns = _namespace("__sandbox__")  # not __main__: demo blocks of completions must not run
    try:
        exec(compile(job["program"], "<program>", "exec"), ns)
    except BaseException as e:  # noqa: BLE001
        flush_stdio()
        send({"t": "X", **exc_info(e)})
        return
    flush_stdio()
    send({"t": "L"}, hold=True)
    cap = job["limits"]["max_output_bytes"]
    for t in job["tests"][start:]:
        send({"t": "S", "i": t["i"]})
        expects: list = []
        ns["__sbx_expect__"] = lambda k, v, _e=expects: _e.append([k, serialize_value(v)])
        msg = {"t": "R", "i": t["i"], "ok": True}
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            if t["kind"] == "call":
                fn = eval(job["entry_point"], ns)
                value = fn(*deserialize_value(t["input"]))  # tagged JSON: tuples, sets, complex stay typed
                msg["value"] = serialize_value(value)
                if len(msg["value"]) > cap:
                    msg = {"t": "R", "i": t["i"], "ok": False, "etype": "OutputLimit",
                           "emsg": "returned value too large", "output_limit": True}
            elif t["kind"] == "assert":
                exec(compile(t["code"], "<test>", "exec"), ns)
            else:  # check
                exec(compile(t["code"], "<test>", "exec"), ns)
                cand = eval(job["entry_point"], ns)
                ns["check"](cand)
        except BaseException as e:  # noqa: BLE001
            msg.update(ok=False, **exc_info(e))
        msg["cpu"], msg["wall"] = time.process_time() - c0, time.perf_counter() - w0
        msg["expects"] = expects
        flush_stdio()
        send(msg, hold=True)
    send({"t": "E"})


# ---------------------------------------------------------------- stdin/stdout tests
def _exit_code(e: SystemExit) -> int:
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xFF
    try:
        sys.stderr.write(f"{c}\n")
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _run_script(code) -> int:
    fresh_stdio()
    atexit._clear()  # this forked child only runs the program's own exit handlers
    ns = _namespace("__main__")
    try:
        exec(code, ns)
        rc = 0
    except SystemExit as e:
        rc = _exit_code(e)
    except BaseException:  # noqa: BLE001
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
        rc = 1
    try:  # as at interpreter exit: programs that buffer output often write it from an atexit handler
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        rc = rc or 1
    flush_stdio()
    atexit._clear()
    try:  # ... then __main__ goes away: its cyclic garbage is collected with the globals still intact, so
        del ns  # finalizers such as IOBase.__del__ -> flush() write what FastIO-style wrappers buffered
        gc.collect()
    except BaseException:  # noqa: BLE001
        pass
    flush_stdio()
    return rc


def _reap_strays(pidns: bool, pid: int) -> None:
    try:
        if pidns:
            os.kill(-1, signal.SIGKILL)  # pid 1 of the namespace: every other process in it
        else:
            os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def run_stdio(job: dict, start: int, pidns: bool) -> None:
    try:
        code = compile(job["program"], "<program>", "exec")
    except BaseException as e:  # noqa: BLE001
        send({"t": "X", **exc_info(e)})
        return
    send({"t": "L"})
    for t in job["tests"][start:]:
        fd = os.memfd_create("stdin")
        data = (t["input"] or "").encode("utf-8", "surrogateescape")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, 0)
        send({"t": "S", "i": t["i"]})
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                os.dup2(fd, 0)
                os.close(fd)
                os.close(RES_FD)
                os.close(ACK_FD)
                rc = _run_script(code)
            finally:
                os._exit(locals().get("rc", 1))
        os.close(fd)
        w0 = time.perf_counter()
        _, status, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - w0
        _reap_strays(pidns, pid)
        send({"t": "R", "i": t["i"], "ok": True, "status": status, "cpu": ru.ru_utime + ru.ru_stime,
              "wall": wall, "maxrss_kb": ru.ru_maxrss})
        if not os.read(ACK_FD, 1):
            return
    send({"t": "E"})


# ---------------------------------------------------------------- pytest / unittest files
class _PytestCollector:
    def __init__(self):
        self.subs = []

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.outcome != "passed" and report.when == "setup") or (
                report.outcome == "failed" and report.when == "teardown"):
            err = None
            if report.outcome != "passed":
                try:
                    err = str(report.longreprtext)[-1500:]
                except BaseException:  # noqa: BLE001
                    err = "?"
            self.subs.append([report.nodeid.split("::", 1)[-1], report.outcome, err])

    def pytest_collectreport(self, report):
        if report.outcome == "failed":
            self.subs.append(["<collect>", "error", str(report.longreprtext)[-1500:]])


def run_pytest(job: dict, start: int) -> None:
    sys.dont_write_bytecode = True
    with open("solution.py", "w") as f:
        f.write(job["program"])
    send({"t": "L"})
    for t in job["tests"][start:]:
        send({"t": "S", "i": t["i"]})
        name = f"test_sbx_{t['i']}.py"
        with open(name, "w") as f:
            f.write(t["code"] or "")
        col = _PytestCollector()
        msg = {"t": "R", "i": t["i"], "ok": True}
        try:
            import pytest
            rc = pytest.main([name, "-q", "-p", "no:cacheprovider", "--rootdir=.", "-o",
                              "addopts=", "--import-mode=prepend"], plugins=[col])
            msg["rc"] = int(rc)
        except BaseException as e:  # noqa: BLE001
            msg.update(ok=False, **exc_info(e))
        msg["subs"] = col.subs
        flush_stdio()
        send(msg)
    send({"t": "E"})


def run_unittest(job: dict, start: int) -> None:
    import unittest
    send({"t": "L"})
    for t in job["tests"][start:]:
        send({"t": "S", "i": t["i"]})
        msg = {"t": "R", "i": t["i"], "ok": True, "subs": []}
        try:
            ns = _namespace("__main__")
            exec(compile(job["program"] + "\n\n" + (t["code"] or ""), "<program>", "exec"), ns)
            suite = unittest.TestSuite()
            loader = unittest.TestLoader()
            for obj in list(ns.values()):
                if isinstance(obj, type) and issubclass(obj, unittest.TestCase) and obj is not unittest.TestCase:
                    suite.addTests(loader.loadTestsFromTestCase(obj))
            cases = list(_iter_cases(suite))  # before run(): the suite drops finished tests
            result = unittest.TestResult()
            suite.run(result)
            bad = {id(tc): ("failed", err) for tc, err in result.failures}
            bad.update({id(tc): ("error", err) for tc, err in result.errors})
            bad.update({id(tc): ("skipped", r) for tc, r in result.skipped})
            bad.update({id(tc): ("failed", "unexpected success") for tc in result.unexpectedSuccesses})
            for tc in cases:
                st, err = bad.get(id(tc), ("passed", None))
                msg["subs"].append([tc.id().split(".", 1)[-1], st, err and str(err)[-1500:]])
        except BaseException as e:  # noqa: BLE001
            msg.update(ok=False, **exc_info(e))
        flush_stdio()
        send(msg)
    send({"t": "E"})


def _iter_cases(suite):
    for x in suite:
        if hasattr(x, "__iter__"):
            yield from _iter_cases(x)
        else:
            yield x


def main(job: dict, start: int, plan: dict) -> None:
    """Entry in G after isolation setup; never returns normally (the zygote sees the exit)."""
    _OWNER[0] = os.getpid()
    fresh_stdio()
    mode = job["mode"]
    if mode == "stdio":
        run_stdio(job, start, bool(plan.get("worker_ns")))
    elif mode == "pytest":
        run_pytest(job, start)
    elif mode == "unittest":
        run_unittest(job, start)
    else:
        run_func(job, start)
    flush_stdio()
