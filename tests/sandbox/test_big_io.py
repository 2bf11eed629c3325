"""MB-sized stdin and stdout (issue #41, goal 3): the sandbox feeds 20 MB of stdin and compares 20 MB of output
exactly (a one-byte difference at the very end fails), and the comparison's memory does not grow with the
output (bench/sandbox_big_io.py@3d3f87a measures time and peak RSS from 1 to 50 MB)."""
from __future__ import annotations

import tracemalloc

import pytest

from factory.sandbox import Job, Limits, SandboxPool, TestSpec
from factory.sandbox.compare import stdio_equal

ECHO = "import sys\nsys.stdout.buffer.write(sys.stdin.buffer.read())\n"
MB = 1 << 20


def numbers(size: int) -> str:
    """About ``size`` bytes of integers, one per line (what a CodeContests test with a big input looks like)."""
    block = "".join(f"{(i * 7919) % 1000000007}\n" for i in range(50_000))
    text = block * (size // len(block) + 1)
    return text[:text.rfind("\n", 0, size) + 1]


def last_byte_changed(text: str) -> str:
    return text[:-2] + ("1" if text[-2] != "1" else "2") + "\n"


@pytest.fixture(scope="module")
def big_pool():
    # 16 MB is the default output cap per test: a 20 MB echo needs more
    with SandboxPool(Limits(cpu_s=20.0, memory_mb=1024, max_output_bytes=48 * MB, wall_min_s=60.0),
                     workers=1) as pool:
        yield pool


def test_20mb_stdin_echoed_back_passes_and_a_one_byte_difference_at_the_end_fails(big_pool):
    text = numbers(20 * MB)
    assert len(text) > 20 * MB - 16
    diff = last_byte_changed(text)
    jobs = [Job(f"echo-{comparison}", ECHO,
                [TestSpec("same", "stdio", input=text, expected=text, comparison=comparison),
                 TestSpec("diff", "stdio", input=text, expected=diff, comparison=comparison)])
            for comparison in ("token", "exact")]
    got = {(v.program_id, v.test_id): (v.status, v.error_type) for v in big_pool.run(jobs)}
    assert got == {("echo-token", "same"): ("pass", None), ("echo-token", "diff"): ("fail", "WrongAnswer"),
                   ("echo-exact", "same"): ("pass", None), ("echo-exact", "diff"): ("fail", "WrongAnswer")}


def test_a_20mb_program_input_read_back_by_a_sum_program(big_pool):
    text = numbers(20 * MB)
    total = sum(map(int, text.split()))
    code = "import sys\nprint(sum(map(int, sys.stdin.buffer.read().split())))\n"
    [v] = list(big_pool.run([Job("sum", code, [TestSpec("t", "stdio", input=text, expected=f"{total}\n",
                                                         comparison="token")])]))
    assert (v.status, v.exit_code) == ("pass", 0)


@pytest.mark.parametrize("comparison", ["token", "exact", "casefold"])
def test_comparing_big_outputs_holds_a_chunk_not_a_list_of_every_token(comparison):
    """A 4 MB output differing only in its last byte: the comparison reads the whole of it (the difference is at
    the end) with a few MB of temporaries. Before, ``a.split() == e.split()`` (and ``_lines``) built a list of
    every token / line per side: ~10x the output (tracemalloc peak 41-45 MB here); now 4-6 MB."""
    text = numbers(4 * MB)
    actual, expected = text.encode(), last_byte_changed(text).encode()
    # whitespace the policies ignore: \r\n endings and trailing blanks (exact) or any run of whitespace (token)
    loose = text.replace("\n", " \r\n").encode()
    tracemalloc.start()
    try:
        assert not stdio_equal(actual, expected, comparison)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MB, f"{comparison}: comparing two 4 MB outputs held {peak / MB:.1f} MB"
    assert stdio_equal(actual, loose, comparison)
    assert stdio_equal(actual, text.replace("\n", "\n\n") + "\n\n", comparison) == (comparison != "exact")


def test_float_policy_on_a_big_output_still_applies_its_rules():
    lines = [f"{i}.5" for i in range(200_000)]
    actual = ("\n".join(lines) + "\n").encode()
    assert stdio_equal(actual, "\n".join(lines[:-1] + ["199999.5000001"]), "float")   # within 1e-6 relative
    assert not stdio_equal(actual, "\n".join(lines[:-1] + ["199999.9"]), "float")   # 2e-6 relative
    assert not stdio_equal(actual, "\n".join(lines[:-1]), "float")                      # one token fewer
    assert not stdio_equal(b"1e400\n", "1e400\n", "float")   # too large for a double: never within a tolerance
