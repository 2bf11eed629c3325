"""Languages benchmark: C++, Java, JavaScript and Rust programs judged on real CodeContests problems, side by side
with the problems' own Python references, in the real sandbox.

    python bench/languages_bench.py                 # 6 problems x 4 copies per language, 2 workers
    python bench/languages_bench.py --copies 8 --workers 2

Programs: the Python references of six CodeContests problems (/work/shared/data/codecontests_subset300) and
this project's ports of them (bench/languages/), each judged on the problem's real tests (token comparison).
Per language: reference pass rate (tests passed / tests, programs passing all), programs judged per second, and
the zero-overhead bound -- the pool's cores divided by the CPU one program needs (its compilation + every test
run, as the sandbox metered them) -- and the share of that bound reached.  Every copy is a separate program
(compiled again: the sandbox keeps nothing between programs).  Writes ``bench/results/languages_bench.json``.
"""
from __future__ import annotations

import os
from collections import Counter

from harness import DATA, ROOT, jsonl, machine, parser, table, timed, write  # noqa: I001  (first: sys.path)

from factory.sandbox import Job, Limits, SandboxPool, TestSpec  # noqa: E402
from factory.sandbox import languages  # noqa: E402

CC = DATA / "codecontests_subset300"
PORTS = ROOT / "bench" / "languages"
EXT = {"cpp": ".cpp", "java": ".java", "javascript": ".js", "rust": ".rs"}


def problems() -> list[dict]:
    names = sorted({p.stem for p in PORTS.glob("*.cpp")})
    rows = {r["task_id"]: r for r in jsonl(CC / "codecontests_subset300.jsonl")}
    return [rows["CodeContests/" + n] for n in names]


def jobs_for(lang: str, probs: list[dict], copies: int) -> list[Job]:
    out = []
    for k in range(copies):
        for row in probs:
            short = row["task_id"].split("/", 1)[1]
            code = (row["reference_solution_python"] if lang == "python"
                    else (PORTS / (short + EXT[lang])).read_text())
            tests = [TestSpec(f"t{i}", "stdio", input=t["input"], expected=t["output"], comparison="token")
                     for i, t in enumerate(row["tests"])]
            out.append(Job(f"{lang}:{short}:{k}", code, tests, language=lang, stop_at_timeout=False,
                           compile_cpu_s=30.0))
    return out


def measure(lang: str, probs: list[dict], copies: int, workers: int, limits: Limits) -> dict:
    jobs = jobs_for(lang, probs, copies)
    with SandboxPool(limits, workers=workers) as pool:
        pool.run(jobs_for(lang, probs[:1], 1))   # warm-up (page cache, JIT-less first compile)
        wall, verdicts = timed(lambda: list(pool.run(jobs)))
    by_prog: dict[str, list] = {}
    for v in verdicts:
        by_prog.setdefault(v.program_id, []).append(v)
    run_cpu = sum(v.cpu_ms for v in verdicts) / 1000
    compile_cpu = sum((vs[0].compile_ms or 0.0) for vs in by_prog.values()) / 1000
    statuses = dict(Counter(v.status for v in verdicts))
    n = len(by_prog)
    cpu_per_program = (run_cpu + compile_cpu) / n
    bound = workers / cpu_per_program if cpu_per_program else None
    rate = n / wall
    return {"language": lang, "programs": n, "tests": len(verdicts),
            "tests_passed": statuses.get("pass", 0), "test_pass_rate": round(statuses.get("pass", 0) / len(verdicts), 4),
            "programs_all_pass": sum(all(v.status == "pass" for v in vs) for vs in by_prog.values()) / n,
            "statuses": statuses, "wall_s": round(wall, 3), "programs_per_s": round(rate, 3),
            "compile_cpu_s_per_program": round(compile_cpu / n, 4), "run_cpu_s_per_program": round(run_cpu / n, 4),
            "bound_programs_per_s": round(bound, 3) if bound else None,
            "pct_of_bound": round(100 * rate / bound, 1) if bound else None}


def main() -> None:
    ap = parser(__doc__, "languages_bench.json", {"--copies": 4, "--workers": min(2, os.cpu_count() or 1),
                                                   "--languages": "python,cpp,java,javascript,rust"})
    a = ap.parse_args()
    probs = problems()
    limits = Limits(cpu_s=6.0, memory_mb=1024)
    rows = []
    load_before = os.getloadavg()
    for lang in a.languages.split(","):
        if lang != "python" and languages.toolchain(lang) is None:
            print(f"skip {lang}: {languages.missing_message(lang)}")
            continue
        rows.append(r := measure(lang, probs, a.copies, a.workers, limits))
        print(f"{lang}: {r['programs_per_s']} programs/s ({r['pct_of_bound']} % of bound)", flush=True)
    load = [round(x, 2) for x in (*load_before, *os.getloadavg())]
    print(f"\n{len(probs)} CodeContests problems x {a.copies} copies, {a.workers} workers, "
          f"{machine()['machine']}, {os.cpu_count()} cores, load average before/after "
          f"{load[:3]} / {load[3:]} (other work on the machine lowers % of bound)\n")
    print(table(rows, ["language", "test_pass_rate", "programs_all_pass", "programs_per_s", "compile_cpu_s_per_program",
                       "run_cpu_s_per_program", "bound_programs_per_s", "pct_of_bound"]))
    write(a.out, {
        "problems": [p["task_id"] for p in probs], "copies": a.copies, "workers": a.workers,
        "cpu_count": os.cpu_count(), "loadavg_before": load[:3], "loadavg_after": load[3:], "limits": limits.as_dict(),
        "bound": "workers / (compile CPU + run CPU per program), CPU as the sandbox metered it", "rows": rows})


if __name__ == "__main__":
    main()
