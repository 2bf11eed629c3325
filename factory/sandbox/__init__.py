"""Sandboxed executor for untrusted Python programs (code-RL rewards and evaluation).

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
* ``pytest``  -- program saved as ``solution.py``, test source run by pytest; one verdict per test
  function (``<test_id>::<name>``);
* ``unittest`` -- program + test source in one module, every ``TestCase`` run; one verdict per
  test method.

Equality asserts against literals are rewritten (:mod:`.transform`) so the expected values never
enter the sandbox and the parent decides.  Isolation: :mod:`.isolate`, :mod:`.cgroup`; process
model: :mod:`.zygote`, :mod:`.child`, :mod:`.pool`.  Every Verdict records the active isolation
mechanisms (and any degradation) in ``sandbox_meta``.
"""
__all__ = ["Limits", "TestSpec", "Job", "Verdict", "run_jobs", "SandboxPool", "SANDBOX_VERSION",
           "serialize_value", "deserialize_value"]

_LAZY = {"SandboxPool": "pool", "run_jobs": "pool", "serialize_value": "serialize", "deserialize_value": "serialize",
         **{name: "types" for name in ("SANDBOX_VERSION", "Job", "Limits", "TestSpec", "Verdict")}}


def __getattr__(name: str):
    """Trusted-side modules load on first use: the zygote imports only what a sandboxed child needs
    (every extra module it holds is page-table work on each fork and exit)."""
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
