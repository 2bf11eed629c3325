"""Programs in C++, Java, JavaScript and Rust in the real sandbox: compile once per job (inside the sandbox),
run per stdio test, and the adversarial catalogue per language -- every attack must end in a failing verdict
(never a pass, never an infra_error that would break a batch)."""
from __future__ import annotations

import uuid

import pytest

from factory.sandbox import Job, Limits, SandboxPool, TestSpec
from factory.sandbox import languages

from sbx_helpers import run

LIMITS = Limits(cpu_s=2.0, wall_factor=4.0, wall_min_s=4.0, memory_mb=512, max_procs=48, max_open_files=64,
                max_file_mb=32, tmpfs_mb=64, max_output_bytes=1 << 20)
SECRET = "lang-secret-" + uuid.uuid4().hex[:16]

needs = {lang: pytest.mark.skipif(languages.toolchain(lang) is None, reason=languages.missing_message(lang))
         for lang in ("cpp", "java", "javascript", "rust")}


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(LIMITS, workers=2) as p:
        yield p


def IO(pid, lang, code, *cases, compile_cpu_s=20.0):
    tests = [TestSpec(f"t{k}", "stdio", input=i, expected=o, comparison="token") for k, (i, o) in enumerate(cases)]
    return Job(pid, code, tests, language=lang, compile_cpu_s=compile_cpu_s, stop_at_timeout=False)


DOUBLE = {
    "cpp": "#include <cstdio>\nint main(){long long a; if(scanf(\"%lld\",&a)!=1) return 1; printf(\"%lld\\n\", a*2);}",
    "java": "import java.util.*;\npublic class Doubler { public static void main(String[] x) {\n"
            "  long a = new Scanner(System.in).nextLong(); System.out.println(a * 2); } }",
    "javascript": "const a = BigInt(require('fs').readFileSync(0, 'utf8').trim()); console.log(String(a * 2n));",
    "rust": "use std::io::Read;\nfn main(){ let mut s=String::new(); std::io::stdin().read_to_string(&mut s)"
            ".unwrap(); let a:i64=s.trim().parse().unwrap(); println!(\"{}\", a*2); }",
}
WRONG = {
    "cpp": "#include <cstdio>\nint main(){ puts(\"7\"); }",
    "java": "public class Main { public static void main(String[] a) { System.out.println(7); } }",
    "javascript": "console.log(7)",
    "rust": "fn main(){ println!(\"7\"); }",
}
BROKEN = {   # compile errors (JavaScript: a syntax error is a runtime error, node has no separate compile step)
    "cpp": "int main() { return undefined_name; }",
    "java": "public class Main { public static void main(String[] a) { int x = \"s\"; } }",
    "rust": "fn main() { let x: i32 = \"s\"; }",
}


@pytest.mark.parametrize("lang", [pytest.param(lang, marks=needs[lang]) for lang in DOUBLE])
def test_pass_fail_and_compile_error(pool, lang):
    jobs = [IO("ok", lang, DOUBLE[lang], ("3", "6"), ("21", "42"), ("-5", "-10")),
            IO("wrong", lang, WRONG[lang], ("3", "6"))]
    if lang in BROKEN:
        jobs.append(IO("broken", lang, BROKEN[lang], ("3", "6"), ("4", "8")))
    got = run(pool, jobs)
    for t in ("t0", "t1", "t2"):
        assert got[("ok", t)].status == "pass", got[("ok", t)]
    if lang != "javascript":
        assert got[("ok", "t0")].compile_ms > 0    # compiled once, the figure on every test of the job
        assert got[("ok", "t0")].compile_ms == got[("ok", "t2")].compile_ms
    assert got[("wrong", "t0")].status == "fail"
    if lang in BROKEN:
        for t in ("t0", "t1"):
            v = got[("broken", t)]
            assert v.status == "compile_error" and v.error_type == "CompileError", v
            assert "error" in v.error_message and len(v.error_message) < 5000


def test_unknown_language_and_python_only_kinds(pool):
    got = run(pool, [Job("x", "print(1)", [TestSpec("t", "stdio", input="", expected="1")], language="cobol"),
                     Job("y", "int f(){return 1;}", [TestSpec("t", "assert", code="assert f() == 1")], language="cpp")])
    assert got[("x", "t")].status == "infra_error" and got[("x", "t")].error_type == "UnknownLanguage"
    assert "cpp" in got[("x", "t")].error_message and "rust" in got[("x", "t")].error_message
    assert got[("y", "t")].status == "infra_error" and "stdio" in got[("y", "t")].error_message


