"""pytest-format tests (KodCode) are judged by pytest with its built-in plugins only.

The host's third-party pytest plugins (this venv has pytest-timeout, and often pytest-randomly, hypothesis, anyio)
must not load in the judge: autoloading them cost ~1.2 CPU s per test file, charged to the program's CPU budget,
so a correct KodCode reference scored 0 under a 2 s reward budget on a slower machine; and a plugin such as
pytest-randomly reseeds the tests' random data, so a verdict would depend on what the host installed.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from factory.ingest.adapters import split_pytest
from factory.sandbox import Job, SandboxPool, TestSpec
from sbx_helpers import FAST, run

PROBE = """
import sys

def test_no_third_party_plugin():
    loaded = sorted(m for m in sys.modules if m.startswith(("pytest_", "hypothesis", "anyio")))
    assert loaded == [], loaded
"""


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(FAST, workers=1) as p:
        yield p


def _kodcode(shared_data, name: str) -> dict:
    path = shared_data / "kodcode_demo" / "Verified_KodCode_algorithm_100_1741212598_Complete.json"
    return next(r for r in json.loads(path.read_text()) if f"def {name}(" in r["instruction"])


def test_judge_loads_no_third_party_pytest_plugin(pool):
    import importlib.util
    assert importlib.util.find_spec("pytest_timeout"), "the test needs a third-party plugin installed on the host"
    v = run(pool, [Job("p", "x = 1\n", [TestSpec("t", "pytest", PROBE)])])
    assert {k[1].split("::")[0]: x.status for k, x in v.items()} == {"t": "pass"}, \
        [(x.status, x.error_message) for x in v.values()]


def test_kodcode_reference_passes_within_a_cpu_second_per_test(shared_data):
    """The interleave_strings reference (two pytest functions on 100k-char strings, one a timeit check) passes
    under a 1 CPU s budget per test file (it needs ~0.15 s here; the harness alone took 1.29 s with autoload on):
    the harness leaves the program its budget."""
    limits = replace(FAST, cpu_s=1.0)
    row = _kodcode(shared_data, "interleave_strings")
    tests = [TestSpec(f"t{i}", "pytest", code) for i, code in enumerate(split_pytest(row["test_code"]))]
    with SandboxPool(limits, workers=1) as pool:
        verdicts = run(pool, [Job("ref", row["response"], tests, entry_point="interleave_strings")])
    assert verdicts and all(v.status == "pass" for v in verdicts.values()), \
        [(k, v.status, v.cpu_ms, v.error_message) for k, v in verdicts.items()]
    assert max(v.cpu_ms for v in verdicts.values()) < limits.cpu_s * 1000


def test_programs_after_a_pytest_job_see_the_sandbox_environment_only(pool, shared_data):
    """Warming pytest in the zygote leaves its environment alone: the programs it forks afterwards get exactly the
    sandbox's environment, no pytest setting leaks into it."""
    from factory.sandbox.isolate import SAFE_ENV
    row = _kodcode(shared_data, "interleave_strings")
    warm = Job("warm", row["response"], [TestSpec("t", "pytest", split_pytest(row["test_code"])[0])],
               entry_point="interleave_strings")
    probe = Job("env", "import os\ndef env_keys():\n    return sorted(os.environ)\n",
                [TestSpec("e", "assert", f"assert env_keys() == {sorted(SAFE_ENV)!r}")], entry_point="env_keys")
    verdicts = run(pool, [warm, probe])
    assert {k: v.status for k, v in verdicts.items()} == {("warm", "t::test_interleave_strings"): "pass",
                                                           ("env", "e"): "pass"}, \
        [(k, v.status, v.error_message) for k, v in verdicts.items()]
