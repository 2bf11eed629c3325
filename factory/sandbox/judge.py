"""The judge process: runs a job's test code (assert / check / call / pytest), never the program.

It is forked from the zygote and sandboxed like the candidate, but the candidate cannot reach it (another
uid, no shared descriptors but the RPC pipes).  It reaches the program only through :mod:`.rpc`, and it alone
reports to the zygote, in binary frames on fd 3 (:func:`report`): ``I`` ready, ``L`` program loaded, ``X``
load failed, ``S`` test i started, ``R`` test i result (JSON: raw values / exception; equality asserts are
still decided by the trusted parent from ``expects``), ``D`` the candidate died during test i, ``E`` done.
"""
from __future__ import annotations

import builtins
import contextlib
import os
import struct
import sys
import traceback

from .rpc import (JUDGE_MODULE, PROGRAM_DRIVEN_IMPORTS, PROGRAM_MODULE, CandidateGone, CandidateProtocolError, Client,
                  JudgeNamespace, OutputTooLarge, RemoteRef, dumps, exception_info, loads, read_frame)
from .serialize import VALUE_IMPORTS, _dumps, serialize_value
from .zygote_io import write_all

RES_FD, RPC_W, RPC_R = 3, 4, 5
CTL_FD = 6                      # a kept judge's control socket (:func:`serve_kept`)
_HDR = struct.Struct("!cII")
JOB_MSG = struct.Struct("!QQI")  # offset and length of the judge's part of the batch memfd, first test


def report(kind: bytes, i: int = 0, payload: bytes = b"") -> None:
    write_all(RES_FD, _HDR.pack(kind, i, len(payload)) + payload)


def _exc(e: BaseException) -> dict:
    info = exception_info(e)
    where = [f"{frame.f_code.co_filename}:{lineno}" for frame, lineno in traceback.walk_tb(e.__traceback__)
             if frame.f_code.co_filename in ("<test>", "<preamble>")]   # the innermost test line
    return {"etype": info["type"], "emsg": info["msg"], "where": where[-1] if where else None,
            "mem": isinstance(e, MemoryError)}


class _SolutionModule(type(sys)):
    """``import solution`` in pytest files: attributes are the program's names, fetched over RPC."""

    def __getattr__(self, name):
        ns = object.__getattribute__(self, "_judge_ns")
        if name == "__all__":  # `from solution import *`: every public name in one round trip
            found = ns.client.value(ns.client.request({"op": "getmany"}))[0]
            found = found if isinstance(found, dict) else {}
            names = [k for k in found if isinstance(k, str)]
            self.__dict__.update({k: found[k] for k in names if k not in self.__dict__}, __all__=names)
            return names
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        try:
            return ns[name]
        except KeyError:
            raise AttributeError(f"module 'solution' has no attribute {name!r}") from None


def _call_value(client: Client, reply: dict) -> str:
    """The returned value as the parent's plain tagged JSON (handles and objects become opaque)."""
    text = _dumps(reply.get("v"))
    if not reply.get("objs") and '"$h"' not in text and '"$r"' not in text:
        return text
    value, _ = client.value(reply)
    return serialize_value(value)