def test_missing_toolchain_names_the_package(monkeypatch):
    monkeypatch.setitem(languages._CACHE, "rust", None)
    with pytest.raises(languages.ToolchainMissing, match="apt-get install rustc"):
        languages.require("rust")
    from factory.sandbox.verdicts import split_job
    subs, bad = split_job(Job("r", "fn main(){}", [TestSpec("t", "stdio", input="", expected="")], language="rust"),
                          "{}", "{}")
    assert not subs and bad[0].error_type == "ToolchainMissing" and "rustc" in bad[0].error_message


# ---- the adversarial catalogue -----------------------------------------------------------------------------
# Each program tries one attack; the test's expected output is something only the attack could produce
# (the secret, or a marker), so a pass would mean the attack worked.
CPP_ATTACKS = {
    "fork_bomb": ("#include <unistd.h>\n#include <cstdio>\nint main(){ for(;;) fork(); }", None),
    "asm_fork_bomb": ("int main(){ for(;;){ long r; asm volatile(\"syscall\" : \"=a\"(r) : \"a\"(57L) : \"rcx\", "
                      "\"r11\", \"memory\"); } }", None),
    "asm_socket": ("#include <cstdio>\nint main(){ long r; asm volatile(\"syscall\" : \"=a\"(r) : \"a\"(41L), "
                   "\"D\"(2L), \"S\"(1L), \"d\"(0L) : \"rcx\", \"r11\", \"memory\");\n"
                   "  if (r < 0) { puts(\"nosock\"); return 0; }\n"
                   "  struct { unsigned short f; unsigned short p; unsigned a; char z[8]; } sa = {2, 0x5000, "
                   "0x0100007f, {0}};\n  long c; asm volatile(\"syscall\" : \"=a\"(c) : \"a\"(42L), \"D\"(r), "
                   "\"S\"(&sa), \"d\"(16L) : \"rcx\", \"r11\", \"memory\");\n"
                   "  puts(c == 0 ? \"NETWORK\" : \"nonet\"); }", "NETWORK"),
    "asm_ptrace": ("#include <cstdio>\nint main(){ long r; asm volatile(\"syscall\" : \"=a\"(r) : \"a\"(101L), "
                   "\"D\"(16L), \"S\"(1L), \"d\"(0L) : \"rcx\", \"r11\", \"memory\"); printf(\"%ld\\n\", r); }",
                   "0"),   # PTRACE_ATTACH to pid 1 (the zygote): refused (-EPERM), never 0
    "read_tests_and_others": (
        "#include <cstdio>\n#include <cstring>\n#include <dirent.h>\n#include <string>\n#include <unistd.h>\n"
        "static std::string needle, self;\n"
        "static bool scan(const std::string& p, int depth){ if(depth>6) return false; DIR* d=opendir(p.c_str());\n"
        "  if(!d){ FILE* f=fopen(p.c_str(),\"rb\"); if(!f) return false; static char b[1<<16]; size_t n;\n"
        "    while((n=fread(b,1,sizeof b-1,f))>0){ b[n]=0; char* s=(char*)memmem(b,n,needle.data(),needle.size());\n"
        "      if(s){ fwrite(s,1,28,stdout); puts(\"\"); fclose(f); return true; } } fclose(f); return false; }\n"
        "  struct dirent* e; while((e=readdir(d))){ if(!strcmp(e->d_name,\".\")||!strcmp(e->d_name,\"..\")) "
        "continue;\n    if(p==\"/proc\" && (!(e->d_name[0]>='0'&&e->d_name[0]<='9') || self==e->d_name)) continue;\n"
        "    if(scan(p+\"/\"+e->d_name, depth+1)){ closedir(d); return true;}}\n"
        "  closedir(d); return false; }\nint main(){ needle = std::string(\"lang-sec\") + \"ret-\"; "
        "self = std::to_string(getpid());\n for(const char* r: {\"/tmp\", \"/dev/shm\", \"/proc\", "
        "\"/work/shared\", \"/root\", \"/home\", \"/var\", \"/run\", \"/etc\"}) if(scan(r,0)) return 0;\n"
        "  puts(\"nothing\"); }", SECRET),
    "verdict_channel_fds": ("#include <unistd.h>\n#include <cstdio>\nint main(){ const char m[] = \"R\\0\\0\\0\\0"
                            "\\0\\0\\0\\0pass\"; int w=0; for(int fd=3; fd<1024; ++fd) if(write(fd,m,sizeof m)>0) "
                            "++w; printf(\"%d\\n\", w); }", "0x"),
    "huge_output": ("#include <cstdio>\nint main(){ static char b[1<<16]; for(int i=0;i<(1<<16);++i) b[i]='y';"
                    " for(;;) fwrite(b,1,sizeof b,stdout); }", "y"),
    "infinite_loop": ("int main(){ volatile unsigned long x=0; for(;;) ++x; }", None),
    "sleep_forever": ("#include <unistd.h>\nint main(){ for(;;) pause(); }", None),
    "memory_bomb": ("#include <cstdlib>\n#include <cstring>\nint main(){ for(;;){ char* p=(char*)malloc(1<<24); "
                    "if(!p) return 3; memset(p,1,1<<24);} }", None),
    "stack_smash": ("int f(int x){ volatile char b[4096]; b[0]=x; return f(x+1)+b[0]; } int main(){ return f(0); }",
                    None),
    "env_and_secret": ("#include <cstdio>\n#include <cstdlib>\nint main(){ const char* s=getenv(\"FACTORY_LANG_SECRET\");"
                       " puts(s ? s : \"noenv\"); }", SECRET),
}
CPP_COMPILE_BOMBS = {
    "template_recursion": ("template<int N> struct F { static const int v = F<N+1>::v + 1; };\n"
                           "int main(){ return F<0>::v; }", ("CompileError", "CompileTimeout", "CompileOutputLimit")),
    "template_explosion": ("template<int N, long M> struct E { enum : long { v = E<N-1, 2*M>::v + E<N-1, 2*M+1>::v };"
                           " };\ntemplate<long M> struct E<0, M> { enum : long { v = M }; };\n"
                           "int main(){ return (int)E<40, 0>::v; }",
                           ("CompileError", "CompileTimeout", "CompileOutputLimit", "CompileMemoryLimit")),
    "include_dev_random": ("#include </dev/random>\nint main(){}",
                           ("CompileError", "CompileTimeout", "CompileOutputLimit", "CompileMemoryLimit")),
    "include_dev_zero": ("#include </dev/zero>\nint main(){}",
                         ("CompileError", "CompileTimeout", "CompileOutputLimit", "CompileMemoryLimit")),
    "error_flood": ("#define A x x x x x x x x x x\n#define B A A A A A A A A A A\n#define C B B B B B B B B B B\n"
                    "#define D C C C C C C C C C C\n" + "D D D D D D D D D D\n" * 50 + "int main(){}",
                    ("CompileError", "CompileOutputLimit", "CompileTimeout")),
    "include_secret_paths": ("#include </work/shared/data/codecontests_subset300/SOURCE.txt>\nint main(){}",
                             ("CompileError",)),
}


