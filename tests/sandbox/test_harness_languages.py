"""Function-level tests beyond Python (MultiPL-E / HumanEval-X layout): the problem's test harness is compiled and
run with the candidate (TestSpec kind ``harness``, pass iff exit 0) in C++, Java, JavaScript and Rust -- and in
Python. The harness shares the program's process, so its verdict is flagged ``judged_in_process`` (an
``exit(0)`` before the asserts passes it) and the reward leaves it out by default."""
from __future__ import annotations

import pytest

from factory.sandbox import Job, Limits, SandboxPool, TestSpec, languages, multipl_e
from factory.sandbox import rows

needs = {lang: pytest.mark.skipif(languages.toolchain(lang) is None, reason=languages.missing_message(lang))
         for lang in ("cpp", "java", "javascript", "rust")}

# rows in MultiPL-E's layout (this project's own problem: the sum of the squares of the odd numbers)
ROWS = {
    "cpp": {"name": "odd_squares", "language": "cpp", "stop_tokens": ["\n}"],
            "prompt": "#include<assert.h>\n#include<bits/stdc++.h>\n// Sum of the squares of the odd numbers.\n"
                      "long long odd_squares(std::vector<long long> xs) {\n",
            "tests": "}\nint main() {\n    auto candidate = odd_squares;\n"
                     "    assert(candidate((std::vector<long long>({1, 2, 3}))) == (10));\n"
                     "    assert(candidate((std::vector<long long>())) == (0));\n}\n"},
    "java": {"name": "odd_squares", "language": "java", "stop_tokens": ["\n    }\n"],
             "prompt": "import java.util.*;\nclass Problem {\n    // Sum of the squares of the odd numbers.\n"
                       "    public static long oddSquares(ArrayList<Long> xs) {\n",
             "tests": "    }\n    public static void main(String[] args) {\n"
                      "    assert(oddSquares((new ArrayList<Long>(Arrays.asList((long)1l, (long)2l, (long)3l)))) == (10l));\n"
                      "    assert(oddSquares((new ArrayList<Long>(Arrays.asList()))) == (0l));\n    }\n\n}\n"},
    "javascript": {"name": "odd_squares", "language": "js",
                   "stop_tokens": ["\nfunction ", "\n/*", "\n//", "\nconsole.log"],
                   "prompt": "// Sum of the squares of the odd numbers.\nfunction odd_squares(xs){\n",
                   "tests": "const assert = require('node:assert');\n\n\nfunction test() {\n"
                            "  let candidate = odd_squares;\n  assert.deepEqual(candidate([1, 2, 3]),10);\n"
                            "  assert.deepEqual(candidate([]),0);\n}\n\ntest();"},
    "rust": {"name": "odd_squares", "language": "rs", "stop_tokens": ["\n}"],
             "prompt": "/// Sum of the squares of the odd numbers.\nfn odd_squares(xs: Vec<i64>) -> i64 {\n",
             "tests": "}\n\nfn main() {\n    let candidate = odd_squares;\n"
                      "    assert_eq!(candidate(vec![1, 2, 3]), 10);\n    assert_eq!(candidate(vec![]), 0);\n}\n"},
}
# a base model's continuation (after the prompt; text past the stop token is cut off)
RIGHT = {"cpp": "    long long s = 0;\n    for (auto x : xs) if (x % 2 != 0) s += x * x;\n    return s;\n}\n\nint junk",
         "java": "        long s = 0;\n        for (long x : xs) if (x % 2 != 0) s += x * x;\n        return s;\n    }\n"
                 "    junk that is cut",
         "javascript": "  return xs.filter(x => x % 2 !== 0).reduce((a, x) => a + x * x, 0);\n}\nfunction junk(",
         "rust": "    xs.iter().filter(|x| *x % 2 != 0).map(|x| x * x).sum()\n}\n\nfn junk("}
WRONG = {"cpp": "    long long s = 0;\n    for (auto x : xs) s += x * x;\n    return s;\n}",
         "java": "        long s = 0;\n        for (long x : xs) s += x * x;\n        return s;\n    }\n",
         "javascript": "  return xs.reduce((a, x) => a + x * x, 0);\n}\n",
         "rust": "    xs.iter().map(|x| x * x).sum()\n}\n"}
EXIT_FIRST = {"cpp": "    exit(0);\n}", "java": "        System.exit(0);\n        return 0;\n    }\n",
              "javascript": "  process.exit(0);\n}\n", "rust": "    std::process::exit(0)\n}\n"}
CHAT = {   # a chat model's answer: the whole function in a fenced block, then an example block
    "cpp": "Here it is:\n```cpp\n#include<bits/stdc++.h>\nlong long odd_squares(std::vector<long long> xs) {\n"
           "    long long s = 0;\n    for (auto x : xs) if (x & 1) s += x * x;\n    return s;\n}\n```\n"
           "```cpp\nint main() { return 1; }\n```",
    "javascript": "```javascript\n// Sum of the squares of the odd numbers.\n// >>> odd_squares([1, 2, 3])\n// 10\n"
                  "function odd_squares(xs){\n  let s = 0;\n  for (const x of xs) if (x % 2) s += x * x;\n"
                  "  return s;\n}\n```\nUse it:\n```js\nconsole.log(odd_squares([1]));\nprocess.exit(3);\n```",
}