def main(judge_blob: bytes, start: int, limits: dict, tidy=None) -> None:
    """Judge one program.  The last frame is ``X`` (load failed) or ``E`` (done); ``tidy()``, if given, runs
    just before it and returns that frame's ``i``: 1 asks the zygote to retire this (kept) judge."""
    import pickle

    def end(kind: bytes, payload: bytes = b"") -> None:
        report(kind, tidy() if tidy else 0, payload)

    job = pickle.loads(judge_blob)
    del judge_blob
    cap = int(limits["max_output_bytes"]) + (1 << 16)
    client = Client(RPC_R, RPC_W, cap)
    report(b"I")
    try:
        first = read_frame(RPC_R, cap)
    except Exception:  # noqa: BLE001
        first = b"not a frame"
    load = None
    if first is not None:
        with contextlib.suppress(ValueError, RecursionError, UnicodeDecodeError):
            load = loads(first)
    if first is None or not isinstance(load, dict):
        why = "program exited while loading" if first is None else "program broke the judge protocol while loading"
        end(b"X", dumps({"etype": "ProcessExit", "emsg": why}))
        return
    if not load.get("ok"):
        exc = load.get("exc") if isinstance(load.get("exc"), dict) else {}
        end(b"X", dumps({"etype": str(exc.get("type", "Exception"))[:100], "emsg": str(exc.get("msg", ""))[:2000],
                               "mem": exc.get("type") == "MemoryError"}))
        return
    client.entry_name = (job.get("entry_point") or "").split("(")[0].split(".")[0] or None
    ns = JudgeNamespace(client, {"__name__": JUDGE_MODULE, "__builtins__": builtins})
    try:
        if job.get("preamble"):
            exec(compile(job["preamble"], "<preamble>", "exec"), ns)
        _register_classes(client, ns)
        if client.classes:  # only preambles that define classes (LeetCode's ListNode/TreeNode) need a round trip
            client.request({"op": "init", "struct": sorted(client.classes)})
    except CandidateGone:
        end(b"X", dumps({"etype": "ProcessExit", "emsg": "program exited while loading"}))
        return
    except BaseException as e:  # noqa: BLE001
        end(b"X", dumps({"etype": "InvalidTest", "emsg": f"test preamble failed in the judge: {e!r}"[:2000],
                               "infra": True}))
        return
    report(b"L")
    if job["mode"] == "pytest":
        _run_pytest(job, start, client, ns)
    else:
        _run_func(job, start, client, ns)
    del ns, client
    end(b"E")


def serve_kept(limits: dict) -> None:
    """A judge kept across programs of one worker (function-style tests only): one fork per program, not two.
    Per program the control socket brings where the judge's part lies in the batch memfd, that memfd and the
    program's fresh channels (stderr, report, RPC write, RPC read); :func:`main` runs on them as in a forked
    judge, then they are closed.  Between programs builtins, std streams and the recursion limit are restored;
    it exits (the zygote starts a fresh one) when test code left a thread or files in its own /tmp, when the
    program made it import a module, on any error, or when the socket closes."""
    import socket
    import threading
    os.chdir("/tmp")   # its own tmpfs (role judge-files): test code may write files, no program sees them
    tmp_listing = sorted(os.listdir("/tmp"))
    sock = socket.socket(fileno=CTL_FD)
    clean = dict(builtins.__dict__)
    streams = (sys.stdin, sys.stdout, sys.stderr)
    depth = sys.getrecursionlimit()
    null = _fd_above(os.open("/dev/null", os.O_RDWR), CTL_FD)
    while True:
        msg, fds, _, _ = socket.recv_fds(sock, JOB_MSG.size, 5)
        if len(msg) != JOB_MSG.size or len(fds) != 5:
            return
        off, length, start = JOB_MSG.unpack(msg)
        memfd, *chan = fds
        blob = os.pread(memfd, length, off)
        os.close(memfd)
        chan = [_fd_above(fd, RPC_R) for fd in chan]   # received fds may sit on 3..5: move them out first
        for target, fd in zip((2, RES_FD, RPC_W, RPC_R), chan):
            os.dup2(fd, target)
            os.close(fd)
        retire = False
        imports = PROGRAM_DRIVEN_IMPORTS[0], VALUE_IMPORTS[0]

        def tidy() -> int:
            nonlocal retire
            if builtins.__dict__ != clean:
                builtins.__dict__.clear()
                builtins.__dict__.update(clean)
            sys.stdin, sys.stdout, sys.stderr = streams
            sys.setrecursionlimit(depth)
            try:
                os.chdir("/tmp")
                wrote = sorted(os.listdir("/tmp")) != tmp_listing
            except OSError:
                wrote = True
            # test code left files or a thread behind, or the program made the judge import a module (one it
            # named, or numpy / decimal ... to rebuild a value it returned)
            retire = wrote or threading.active_count() > 1 or (PROGRAM_DRIVEN_IMPORTS[0], VALUE_IMPORTS[0]) != imports
            return int(retire)

        try:
            main(blob, start, limits, tidy)
        finally:
            del blob
            for fd in (RES_FD, RPC_W, RPC_R):
                os.close(fd)
            os.dup2(null, 2)
        if retire:
            return


