"""`factory serve` judging C++, Java, JavaScript and Rust through SandboxFusion's own client (`sandbox-fusion`
package) and verl's `sandbox_fusion` utility: real HTTP, the real sandbox, real CodeContests tests with this
project's ports of their references (bench/languages/)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from factory.sandbox import languages

from tests.serve.conftest import post

PORTS = Path(__file__).resolve().parents[2] / "bench" / "languages"
EXT = {"cpp": ".cpp", "java": ".java", "nodejs": ".js", "rust": ".rs"}
CANON = {"cpp": "cpp", "java": "java", "nodejs": "javascript", "rust": "rust"}
SUM = {
    "cpp": "#include <cstdio>\nint main(){ long long a, b; scanf(\"%lld %lld\", &a, &b); printf(\"%lld\\n\", a + b); }",
    "java": "import java.util.*;\npublic class Main { public static void main(String[] x) { Scanner s = new "
            "Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }",
    "nodejs": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number); "
              "console.log(a + b);",
    "rust": "use std::io::Read;\nfn main(){ let mut s = String::new(); std::io::stdin().read_to_string(&mut s)"
            ".unwrap(); let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect(); "
            "println!(\"{}\", v[0] + v[1]); }",
}
CRASH = {"cpp": "#include <cstdlib>\nint main(){ exit(4); }",
         "java": "public class Main { public static void main(String[] x) { System.exit(4); } }",
         "nodejs": "process.exit(4)", "rust": "fn main(){ std::process::exit(4); }"}
LOOP = {"cpp": "int main(){ volatile long x = 0; for (;;) ++x; }",
        "java": "public class Main { public static void main(String[] x) { long a = 0; while (true) a++; } }",
        "nodejs": "for (;;) {}", "rust": "fn main(){ let mut x: u64 = 0; loop { x = std::hint::black_box(x + 1); } }"}
BROKEN = {"cpp": "int main() { return nope; }", "java": "public class Main { void f() { int x = \"s\"; } }",
          "rust": "fn main() { let x: i32 = \"s\"; }"}
PROBLEM = "CodeContests/1091_c_new_year_and_the_sphere_transmission_1262"

LANGS = [pytest.param(lang, marks=pytest.mark.skipif(languages.toolchain(CANON[lang]) is None,
                                                       reason=languages.missing_message(CANON[lang])))
         for lang in SUM]


@pytest.fixture(scope="module")
def problem(shared_data):
    rows = [json.loads(x) for x in (shared_data / "codecontests_subset300" / "codecontests_subset300.jsonl").open()]
    return next(r for r in rows if r["task_id"] == PROBLEM)


@pytest.mark.parametrize("lang", LANGS)
def test_run_code_each_language_with_the_sandbox_fusion_client(server, lang):
    import sandbox_fusion as sf

    ok = sf.run_code(sf.RunCodeRequest(code=SUM[lang], stdin="2 40\n", language=lang, compile_timeout=30),
                     endpoint=server.url)
    assert ok.status == sf.RunStatus.Success, ok
    assert ok.run_result.stdout.strip() == "42" and ok.run_result.return_code == 0
    if lang != "nodejs":
        assert ok.compile_result is not None and ok.compile_result.return_code == 0
    crash = sf.run_code(sf.RunCodeRequest(code=CRASH[lang], language=lang, compile_timeout=30), endpoint=server.url)
    assert crash.status == sf.RunStatus.Failed and crash.run_result.return_code == 4
    slow = sf.run_code(sf.RunCodeRequest(code=LOOP[lang], language=lang, run_timeout=1, compile_timeout=30),
                       endpoint=server.url)
    assert slow.run_result.status == sf.CommandRunStatus.TimeLimitExceeded
    if lang in BROKEN:
        bad = sf.run_code(sf.RunCodeRequest(code=BROKEN[lang], language=lang, compile_timeout=30), endpoint=server.url)
        assert bad.status == sf.RunStatus.Failed and bad.run_result is None
        assert bad.compile_result.return_code == 1 and "error" in bad.compile_result.stderr
        assert sf.summary_run_code_result(bad, sf.SummaryMapping(CompileFailed="CE")) == "CE"


@pytest.mark.parametrize("lang", LANGS)
def test_submit_and_verl_judge_a_codecontests_problem_per_language(server, problem, lang):
    import sandbox_fusion as sf
    from verl.utils.reward_score.sandbox_fusion.utils import check_correctness

    source = (PORTS / (PROBLEM.split("/", 1)[1] + EXT[lang])).read_text()
    data = {"id": PROBLEM, "test": [{"input": {"stdin": t["input"]}, "output": {"stdout": t["output"]}}
                                    for t in problem["tests"]]}
    good = sf.submit(sf.SubmitRequest(dataset="code_contests", id=PROBLEM, completion=f"```{lang}\n{source}```",
                                      config=sf.TestConfig(provided_data=data, language=lang)), endpoint=server.url)
    assert good.accepted and len(good.tests) == len(problem["tests"]), [t.test_info for t in good.tests]
    bad = sf.submit(sf.SubmitRequest(dataset="code_contests", id=PROBLEM, completion=f"```{lang}\n{CRASH[lang]}```",
                                     config=sf.TestConfig(provided_data=data, language=lang)), endpoint=server.url)
    assert not bad.accepted and not any(t.passed for t in bad.tests)
    io = {"inputs": [t["input"] for t in problem["tests"][:4]], "outputs": [t["output"] for t in problem["tests"][:4]]}
    results, _ = check_correctness(server.url + "/run_code", io, source, timeout=10, language=lang)
    assert results == [True] * 4, results


def test_unknown_and_unsupported_languages_list_the_supported_ones(server):
    for lang, needle in (("klingon", "not a known language"), ("go", "a SandboxFusion language")):
        code, _, answer = post(server.url + "/run_code", {"code": "x", "language": lang})
        assert code == 400 and answer["field"] == "language" and needle in answer["error"], answer
        for name in ("python", "cpp", "java", "nodejs", "javascript", "rust"):
            assert name in answer["error"]