# a chat answer that defines only the function: the prompt's includes (the harness's assert) are put before it
BARE = {"cpp": "```cpp\nlong long odd_squares(std::vector<long long> xs) {\n    long long s = 0;\n"
               "    for (auto x : xs) if (x % 2) s += x * x;\n    return s;\n}\n```"}

LIMITS = Limits(cpu_s=5.0, wall_factor=4.0, wall_min_s=10.0, memory_mb=512)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(LIMITS, workers=2) as p:
        yield p


@pytest.mark.parametrize("lang", [pytest.param(lang, marks=needs[lang]) for lang in ROWS])
def test_harness_right_wrong_and_exit_hack_per_language(pool, lang):
    row = ROWS[lang]
    jobs = [multipl_e.job(row, RIGHT[lang], "right", compile_cpu_s=30.0),
            multipl_e.job(row, WRONG[lang], "wrong", compile_cpu_s=30.0),
            multipl_e.job(row, EXIT_FIRST[lang], "exit0", compile_cpu_s=30.0)]
    if lang in CHAT:
        jobs.append(multipl_e.job(row, CHAT[lang], "chat", compile_cpu_s=30.0))
    if lang in BARE:
        jobs.append(multipl_e.job(row, BARE[lang], "bare", compile_cpu_s=30.0))
    got = {v.program_id: v for v in pool.run(jobs)}
    if lang in BARE:
        assert got["bare"].status == "pass", (got["bare"].error_message, got["bare"].stderr)
    assert got["right"].status == "pass", (got["right"].error_type, got["right"].error_message, got["right"].stderr)
    assert got["wrong"].status == "fail", (got["wrong"].status, got["wrong"].error_message)
    if lang in CHAT:
        assert got["chat"].status == "pass", (got["chat"].error_message, got["chat"].stderr)
    # the harness's channel (the exit status) is the program's: exit(0) first passes -- flagged, so it is
    # excluded from rewards by default
    assert got["exit0"].status == "pass"
    assert all(v.judged_in_process for v in got.values())
    assert rows.tests_reward({"tests": ("pass", True)}, ["tests"], True, False) != 1.0
    assert rows.tests_reward({"tests": ("pass", True)}, ["tests"], False, False) == 1.0


def test_harness_in_python_and_its_validation(pool):
    good = Job("py", "def add(a, b):\n    return a + b\n", [TestSpec("h", "harness", code="assert add(2, 3) == 5")])
    bad = Job("py-bad", "def add(a, b):\n    return a - b\n", [TestSpec("h", "harness", code="assert add(2, 3) == 5")])
    two = Job("two", "x = 1", [TestSpec("h", "harness", code="assert x"), TestSpec("s", "stdio", input="",
                                                                                   expected="")])
    got = {(v.program_id, v.test_id): v for v in pool.run([good, bad, two])}
    assert got[("py", "h")].status == "pass" and got[("py", "h")].judged_in_process
    assert got[("py-bad", "h")].status == "fail" and "AssertionError" in got[("py-bad", "h")].error_message
    assert got[("two", "h")].status == "infra_error" and "only test" in got[("two", "h")].error_message


def test_multipl_e_program_building():
    js = multipl_e.program(ROWS["javascript"], CHAT["javascript"])   # doc comments at column 0 are not a stop
    assert js.startswith("// Sum of the squares") and js.rstrip().endswith("return s;\n}") and "console" not in js
    assert multipl_e.function_name(ROWS["java"]["prompt"]) == "oddSquares"
    row = ROWS["rust"]
    assert multipl_e.program(row, RIGHT["rust"]).endswith("map(|x| x * x).sum()")   # cut before "\n}"
    assert multipl_e.language_of({"language": "rs"}) == "rust"
    with pytest.raises(ValueError, match="language"):
        multipl_e.language_of({"name": "x", "language": "cobol"})
    assert multipl_e.cut_at_stop_tokens("a\nb\nfunction c", ["\nfunction ", "re:\\nb"]) == "a"
    # a whole C++ program gets the prompt's includes it lacks (once); Java gets none (its prompts import
    # org.javatuples, which this sandbox does not ship)
    assert multipl_e.program(ROWS["cpp"], BARE["cpp"]).startswith("#include<assert.h>\n#include<bits/stdc++.h>\nlong")
    assert multipl_e.program(ROWS["cpp"], CHAT["cpp"]).count("#include<bits/stdc++.h>") == 1
    java = "```java\nclass Problem {\n    public static long oddSquares(ArrayList<Long> xs) {\n        return 0;\n    }\n}\n```"
    assert not multipl_e.program(ROWS["java"], java).startswith("import")
