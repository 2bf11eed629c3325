"""Contest-judge fidelity of programs in every language, in the real sandbox: output is compared as the bytes the
program wrote (a byte 0xFF is not an expected U+FFFD; whitespace is ASCII whitespace), Java's main class is
found in the code (not in comments or strings, any modifier order), and compiled programs get a stack as large
as their memory limit (main-thread recursion 10^6 deep in C++, Rust and Java)."""
from __future__ import annotations

import pytest

from factory.sandbox import Job, Limits, SandboxPool, TestSpec
from factory.sandbox import languages
from factory.sandbox.compare import stdio_equal

needs = {lang: pytest.mark.skipif(languages.toolchain(lang) is None, reason=languages.missing_message(lang))
         for lang in ("cpp", "java", "javascript", "rust")}
LIMITS = Limits(cpu_s=5.0, wall_factor=4.0, wall_min_s=10.0, memory_mb=512, max_procs=48, max_open_files=64,
                max_file_mb=32, tmpfs_mb=64, max_output_bytes=1 << 20)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(LIMITS, workers=2) as p:
        yield p


def verdicts(pool, *jobs):
    out = {}
    for v in pool.run(list(jobs)):
        out.setdefault(v.program_id, []).append(v)
    return out


def stdio(pid, lang, code, cases, comparison="token"):
    return Job(pid, code, [TestSpec(f"t{k}", "stdio", input=i, expected=o, comparison=comparison)
                           for k, (i, o) in enumerate(cases)], language=lang, compile_cpu_s=30.0,
               stop_at_timeout=False)


# ---- bytes, not a lossy decoding ------------------------------------------------------------------------------

@pytest.mark.parametrize("actual,expected,comparison,ok", [
    (b"\xff\n", "\ufffd\n", "exact", False),        # the false pass of issue 42
    (b"\xff", "\ufffd", "token", False),
    (b"\xff", "\ufffd", "casefold", False),
    (b"\xff", "\ufffd", "float", False),
    (b"\xfe\xff", "\ufffd\ufffd", "token", False),
    (b"1\xc2\xa02", "1 2", "token", False),        # NBSP is a character, not whitespace
    (b"1\xe3\x80\x802", "1 2", "token", False),    # so is U+3000
    (b"caf\xc3\xa9 \n", "café", "exact", True),     # valid UTF-8 is its text
    (b"CAF\xc3\x89", "café", "casefold", True),
    (b"1 2  \r\n3\r\n\n", "1 2\n3\n", "exact", True),
    (b"0.3333333", "0.333333", "float", True),
    ("\udcff", "\ufffd", "token", False),             # a lossless decoding stays lossless
])
def test_stdio_compare_is_on_bytes(actual, expected, comparison, ok):
    assert stdio_equal(actual, expected, comparison) is ok


BYTE_FF = {
    "python": "import sys\nsys.stdout.buffer.write(b'\\xff\\n')",
    "cpp": "#include <cstdio>\nint main(){ fputs(\"\\xff\\n\", stdout); }",
    "java": "public class Main { public static void main(String[] a) { System.out.write(0xff); "
            "System.out.write('\\n'); System.out.flush(); } }",
    "javascript": "process.stdout.write(Buffer.from([0xff, 0x0a]))",
    "rust": "use std::io::Write;\nfn main(){ std::io::stdout().write_all(&[0xff, b'\\n']).unwrap(); }",
}


@pytest.mark.parametrize("lang", [pytest.param(lang, marks=needs.get(lang, ())) for lang in BYTE_FF])
def test_a_program_printing_byte_ff_does_not_match_u_fffd(pool, lang):
    got = verdicts(pool, stdio("ff", lang, BYTE_FF[lang], [("", "\ufffd\n")], "exact"),
                   stdio("ff-token", lang, BYTE_FF[lang], [("", "\ufffd")], "token"))
    assert [v.status for v in got["ff"] + got["ff-token"]] == ["fail", "fail"], got


# ---- Java's main class -----------------------------------------------------------------------------------------

