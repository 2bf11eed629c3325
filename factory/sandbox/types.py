"""Public dataclasses of the sandbox: limits, test specs, jobs and verdicts."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace

SANDBOX_VERSION = "0.3.1"

KINDS = ("assert", "check", "call", "stdio", "pytest", "unittest", "harness")
COMPARISONS = ("exact", "token", "float", "casefold")
STATUSES = ("pass", "fail", "timeout", "runtime_error", "memory_limit", "output_limit",
            "infra_error", "no_expected", "compile_error")


@dataclass(frozen=True)
class Limits:
    """Per-test resource limits.  CPU time decides timeouts; wall time is only a backstop."""
    cpu_s: float = 4.0            # CPU seconds per test (and for loading the program)
    wall_factor: float = 10.0     # wall backstop = max(wall_factor * cpu_s, wall_min_s)
    wall_min_s: float = 10.0
    memory_mb: int = 1024         # cgroup memory limit (RLIMIT_AS on top of the zygote if no cgroup)
    max_procs: int = 64           # pids.max / RLIMIT_NPROC (processes + threads)
    max_open_files: int = 256     # RLIMIT_NOFILE
    max_file_mb: int = 64         # RLIMIT_FSIZE
    tmpfs_mb: int = 256           # size of the private writable /tmp
    max_output_bytes: int = 16 << 20   # stdout/stderr/return value cap per test -> output_limit
    capture_bytes: int = 4096     # how much stdout/stderr a Verdict keeps

    def __post_init__(self):
        # Limits(cpu_s=10) and Limits(cpu_s=10.0) are the same limits, with the same hash
        for f in fields(self):
            value = getattr(self, f.name)
            kind = float if f.type in ("float", float) else int
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"Limits.{f.name} must be a number, got {value!r}")
            object.__setattr__(self, f.name, kind(value))

    @property
    def wall_s(self) -> float:
        return max(self.wall_factor * self.cpu_s, self.wall_min_s)

    def as_dict(self) -> dict:
        return asdict(self)

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class TestSpec:
    __test__ = False  # not a pytest test class
    """One test.  See the package docstring for the semantics of each kind."""
    test_id: str
    kind: str
    code: str | None = None
    input: str | None = None
    expected: str | None = None
    comparison: str = "exact"
    atol: float | None = None
    rtol: float | None = None
    # stdio/call tests: source of a checker program (see :mod:`.checker`) that decides accept/reject from
    # (input, expected, actual) inside the sandbox, instead of a built-in comparison
    checker: str | None = None


@dataclass
class Job:
    """A program plus its tests; all tests of one job run in one sandboxed child (per mode)."""
    program_id: str
    code: str
    tests: list[TestSpec] = field(default_factory=list)
    entry_point: str | None = None
    preamble: str = ""
    # CPU seconds per test for this job only (a time limit calibrated per problem); None: the pool's Limits.cpu_s
    cpu_s: float | None = None
    # after a test of this program times out, its later tests are not run (status timeout, error_type NotRun);
    # False runs every test (reference programs, whose per-test verdicts validate the tests)
    stop_at_timeout: bool = True
    # the program's language (:mod:`.languages`: python, cpp, java, javascript, rust and SandboxFusion's
    # aliases); other languages than Python run stdio tests, compiled once per job inside the sandbox
    language: str = "python"
    # CPU seconds for that compilation; None: languages.COMPILE_CPU_S
    compile_cpu_s: float | None = None
    # a wall-clock limit per test, seconds (SandboxFusion's run_timeout), beside the CPU budget; None: only the
    # limits' wall backstop
    wall_s: float | None = None
    # stdio tests: files placed in the program's working directory before each test ({relative path: bytes})
    files: dict | None = None
    # the program's processes get a network namespace of their own with a working loopback (SandboxFusion's
    # per-run loopback: a program may serve and connect on 127.0.0.1); False: no network at all (cheaper)
    own_network: bool = False
    # stdio tests: paths read back after each run (SandboxFusion's fetch_files; :mod:`.fetch`): relative to the
    # working directory, or under /tmp or /mnt (the run's own)
    fetch_files: tuple | None = None

    def limits_for(self, limits: "Limits") -> "Limits":
        """The limits this job's tests run under."""
        return limits if self.cpu_s is None else replace(limits, cpu_s=self.cpu_s)


@dataclass
class Verdict:
    program_id: str
    test_id: str | None
    status: str
    cpu_ms: float = 0.0
    wall_ms: float = 0.0
    peak_memory_kb: int | None = None
    stdout: str = ""
    stderr: str = ""
    error_type: str | None = None
    error_message: str | None = None
    actual: str | None = None
    sandbox_meta: str = "{}"
    limits: str = "{}"
    # True only where the test ran in the candidate's own process (kind 'unittest', e.g. BigCodeBench tests
    # that inspect DataFrames/axes): such a verdict can be forged by the program; curation/rewards may drop it
    judged_in_process: bool = False
    # stdin/stdout tests: the program's exit status (0, the code it exited with, or -N when killed by signal N)
    exit_code: int | None = None
    # CPU milliseconds the job's compilation took (other languages than Python), on every test's verdict
    compile_ms: float | None = None
    # Job.fetch_files: {path: bytes} read back after the run, and {path: why not} for the others
    files: dict | None = None
    fetch_errors: dict | None = None

    def as_dict(self) -> dict:
        return asdict(self)
