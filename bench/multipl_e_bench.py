"""MultiPL-E HumanEval in C++, Java, JavaScript and Rust through the sandbox's harness tests (issue 42, goal 3).

    python bench/multipl_e_bench.py --sandboxfusion PATH [--per-language 40] [--out bench/results/multipl_e.json]

Rows: MultiPL-E's published layout as SandboxFusion's samples carry it
(``sandbox/tests/datasets/samples/Multi-PLE/humaneval-{cpp,java,js,rs}.jsonl``, each with a ``gpt_solution``);
``PATH`` is a SandboxFusion checkout or its git directory. The slice: the first ``--per-language`` rows whose
solution is known correct, i.e. passes MultiPL-E's own evaluation run natively (the toolchain outside the
sandbox, in a network-less namespace: compile, run, pass iff exit 0). The figure: how many of the slice pass in
the sandbox (``factory.sandbox.multipl_e.job``: program + harness, judged by exit status), and how many of
the rows the two disagree on. Integrity: each slice solution with ``exit(0)`` as the first statement of its
function passes too (the harness's verdict channel is in the program's reach) and is flagged in-process.

``--lake DIR`` also judges the slice through the lake, as a user would: the slice's rows written in MultiPL-E's
published Hub layout (``humaneval-<lang>/test-00000-of-00001.parquet``, the dataset card's eight fields only),
``factory ingest hf-multipl-e --path`` that folder, the solutions as MultiPL-E completion records (``task_id`` =
name, ``language``, ``completion``) through ``factory execute --samples``, and the pass rate per language read
from the lake's verdicts. ``--reuse-slice RESULTS.json`` takes the slice names a previous run recorded instead of
running the native evaluation again."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from factory.sandbox import Limits, SandboxPool, languages, multipl_e  # noqa: E402

FILES = {"cpp": "humaneval-cpp", "java": "humaneval-java", "javascript": "humaneval-js", "rust": "humaneval-rs"}
EXIT_FIRST = {"cpp": "exit(0);", "java": "System.exit(0);", "javascript": "process.exit(0);",
              "rust": "std::process::exit(0);"}


def rows_of(src: Path, name: str) -> list[dict]:
    rel = f"sandbox/tests/datasets/samples/Multi-PLE/{name}.jsonl"
    text = (src / rel).read_text() if (src / rel).exists() else subprocess.run(
        ["git", "--git-dir", str(src), "show", f"HEAD:{rel}"], check=True, capture_output=True, text=True).stdout
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def native(lang: str, source: str, timeout: float = 30.0) -> bool:
    """MultiPL-E's evaluation outside the sandbox: compile, run, pass iff exit 0 (no network: unshare -n)."""
    with tempfile.TemporaryDirectory(prefix="mple-") as d:
        pre = ["unshare", "-n", "--"] if os.geteuid() == 0 else []
        if lang == "cpp":
            Path(d, "main.cpp").write_text(source)
            steps = [["g++", "-std=c++17", "-O2", "-o", "main", "main.cpp"], ["./main"]]
        elif lang == "java":
            file, main = languages.java_names(source)
            Path(d, file).write_text(source)
            steps = [["javac", "-nowarn", file], ["java", "-ea", "-cp", ".", main]]
        elif lang == "javascript":
            Path(d, "main.js").write_text(source)
            steps = [["node", "main.js"]]
        else:
            Path(d, "main.rs").write_text(source)
            rustc = languages.toolchain("rust")["bin"]["rustc"]
            rustc = rustc if os.path.exists(rustc) else "rustc"
            steps = [[rustc, "-O", "--edition", "2021", "-o", "main", "main.rs"], ["./main"]]
        for argv in steps:
            try:
                r = subprocess.run(pre + argv, cwd=d, capture_output=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return False
            if r.returncode != 0:
                return False
        return True


def exit_first(lang: str, code: str) -> str:
    """The candidate's function with exit(0) as its first statement (after the signature's opening brace)."""
    at = code.rfind("{")
    return code[:at + 1] + "\n" + EXIT_FIRST[lang] + code[at + 1:] if at != -1 else code


PUBLISHED = ("name", "language", "prompt", "doctests", "original", "prompt_terminology", "tests", "stop_tokens")
EXT = {"cpp": "cpp", "java": "java", "javascript": "js", "rust": "rs"}


def _factory(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"factory {' '.join(args[:2])} failed: {r.stderr[-2000:]}")
    return r.stdout


def through_lake(lake: Path, slices: dict[str, list[dict]], workers: int) -> dict:
    """The slices through the lake: Hub layout -> ingest hf-multipl-e -> execute --samples -> pass rate per
    language (every verdict, in-process ones included: the figure is the judge's agreement, not a reward)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from factory.lake import connect

    if lake.exists():
        raise SystemExit(f"{lake} exists: pass a new folder")
    root = lake.parent / (lake.name + "-multipl-e")
    schema = pa.schema([(k, pa.list_(pa.string()) if k == "stop_tokens" else pa.string()) for k in PUBLISHED])
    samples = []
    for lang, rows in slices.items():
        folder = root / f"humaneval-{EXT[lang]}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist([{k: r[k] for k in PUBLISHED} for r in rows], schema=schema),
                       folder / "test-00000-of-00001.parquet")
        samples += [{"task_id": r["name"], "language": r["language"], "completion": r["gpt_solution"]} for r in rows]
    (root / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    out = {"folder": str(root)}
    t0 = time.monotonic()
    _factory("init", "--lake", str(lake))
    out["ingest_stdout"] = _factory("ingest", "hf-multipl-e", "--path", str(root), "--lake", str(lake)).strip()
    out["ingest_s"] = round(time.monotonic() - t0, 1)
    t0 = time.monotonic()
    out["execute_stdout"] = _factory("execute", "--samples", str(root / "samples.jsonl"), "--model", "gpt_solution",
                                     "--workers", str(workers), "--lake", str(lake)).strip()
    out["execute_s"] = round(time.monotonic() - t0, 1)
    con = connect(lake, read_only=True)
    rows = con.execute("""
        SELECT p.language, count(*), count(*) FILTER (WHERE e.status = 'pass'),
               count(*) FILTER (WHERE e.judged_in_process),
               list(pb.source_id || ': ' || e.status || ' ' || coalesce(left(e.error_message, 200), ''))
                   FILTER (WHERE e.status <> 'pass')
        FROM silver.programs p JOIN gold.latest_executions e USING (program_id)
        JOIN silver.problems pb USING (problem_id)
        WHERE p.origin = 'sample' GROUP BY 1 ORDER BY 1""").fetchall()
    con.close()
    out["per_language"] = {lang: {"programs": n, "passed": k, "pass_rate": round(k / n, 4), "in_process": f,
                                  "not_passing": bad} for lang, n, k, f, bad in rows}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sandboxfusion", required=True, type=Path)
    ap.add_argument("--per-language", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--languages", default=",".join(FILES), help="comma-separated subset of " + ", ".join(FILES))
    ap.add_argument("--out", default="bench/results/multipl_e.json")
    ap.add_argument("--lake", type=Path, help="also judge the slice through ingest hf-multipl-e + execute --samples "
                                              "in a new lake here (the folder must not exist)")
    ap.add_argument("--reuse-slice", type=Path, help="a previous --out: its slice names, no native evaluation")
    args = ap.parse_args()
    reuse = json.loads(args.reuse_slice.read_text())["per_language"] if args.reuse_slice else None
    slices: dict[str, list[dict]] = {}
    result = {"per_language": {}, "load_avg_start": os.getloadavg()}
    limits = Limits(cpu_s=10.0, wall_factor=4.0, wall_min_s=20.0, memory_mb=1024)
    with SandboxPool(limits, workers=args.workers) as pool:
        for lang, name in FILES.items():
            if lang not in args.languages.split(","):
                continue
            if languages.toolchain(lang) is None:
                result["per_language"][lang] = {"skipped": languages.missing_message(lang)}
                continue
            rows = rows_of(args.sandboxfusion, name)
            slice_, native_fail, tried = [], [], 0
            t0 = time.monotonic()
            known = set(reuse[lang]["slice_names"]) if reuse else None
            for row in rows:
                if len(slice_) >= args.per_language:
                    break
                tried += 1
                job = multipl_e.job(row, row["gpt_solution"], compile_cpu_s=60.0)
                if known is not None:
                    (slice_ if row["name"] in known else native_fail).append((row, job))
                    continue
                source = job.code + "\n" + row["tests"]
                (slice_ if native(lang, source) else native_fail).append((row, job))
            slices[lang] = [row for row, _ in slice_]
            native_s = time.monotonic() - t0
            t0 = time.monotonic()
            jobs = [j for _, j in slice_] + [j for _, j in native_fail]
            verdicts = {v.program_id: v for v in pool.run(jobs)}
            sandbox_s = time.monotonic() - t0
            passed = [j.program_id for _, j in slice_ if verdicts[j.program_id].status == "pass"]
            wrongly_passed = [j.program_id for _, j in native_fail if verdicts[j.program_id].status == "pass"]
            missed = {j.program_id: (verdicts[j.program_id].status, verdicts[j.program_id].error_type,
                                     (verdicts[j.program_id].error_message or "")[:300])
                      for _, j in slice_ if verdicts[j.program_id].status != "pass"}
            hacks = []
            for row, j in slice_[:10]:
                h = multipl_e.job(row, "", program_id=j.program_id + "#exit0", compile_cpu_s=60.0)
                h.code = exit_first(lang, j.code)
                hacks.append(h)
            hv = list(pool.run(hacks))
            result["per_language"][lang] = {
                "rows_tried": tried, "slice": len(slice_), "native_failures_seen": len(native_fail),
                "sandbox_pass_on_slice": len(passed),
                "pass_rate_on_slice": round(len(passed) / len(slice_), 4) if slice_ else None,
                "native_fail_but_sandbox_pass": wrongly_passed, "slice_not_passing": missed,
                "all_in_process_flagged": all(v.judged_in_process for v in verdicts.values()),
                "exit0_hack_pass": sum(v.status == "pass" for v in hv), "exit0_hack_total": len(hv),
                "exit0_hack_flagged": sum(v.judged_in_process for v in hv),
                "native_s": round(native_s, 1), "sandbox_s": round(sandbox_s, 1),
                "slice_names": [row["name"] for row, _ in slice_]}
            print(lang, json.dumps(result["per_language"][lang]), flush=True)
    if args.lake:
        result["lake"] = through_lake(args.lake, slices, args.workers)
        print("lake", json.dumps(result["lake"]), flush=True)
    result["load_avg_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