JAVA_NAMES = [
    ("// A public class Pair would be overkill\nclass Main { public static void main(String[] a) {} }",
     ("Main.java", "Main")),
    ("/* public class Decoy { public static void main(String[] a) {} } */\n"
     "class Real { public static void main(String[] a) {} }", ("Real.java", "Real")),
    ("class A { String s = \"public class X { static void main(\"; }\n"
     "class B { final static public void main(String... a) {} }", ("B.java", "B")),
    ("public class Sol { static public void main(String[] a) {} }", ("Sol.java", "Sol")),
    ("final public class Fin { public final static void main(String[] a) {} }", ("Fin.java", "Fin")),
    ("import java.util.*;\npublic class Outer { static class Inner { } public static void main(String[] a) {} }",
     ("Outer.java", "Outer")),
    ("public class Util { }\nclass Runner { @SuppressWarnings(\"x\") public static void main(String[] a) {} }",
     ("Util.java", "Runner")),
    ("class Main { char c = '{'; String t = \"\"\"\n   class Fake {\n   \"\"\"; "
     "public static void main(String[] a) {} }", ("Main.java", "Main")),
    ("class Main { void main(String[] a) {} }\nclass Other { public static void main(String[] a) {} }",
     ("Other.java", "Other")),   # an instance main() is not the entry point
]


@pytest.mark.parametrize("source,want", JAVA_NAMES)
def test_java_main_class_is_read_from_the_code(source, want):
    assert languages.java_names(source) == want


JAVA_PROGRAMS = {
    "comment": "import java.util.*;\n// A public class Pair would be overkill here\nclass Main {\n"
               "  public static void main(String[] args) { Scanner s = new Scanner(System.in);\n"
               "    System.out.println(s.nextInt() * 2); } }",
    "static-public": "import java.util.*;\npublic class Solution {\n  static public void main(String[] args) {\n"
                     "    System.out.println(new Scanner(System.in).nextInt() * 2); } }",
    "string-decoy": "import java.util.*;\nclass Helper { static final String NOTE = \"public class Fake {}\"; }\n"
                    "final class Program { final static public void main(String... args) {\n"
                    "    System.out.println(new Scanner(System.in).nextInt() * 2); } }",
    "public-helper": "import java.util.*;\npublic class Pair { int a, b; }\n"
                     "class Main { public static void main(String[] args) {\n"
                     "    System.out.println(new Scanner(System.in).nextInt() * 2); } }",
}


@needs["java"]
def test_java_programs_judged_by_their_real_main_class(pool):
    got = verdicts(pool, *[stdio(name, "java", code, [("21", "42")]) for name, code in JAVA_PROGRAMS.items()])
    assert {k: [v.status for v in vs] for k, vs in got.items()} == {k: ["pass"] for k in JAVA_PROGRAMS}, \
        {k: [(v.status, v.error_message) for v in vs] for k, vs in got.items()}


# ---- the stack: as large as the memory limit ---------------------------------------------------------------------

DEEP = {   # main-thread recursion n deep whose frames the compiler cannot fold away; prints n (n + 1) / 2
    "cpp": "#include <cstdio>\nlong long f(int n) { volatile long long keep = n; if (n == 0) return 0;\n"
           "  long long r = f(n - 1); asm volatile(\"\" : \"+r\"(r)); return r + keep; }\n"
           "int main() { int n; if (scanf(\"%d\", &n) != 1) return 1; printf(\"%lld\\n\", f(n)); }",
    "rust": "fn f(n: u64) -> u64 { let keep = std::hint::black_box(n); if n == 0 { return 0; }\n"
            "  std::hint::black_box(f(n - 1)) + keep }\n"
            "fn main() { let mut s = String::new(); std::io::stdin().read_line(&mut s).unwrap();\n"
            "  let n: u64 = s.trim().parse().unwrap(); println!(\"{}\", f(n)); }",
    "java": "import java.util.*;\npublic class Deep { static long f(int n) { if (n == 0) return 0; "
            "return f(n - 1) + n; }\n  public static void main(String[] a) {\n"
            "    System.out.println(f(new Scanner(System.in).nextInt())); } }",
}


@pytest.mark.parametrize("lang", [pytest.param(lang, marks=needs[lang]) for lang in DEEP])
def test_main_thread_recursion_a_million_deep(pool, lang):
    n = 10 ** 6
    got = verdicts(pool, stdio("deep", lang, DEEP[lang], [(str(n), str(n * (n + 1) // 2))]))["deep"]
    assert [v.status for v in got] == ["pass"], [(v.status, v.error_type, v.error_message, v.stderr[-300:])
                                                 for v in got]


def test_stack_follows_the_memory_limit():
    assert languages.stack_mb(512, "cpp") == 512 and languages.stack_mb(4096, "rust") == 1024
    assert languages.stack_mb(16, "cpp") == 64
    assert languages.stack_bytes({"name": "javascript"}, 512) is None
    argv = languages.run_argv({"name": "java", "main": "Main"}, 2048) if languages.toolchain("java") else None
    if argv:
        assert "-Xss1024m" in argv and "-ea" in argv