def _attack_jobs(lang: str, attacks: dict) -> list[Job]:
    jobs = [IO("holder", lang, DOUBLE[lang] + ("\n// " if lang != "javascript" else "\n// ") + SECRET,
               ("1", "2"))]
    for name, (code, expected) in attacks.items():
        jobs.append(IO(name, lang, code, ("5", expected if expected is not None else "never printed")))
    return jobs


@needs["cpp"]
def test_cpp_adversarial(pool):
    import os
    os.environ["FACTORY_LANG_SECRET"] = SECRET   # in the parent only: never visible inside the sandbox
    got = run(pool, _attack_jobs("cpp", CPP_ATTACKS))
    assert got[("holder", "t0")].status == "pass"
    for name in CPP_ATTACKS:
        v = got[(name, "t0")]
        assert v.status not in ("pass", "infra_error"), (name, v)
    assert got[("fork_bomb", "t0")].status in ("timeout", "runtime_error", "memory_limit")
    assert got[("asm_fork_bomb", "t0")].status in ("timeout", "runtime_error", "memory_limit")
    assert got[("infinite_loop", "t0")].status == "timeout"
    assert got[("sleep_forever", "t0")].status == "timeout"
    assert got[("huge_output", "t0")].status == "output_limit"
    assert got[("memory_bomb", "t0")].status in ("memory_limit", "runtime_error")
    assert got[("asm_socket", "t0")].stdout.strip() in ("nosock", "nonet")
    assert got[("asm_ptrace", "t0")].stdout.strip().startswith("-")
    assert got[("verdict_channel_fds", "t0")].stdout.strip() == "0"
    assert got[("read_tests_and_others", "t0")].stdout.strip() == "nothing"
    assert got[("env_and_secret", "t0")].stdout.strip() == "noenv"


