"""Sandboxed executor for untrusted programs (code-RL rewards and evaluation): Python, and stdio tests in C++,
Java, JavaScript and Rust (``Job.language``; compiled once per job inside the sandbox, see :mod:`.languages`
and :mod:`.compiled`; a compile failure is status ``compile_error`` with the compiler's bounded message).

``run_jobs(jobs, limits)`` runs each :class:`Job`'s tests in a warm, pre-forked sandbox and yields
one :class:`Verdict` per (job, test).  Test kinds:

* ``assert``  -- one assert statement run after the program;
* ``check``   -- HumanEval style: test source defining ``check(candidate)``, called with
  ``eval(entry_point)`` (``Solution().fn`` gives a bound method);
* ``call``    -- ``entry_point(*deserialize_value(input))``; the returned value is serialized
  (:mod:`.serialize`) and compared by the parent (:func:`.compare.call_equal`, evalplus-like);
  ``expected=None`` yields status ``no_expected`` with ``actual`` filled in;
* ``stdio``   -- program run as ``__main__`` with ``input`` on stdin; stdout compared by the parent
  with ``comparison`` (``exact`` | ``token`` | ``float`` | ``casefold``, see :mod:`.compare`);
* ``pytest``  -- test source run by pytest in the judge; ``from solution import f`` reaches the program;
  one verdict per test function (``<test_id>::<name>``); a function whose asserts never ran fails; only
  functions and classes the test file defines are collected (``from heapq import merge as test_merge`` is no test);
* ``unittest`` -- program + test source in one process (BigCodeBench: tests inspect DataFrames/axes, which
  no plain data carries); one verdict per test method, marked ``judged_in_process=True``.

Verdict integrity (sandbox 0.3): a verdict is decided by trusted code on plain data.

* **Judge and candidate are separate processes.**  Test code runs in a *judge* process (:mod:`.judge`)
  that never runs program code; the program runs alone in a *candidate* process (:mod:`.candidate`) and is
  called over :mod:`.rpc`: arguments and return values cross as plain tagged JSON and are rebuilt by trusted
  code as the types tests rely on (numpy arrays and scalars with dtype and shape, Decimal, Fraction, datetime,
  deque/Counter/OrderedDict/defaultdict, tuples, sets, bytes: :mod:`.serialize`), program objects stay
  behind handles whose ``==`` is identity, so rebinding builtins, patching test libraries, trace hooks or
  lying operators change nothing the judge computes.  Builtins in test code are always the judge's own.
  With root, one judge per worker is kept across function-style programs (one fork per program, not two):
  programs run under a uid of their own, so everything a program leaves is killed by uid and the judge
  survives; the judge restores builtins/streams after each program and is replaced after any abnormal end.
* **Only the judge reports** (fd 3, binary frames); the candidate's only outputs are RPC replies (data) and
  stdout/stderr.  For stdin/stdout tests the zygote itself reads the program's stdout and exit status.
* **Nothing to find.**  The zygote never holds job bytes: the pool's batch is spliced into a memfd, each
  child reads its own part (the candidate: the program only) and program output goes to the pool with
  ``splice(2)``, so no forked process inherits an earlier program's source, tests or output.  Each worker
  pivots into a minimal read-only root (system dirs, interpreter, packages; no project, data, home, /run,
  /sys), ``/proc`` is mounted ``hidepid``, the judge runs under another uid, and a seccomp filter
  (:mod:`.seccomp`) refuses keyrings, ptrace-family calls and namespace/mount changes to programs.
* **The trusted side takes any bytes**: frames are size-capped, JSON depth errors become opaque values,
  text fields are made valid UTF-8 (lone surrogates escaped), and a failure for one program is that
  program's ``infra_error`` row.

Equality asserts against literals are still rewritten (:mod:`.transform`) and compared by the parent from
the judge's ``expects``.  Isolation: :mod:`.isolate`, :mod:`.cgroup`, :mod:`.seccomp`; process model:
:mod:`.zygote` (worker), :mod:`.zygote_io` (pool framing, output router), :mod:`.spawn` (fork/kill/reap),
:mod:`.meter` (per-test CPU/memory, limits), :mod:`.supervise` (test runners), :mod:`.compiled` (other
languages), :mod:`.judge`, :mod:`.candidate`, :mod:`.rpc`, :mod:`.pool`.  Every Verdict records the
active isolation mechanisms (and any degradation) in ``sandbox_meta``.
"""
__all__ = ["Limits", "TestSpec", "Job", "Verdict", "run_jobs", "SandboxPool", "SANDBOX_VERSION",
           "serialize_value", "deserialize_value", "clean_text"]

_LAZY = {"SandboxPool": "pool", "run_jobs": "pool", "serialize_value": "serialize", "deserialize_value": "serialize",
         "clean_text": "serialize",
         **{name: "types" for name in ("SANDBOX_VERSION", "Job", "Limits", "TestSpec", "Verdict")}}


def __getattr__(name: str):
    """Trusted-side modules load on first use: the zygote imports only what a sandboxed child needs
    (every extra module it holds is page-table work on each fork and exit)."""
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