def _fd_above(fd: int, low: int) -> int:
    """``fd`` moved to a number above ``low`` (the original is closed)."""
    if fd > low:
        return fd
    import fcntl
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, low + 1)
    os.close(fd)
    return moved


def _register_classes(client: Client, ns: dict) -> None:
    client.classes = {k: v for k, v in list(ns.items())
                      if isinstance(v, type) and getattr(v, "__module__", None) == JUDGE_MODULE}


def _run_func(job: dict, start: int, client: Client, ns: JudgeNamespace) -> None:
    for t in job["tests"][start:]:
        i = t["i"]
        report(b"S", i)
        expects: list = []
        ns["__sbx_expect__"] = lambda k, v, _e=expects: _e.append([k, serialize_value(v)])
        msg = {"ok": True}
        try:
            if t["kind"] == "call":
                fn = client.entry(job["entry_point"])
                if type(fn) is not RemoteRef:
                    raise TypeError(f"{job['entry_point']!r} is not callable in the program")
                args = loads(t["input"].encode("utf-8", "surrogatepass"))
                if isinstance(args, dict) and "$t" in args:
                    args = args["$t"]
                reply = client.request({"op": "call", "h": object.__getattribute__(fn, "_h"), "x": [args, {}],
                                        "objs": [], "m": False})
                msg["value"] = _call_value(client, reply)
                if len(msg["value"]) > job["cap"]:
                    raise OutputTooLarge("returned value too large")
            else:   # assert, or check
                exec(compile(t["code"], "<test>", "exec"), ns)
                if t["kind"] != "assert":
                    _register_classes(client, ns)
                    ns["check"](client.entry(job["entry_point"]))
        except CandidateGone:
            report(b"D", i)
            os._exit(0)
        except OutputTooLarge:
            msg = {"ok": False, "etype": "OutputLimit", "emsg": "returned value too large", "output_limit": True}
        except CandidateProtocolError as e:
            msg = {"ok": False, "etype": "ProtocolViolation", "emsg": str(e)}
        except BaseException as e:  # noqa: BLE001
            msg.update(ok=False, **_exc(e))
        msg["expects"] = expects
        report(b"R", i, dumps(msg))


class _Collector:
    """Outcome per test function; a function that contains ``assert`` statements but evaluated none (a loop
    over an empty result) fails, as check()/assert tests do."""

    def __init__(self, with_asserts: set[str]):
        self.subs = []
        self.with_asserts = with_asserts
        self.asserted: set[str] = set()

    def pytest_assertion_pass(self, item, lineno, orig, expl):
        self.asserted.add(item.nodeid.split("::")[-1].split("[", 1)[0])   # a class's method: its own name

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.outcome != "passed" and report.when == "setup") or (
                report.outcome == "failed" and report.when == "teardown"):
            err = None
            if report.outcome != "passed":
                try:
                    err = str(report.longreprtext)[-1500:]
                except BaseException:  # noqa: BLE001
                    err = "?"
            name = report.nodeid.split("::", 1)[-1]
            outcome = report.outcome
            base = name.split("::")[-1].split("[", 1)[0]
            if (outcome == "passed" and report.when == "call" and base in self.with_asserts
                    and base not in self.asserted):
                outcome, err = "failed", "no assertion was evaluated"
            self.subs.append([name, outcome, err])

    def pytest_collectreport(self, report):
        if report.outcome == "failed":
            self.subs.append(["<collect>", "error", str(report.longreprtext)[-1500:]])