@needs["cpp"]
def test_cpp_compile_time_bombs(pool):
    jobs = [IO(name, "cpp", code, ("", "x"), ("", "y"), compile_cpu_s=4.0)
            for name, (code, _) in CPP_COMPILE_BOMBS.items()]
    got = run(pool, jobs)
    for name, (_, allowed) in CPP_COMPILE_BOMBS.items():
        for t in ("t0", "t1"):
            v = got[(name, t)]
            assert v.status == "compile_error" and v.error_type in allowed, (name, v)
            assert len(v.error_message) < 5000
    assert SECRET not in got[("include_secret_paths", "t0")].error_message
    assert "No such file" in got[("include_secret_paths", "t0")].error_message


ATTACKS = {
    "java": {
        "fork_bomb": ("public class Main { public static void main(String[] a) throws Exception {\n"
                      "  while (true) new ProcessBuilder(\"/proc/self/exe\", \"-version\").start(); } }", None),
        "thread_bomb": ("public class Main { public static void main(String[] a) { while (true) new Thread(() -> {"
                        " try { Thread.sleep(100000); } catch (Exception e) {} }).start(); } }", None),
        "read_files": ("import java.nio.file.*;\npublic class Main { public static void main(String[] a) throws "
                       "Exception {\n for (String p : new String[]{\"/tmp/src\", \"/tmp/build\", \"/work\", "
                       "\"/etc/shadow\", \"/proc/1/environ\"}) { try { System.out.println(Files.exists(Paths.get(p)) ? "
                       "\"" + SECRET + "\" : \"no\"); } catch (Exception e) { System.out.println(\"no\"); } } } }",
                       SECRET),
        "socket": ("public class Main { public static void main(String[] a) throws Exception {\n"
                   " new java.net.Socket(\"127.0.0.1\", 80); System.out.println(\"NETWORK\"); } }", "NETWORK"),
        "huge_output": ("public class Main { public static void main(String[] a) { StringBuilder s = new "
                        "StringBuilder(); for (int i = 0; i < 65536; i++) s.append('y'); while (true) "
                        "System.out.print(s); } }", "y"),
        "infinite_loop": ("public class Main { public static void main(String[] a) { long x = 0; while (true) x++; "
                          "} }", None),
        "memory_bomb": ("import java.util.*;\npublic class Main { public static void main(String[] a) { "
                        "List<long[]> l = new ArrayList<>(); while (true) l.add(new long[1 << 20]); } }", None),
        "verdict_fds": ("import java.io.*;\npublic class Main { public static void main(String[] a) { int w = 0;"
                        " for (int fd = 3; fd < 64; fd++) { try (FileOutputStream o = new FileOutputStream("
                        "\"/proc/self/fd/\" + fd)) { o.write(\"pass\".getBytes()); w++; } catch (Exception e) {} }"
                        " System.out.println(w > 0 ? \"wrote\" : \"0\"); } }", "forged"),   # a frame on every descriptor, then a wrong answer: must still fail
    },
    "javascript": {
        "fork_bomb": ("const cp = require('child_process'); for (;;) { try { cp.spawn(process.execPath, ['-e', "
                      "'setInterval(()=>{},1000)']); } catch (e) {} }", None),
        "read_files": ("const fs = require('fs'); let hit = 'no'; for (const p of ['/tmp/src', '/tmp/build', "
                       "'/work/shared/data', '/work/main/factory', '/etc/shadow', '/root/.cargo', '/root/.rustup', '/proc/1/environ']) { try { fs.readdirSync(p); hit = '" + SECRET +
                       "'; } catch (e) {} } console.log(hit);", SECRET),
        "socket": ("require('net').connect(80, '127.0.0.1', () => { console.log('NETWORK'); process.exit(0); })"
                   ".on('error', () => console.log('nonet'));", "NETWORK"),
        "huge_output": ("const s = 'y'.repeat(65536); for (;;) process.stdout.write(s);", "y"),
        "infinite_loop": ("for (;;) {}", None),
        "memory_bomb": ("const a = []; for (;;) a.push(new Array(1 << 20).fill(1.5));", None),
        "verdict_fds": ("const fs = require('fs'); let w = 0; for (let fd = 3; fd < 64; fd++) { try { "
                        "fs.writeSync(fd, 'pass'); w++; } catch (e) {} } console.log(w > 3 ? 'wrote' : '0');",
                        "forged"),   # a frame on every descriptor, then a wrong answer: must still fail
    },
    "rust": {
        "fork_bomb": ("fn main(){ loop { let _ = std::process::Command::new(\"/proc/self/exe\").spawn(); } }", None),
        "read_files": ("fn main(){ for p in [\"/tmp/src\", \"/tmp/build\", \"/work/shared/data\", \"/work/main/factory\", \"/etc/shadow\", \"/root/.cargo\", \"/root/.rustup\", "
                       "\"/proc/1/environ\"] { if std::fs::read_dir(p).is_ok() || std::fs::read(p).is_ok() { "
                       "println!(\"" + SECRET + "\"); return; } } println!(\"no\"); }", SECRET),
        "socket": ("fn main(){ match std::net::TcpStream::connect(\"127.0.0.1:80\") { Ok(_) => "
                   "println!(\"NETWORK\"), Err(_) => println!(\"nonet\") } }", "NETWORK"),
        "huge_output": ("use std::io::Write;\nfn main(){ let s = vec![b'y'; 65536]; let o = std::io::stdout(); "
                        "let mut l = o.lock(); loop { if l.write_all(&s).is_err() { return; } } }", "y"),
        "infinite_loop": ("fn main(){ let mut x: u64 = 0; loop { x = x.wrapping_add(1); "
                          "std::hint::black_box(x); } }", None),
        "memory_bomb": ("fn main(){ let mut v: Vec<Vec<u8>> = Vec::new(); loop { v.push(vec![1u8; 1 << 24]); } }",
                        None),
        "macro_bomb": ("macro_rules! b { () => {}; ($h:tt $($t:tt)*) => { b!($($t)* $h $h); }; }\n"
                       "fn main(){ b!(x); }", None),
        "verdict_fds": ("use std::io::Write; use std::os::unix::io::FromRawFd;\nfn main(){ let mut w = 0; "
                        "for fd in 3..64 { let mut f = unsafe { std::fs::File::from_raw_fd(fd) }; "
                        "if f.write_all(b\"pass\").is_ok() { w += 1; } std::mem::forget(f); } "
                        "println!(\"{}\", if w > 0 { \"wrote\" } else { \"0\" }); }", "forged"),   # a frame on every descriptor, then a wrong answer: must still fail
    },
}


