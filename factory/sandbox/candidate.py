"""Code that runs in the candidate's process: the program and nothing that judges it.

* :func:`serve_program` -- function-style tests: load the program as module ``solution`` (a real module in
  ``sys.modules``, so multiprocessing can pickle its functions), then answer the judge's RPC (:mod:`.rpc`).
  The process holds no test, no expected value and no channel to the zygote; its only outputs are RPC
  replies (data) and stdout/stderr.
* :func:`run_script` -- stdin/stdout tests: the program as a real ``__main__`` module, one process per test;
  the zygote reads stdout and the exit status itself, and the trusted parent compares.
* :func:`run_unittest_in_process` -- BigCodeBench-style ``unittest`` files that inspect objects no plain data
  can carry (DataFrames, axes): test and program share this process, so the verdict is marked
  ``judged_in_process`` by the parent.
"""
from __future__ import annotations

import atexit
import builtins
import contextlib
import gc
import signal
import sys
import traceback
import types

from .rpc import PROGRAM_MODULE, Server, dumps, exception_info, serve, write_frame

RPC_R, RPC_W = 3, 4


def fresh_stdio() -> None:
    """Real-fd text streams like the interpreter's own (``.buffer``, ``.mode``, ``fileno()``)."""
    sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def flush_stdio() -> None:
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(BaseException):
            s.flush()


def default_signals() -> None:
    """A program starts with the dispositions a fresh interpreter has (the zygote ignores several)."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGQUIT,
                signal.SIGCHLD):
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _module(name: str, filename: str) -> types.ModuleType:
    """A fresh module for the program; the process looks like `python FILENAME` started it (``sys.argv`` is
    ``[FILENAME]``, never the sandbox's own arguments, so ``fileinput.input()`` reads stdin)."""
    sys.argv = [filename]
    with contextlib.suppress(AttributeError, TypeError):
        sys.orig_argv = [sys.executable, filename]
    mod = types.ModuleType(name)
    mod.__file__ = filename
    mod.__builtins__ = builtins
    sys.modules[name] = mod
    return mod


def serve_program(program: str) -> None:
    fresh_stdio()
    ns = _module(PROGRAM_MODULE, "/tmp/solution.py").__dict__
    try:
        code = compile(program, "<program>", "exec")
        del program
        exec(code, ns)
    except BaseException as e:  # noqa: BLE001
        flush_stdio()
        write_frame(RPC_W, dumps({"ok": False, "exc": exception_info(e)}))
        return
    flush_stdio()
    server = Server(ns, set(), RPC_R, RPC_W)
    write_frame(RPC_W, dumps({"ok": True}))   # names are looked up when the tests use them
    serve(server, RPC_R, RPC_W, flush_stdio)


def _exit_code(e: SystemExit) -> int:
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xFF
    with contextlib.suppress(BaseException):
        sys.stderr.write(f"{c}\n")
    return 1


def run_script(program: str) -> int:
    """Run ``program`` as ``__main__`` (stdin is fd 0); returns the exit code, like the interpreter."""
    fresh_stdio()
    atexit._clear()  # this forked child only runs the program's own exit handlers
    try:
        code = compile(program, "<program>", "exec")
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        flush_stdio()
        return 1
    del program
    ns = _module("__main__", "/tmp/main.py").__dict__
    try:
        exec(code, ns)
        rc = 0
    except SystemExit as e:
        rc = _exit_code(e)
    except BaseException:  # noqa: BLE001
        with contextlib.suppress(BaseException):
            traceback.print_exc()
        rc = 1
    try:  # as at interpreter exit: programs that buffer output often write it from an atexit handler
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        rc = rc or 1
    flush_stdio()
    atexit._clear()
    with contextlib.suppress(BaseException):  # ... then __main__ goes away: its cyclic garbage is collected
        sys.modules.pop("__main__", None)  # with the globals still intact, so finalizers such as IOBase.__del__
        del ns                              # -> flush() write what FastIO wrappers buffered
        gc.collect()
    flush_stdio()
    return rc


def run_unittest_in_process(job: dict, start: int) -> None:
    import unittest

    from .judge import _exc, report
    report(b"I")
    report(b"L")
    for t in job["tests"][start:]:
        report(b"S", t["i"])
        msg = {"ok": True, "subs": []}
        try:
            ns = _module("__main__", "/tmp/main.py").__dict__
            exec(compile(job["program"] + "\n\n" + (t["code"] or ""), "<program>", "exec"), ns)
            suite = unittest.TestSuite()
            loader = unittest.TestLoader()
            for obj in list(ns.values()):
                if isinstance(obj, type) and issubclass(obj, unittest.TestCase) and obj is not unittest.TestCase:
                    suite.addTests(loader.loadTestsFromTestCase(obj))
            cases = list(_iter_cases(suite))  # before run(): the suite drops finished tests
            result = unittest.TestResult()
            suite.run(result)
            bad = {id(tc): (st, err) for st, pairs in (("failed", result.failures), ("error", result.errors),
                                                       ("skipped", result.skipped)) for tc, err in pairs}
            bad.update({id(tc): ("failed", "unexpected success") for tc in result.unexpectedSuccesses})
            for tc in cases:
                st, err = bad.get(id(tc), ("passed", None))
                msg["subs"].append([tc.id().split(".", 1)[-1], st, err and str(err)[-1500:]])
        except BaseException as e:  # noqa: BLE001
            msg.update(ok=False, **_exc(e))
        flush_stdio()
        report(b"R", t["i"], dumps(msg))
    report(b"E")


def _iter_cases(suite):
    for x in suite:
        if hasattr(x, "__iter__"):
            yield from _iter_cases(x)
        else:
            yield x


__all__ = ["serve_program", "run_script", "run_unittest_in_process", "default_signals", "fresh_stdio",
           "flush_stdio"]