def _local_tests_only():
    """pytest plugin: only functions and classes the test file itself defines are collected; an imported name
    (``from heapq import merge as test_merge``, ``from solution import TestData``) is never a test item."""
    import inspect

    import pytest

    class LocalTestsOnly:
        @pytest.hookimpl(tryfirst=True)
        def pytest_pycollect_makeitem(self, collector, name, obj):
            if not isinstance(collector, pytest.Module):
                return None
            try:
                module = collector.obj.__name__
            except Exception:  # noqa: BLE001
                return None
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", None) == module:
                return None   # defined here: pytest decides as usual
            return []         # imported (or not a function / class): never a test item

    return LocalTestsOnly()


def _test_file(source: str) -> tuple[str, set[str]]:
    """(the file pytest runs, the names of its test functions that contain ``assert`` statements). Test code that
    uses the program's names unimported (KodCode's bare `is_even(2)`) gets them bound from `solution` on one added
    line: names it reads and never binds, no builtins; one the program lacks stays unbound (a NameError in that
    test)."""
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source, set()
    with_asserts = {node.name for node in ast.walk(tree)
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
                    and any(isinstance(n, ast.Assert) for n in ast.walk(node))}
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    free = sorted(n for n in read - bound if n not in builtins.__dict__ and n.isidentifier())
    if not free:
        return source, with_asserts
    line = (f"import {PROGRAM_MODULE} as _sbx_program; globals().update({{_n: getattr(_sbx_program, _n) "
            f"for _n in {tuple(free)!r} if hasattr(_sbx_program, _n)}}); del _sbx_program\n")
    lines = source.splitlines(keepends=True)
    future = [n.end_lineno for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    at = max(future, default=0)
    return "".join(lines[:at]) + line + "".join(lines[at:]), with_asserts


def warm_pytest() -> bool:
    """Import pytest and its built-in plugins in the zygote (before its first pytest job: every judge it forks
    starts warm); no third-party plugin is loaded and the zygote's environment is left as it is."""
    try:
        import importlib

        import _pytest.config
        import pytest  # noqa: F401
        for name in _pytest.config.default_plugins:
            with contextlib.suppress(Exception):  # a builtin plugin of another pytest version
                importlib.import_module(f"_pytest.{name}")
        return True
    except Exception:  # noqa: BLE001 - no pytest here: the judge reports the import error per test
        return False


def _run_pytest(job: dict, start: int, client: Client, ns: JudgeNamespace) -> None:
    """pytest in the judge's private /tmp (no conftest.py or ini file of the program's) with only pytest's
    built-in plugins: a verdict must not depend on the host's plugins (their cost, pytest-randomly's reseeding)."""
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.dont_write_bytecode = True
    mod = _SolutionModule(PROGRAM_MODULE)
    object.__setattr__(mod, "_judge_ns", ns)
    sys.modules[PROGRAM_MODULE] = mod
    local_only = None
    os.makedirs("/tmp/judge", exist_ok=True)
    os.chdir("/tmp/judge")
    with open("pytest.ini", "w") as f:
        f.write("[pytest]\nenable_assertion_pass_hook = true\n")
    for t in job["tests"][start:]:
        i = t["i"]
        report(b"S", i)
        name = f"test_sbx_{i}.py"
        text, with_asserts = _test_file(t["code"] or "")
        with open(name, "w") as f:
            f.write(text)
        col = _Collector(with_asserts)
        msg = {"ok": True}
        try:
            import pytest
            local_only = local_only or _local_tests_only()
            pytest.main([name, "-q", "-p", "no:cacheprovider", "--rootdir=.", "-c", "pytest.ini",
                         "--noconftest", "-o", "addopts=", "--import-mode=prepend"], plugins=[col, local_only])
        except CandidateGone:
            report(b"D", i)
            os._exit(0)
        except BaseException as e:  # noqa: BLE001
            msg.update(ok=False, **_exc(e))
        if any(s[2] and "CandidateGone" in s[2] for s in col.subs):
            report(b"D", i)
            os._exit(0)
        msg["subs"] = col.subs
        report(b"R", i, dumps(msg))


__all__ = ["main", "report", "serve_kept"]