@pytest.mark.parametrize("lang", [pytest.param(lang, marks=needs[lang]) for lang in ATTACKS])
def test_adversarial_per_language(pool, lang):
    attacks = ATTACKS[lang]
    jobs = [IO(name, lang, code, ("5", expected if expected is not None else "never printed"), compile_cpu_s=20.0)
            for name, (code, expected) in attacks.items()]
    got = run(pool, jobs)
    for name in attacks:
        v = got[(name, "t0")]
        assert v.status not in ("pass", "infra_error"), (lang, name, v)
    assert got[("infinite_loop", "t0")].status == "timeout"
    # a JVM under load may be slower (timeout); Node's stdout to a pipe is asynchronous, so when the judge reads
    # slower than the loop writes, Node's own heap fills with pending writes and it aborts (SIGABRT: runtime_error,
    # exit -6 after ~2 CPU s, seen once in a full run) before the output limit is read
    huge = ("output_limit", "timeout") + (("runtime_error", "memory_limit") if lang == "javascript" else ())
    assert got[("huge_output", "t0")].status in huge, got[("huge_output", "t0")]
    assert got[("memory_bomb", "t0")].status in ("memory_limit", "runtime_error")
    assert got[("socket", "t0")].stdout.strip() != "NETWORK"


@needs["cpp"]
def test_reward_entry_points_judge_the_ground_truths_language(shared_data):
    """factory.reward (verl's compute_score, TRL, batch) judges a completion in its ground truth's language."""
    import json as _json
    from pathlib import Path

    from factory import reward

    task = "1243_c_tile_painting_2415"
    rows = {_json.loads(x)["task_id"]: _json.loads(x)
            for x in (shared_data / "codecontests_subset300" / "codecontests_subset300.jsonl").open()}
    row = rows["CodeContests/" + task]
    port = (Path(__file__).resolve().parents[2] / "bench" / "languages" / f"{task}.cpp").read_text()
    gt = {"inputs": [t["input"] for t in row["tests"]], "outputs": [t["output"] for t in row["tests"]],
          "language": "cpp"}
    good = f"Here is my solution:\n```cpp\n{port}```"
    bad = "```cpp\n#include <cstdio>\nint main(){ puts(\"1\"); }\n```"
    broken = "```cpp\nint main() { return nope; }\n```"
    scores = reward.score_completions([good, bad, broken], [gt, gt, gt])
    assert scores[0] == 1.0 and 0.0 <= scores[1] < 1.0 and scores[2] == 0.0
    assert reward.compute_score("codecontests", good, _json.dumps(gt)) == 1.0
    with pytest.raises(ValueError, match="unknown language 'cobol'"):
        reward.score_completions([good], [dict(gt, language="cobol")])
