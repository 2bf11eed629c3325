"""Hub datasets at seed scale (issue #41): memory of a streamed ingest with 20 MB test inputs, and every stage from
ingest to export on synthetic rows in DeepCoder-Preview's published layout, at fractions of its size.

    python bench/hub_scale.py memory [--big-mb 20]             # peak RSS of one vs five 20 MB-input problems
    python bench/hub_scale.py scale --fractions 1/64,1/32,1/16  # per stage: wall, CPU, peak RSS, lake bytes
    python bench/hub_scale.py plot RESULTS.json                 # results -> PNG (log-log growth per stage)
    python bench/hub_scale.py shapes --shape huge,cc20k,tiny    # ingest MB/s, CPU-s, peak of CodeContests shapes
    python bench/hub_scale.py floor --shape tiny                # the least that shape's ingest can take here

Full size (fraction 1) = DeepCoder-Preview's train: 24k problems, ~20 tests each, 16 programs per problem
(7.7 M verdict rows), ~18 GB of train parquet. Test sizes follow a log-normal body (median ~300 B) plus a tail of
MB-sized inputs (1 in 40 tests, 0.5-4 MB), so source bytes are dominated by the tail as in the real dataset.
Every stage runs as its own `factory` process (os.wait4 gives its CPU time and peak RSS); verdict rows are
written synthetically (execution throughput is measured by bench/performance, not here). Run it niced.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

from harness import ROOT as REPO  # noqa: I001  (first: the repository on sys.path)

FULL_PROBLEMS = 24_000
TESTS_PER_PROBLEM = 20
PROGRAMS_PER_PROBLEM = 16
SOLUTION = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"


# -- synthetic rows in the published layout ---------------------------------------------------------------
def _numbers(rng: random.Random, chars: int) -> str:
    """A test input of about ``chars`` characters: space-separated integers (what MB inputs look like)."""
    out, n = [], 0
    while n < chars:
        x = str(rng.randrange(10 ** 9))
        out.append(x)
        n += len(x) + 1
    return " ".join(out) + "\n"


def _test_chars(rng: random.Random) -> int:
    if rng.random() < 1 / 40:
        return int(rng.uniform(0.5, 4.0) * (1 << 20))
    return max(4, int(rng.lognormvariate(5.7, 1.2)))


def make_deepcoder(folder: Path, problems: int, seed: int = 0, shards: int | None = None,
                   big_chars: int | None = None, row_group_size: int = 32, workers: int = 1) -> dict:
    """``folder/taco/train-0000k-of-0000n.parquet`` with DeepCoder's columns (problem, tests JSON string,
    starter_code, metadata JSON string). ``big_chars``: every problem gets one test of exactly that size.
    ``workers`` > 1: shards written by that many processes, each shard from its own seed (seed, shard)."""
    shards = shards or max(1, problems // 750)
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(_deepcoder_shard, [(folder, problems, seed, shards, s, big_chars, row_group_size)
                                                     for s in range(shards)]))
        size = sum(f.stat().st_size for f in (folder / "taco").glob("*.parquet"))
        return {"problems": problems, "tests": sum(p[0] for p in parts), "input_chars": sum(p[1] for p in parts),
                "parquet_bytes": size, "seeding": "per shard"}
    return _deepcoder_shards(folder, problems, random.Random(seed), shards, range(shards), big_chars,
                             row_group_size)


def _deepcoder_shard(job) -> tuple[int, int]:
    folder, problems, seed, shards, s, big_chars, row_group_size = job
    r = _deepcoder_shards(folder, problems, random.Random(f"{seed}-{s}"), shards, [s], big_chars, row_group_size)
    return r["tests"], r["input_chars"]


def _deepcoder_shards(folder: Path, problems: int, rng: random.Random, shards: int, which, big_chars,
                      row_group_size: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("problem", pa.string()), ("tests", pa.string()), ("starter_code", pa.string()),
                        ("metadata", pa.string())])
    (folder / "taco").mkdir(parents=True, exist_ok=True)
    per = -(-problems // shards)
    tests_total = chars_total = 0
    for s in which:
        writer = pq.ParquetWriter(folder / "taco" / f"train-{s:05d}-of-{shards:05d}.parquet", schema)
        rows = []
        for p in range(s * per, min(problems, (s + 1) * per)):
            sizes = [big_chars] if big_chars else []
            sizes += [_test_chars(rng) for _ in range(TESTS_PER_PROBLEM - len(sizes))]
            inputs = [_numbers(rng, c) for c in sizes]
            outputs = [f"{rng.randrange(10 ** 12)}\n" for _ in inputs]
            tests_total += len(inputs)
            chars_total += sum(map(len, inputs))
            words = ("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(3, 9)))
                     for _ in range(80))   # distinct statements: near-duplicate dedup must not fold them
            rows.append({"problem": f"Problem {p}: print the sum of the integers on stdin. " + " ".join(words),
                         "tests": json.dumps({"inputs": inputs, "outputs": outputs}), "starter_code": "",
                         "metadata": json.dumps({"difficulty": rng.randrange(1, 10)})})
            if len(rows) >= row_group_size:
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                rows = []
        if rows:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
        writer.close()
    size = sum(f.stat().st_size for f in (folder / "taco").glob("*.parquet"))
    return {"problems": problems, "tests": tests_total, "input_chars": chars_total, "parquet_bytes": size}


# -- CodeContests layout in three shapes (issue #50) ----------------------------------------------------------
# (problems, tests per problem, chars per test (lo, hi), 8 MiB tests in all): "cc20k" is 1/4 of the 868 MB file
# of the issue (1,500 problems, 50,565 tests of ~20 KiB, 15 of 8 MiB); "huge" puts the bytes in few big tests
# (DeepCoder's tail: 1 in 40 of 0.5-4 MB); "tiny" is many tests of a few dozen bytes.
CC_BLOCKS = ("public_tests", "private_tests", "generated_tests")
SHAPES = {"huge": (600, 20, None, 0), "cc20k": (375, 34, (10 << 10, 30 << 10), 4), "tiny": (6000, 100, (8, 64), 0),
          "cc20k-full": (1500, 34, (10 << 10, 30 << 10), 15), "one": (1, 100, (8, 64), 0)}
_DIGITS = bytes.maketrans(bytes(range(256)), (b"0123456789" * 26)[:230] + b" " * 26)


def _digits(rng: random.Random, chars: int) -> str:
    """``chars`` characters of digits and spaces (fast: one randbytes call)."""
    return rng.randbytes(chars).translate(_DIGITS).decode() + "\n"


def make_code_contests(folder: Path, shape: str, seed: int = 0, row_group_size: int = 16) -> dict:
    """``folder/data/train-00000-of-00001.parquet`` in deepmind/code_contests' schema, tests sized by ``shape``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.ingest_hub.hubfixtures import CODE_CONTESTS_SCHEMA

    problems, per, sizes, big = SHAPES[shape]
    rng = random.Random(f"{shape}-{seed}")
    path = folder / "data" / "train-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = pq.ParquetWriter(path, CODE_CONTESTS_SCHEMA)
    rows, tests_total, big_every = [], 0, problems // big if big else 0
    for p in range(problems):
        chars = [_test_chars(rng) if sizes is None else rng.randrange(*sizes) for _ in range(per)]
        if big_every and p % big_every == 0 and p // big_every < big:
            chars[-1] = 8 << 20
        io = [(_digits(rng, c), f"{rng.randrange(10 ** 12)}\n") for c in chars]
        xs = [rng.randrange(1000) for _ in range(3)]
        io[0] = (f"3\n{' '.join(map(str, xs))}\n", f"{sum(xs)}\n")   # the public example, shown in the statement
        tests_total += len(io)
        blocks = [io[:1], io[1:len(io) // 3], io[len(io) // 3:]]   # public, private, generated
        words = " ".join("".join(rng.choice("abcdefghij") for _ in range(rng.randrange(3, 9))) for _ in range(200))
        sols = [SOLUTION + f"# {p} {k}\n" for k in range(6)]
        rows.append({"name": f"{p}_A. Sum {p}", "description": f"Problem {p}: print the sum. {words}\n\nExample\n\nInput\n\n{io[0][0]}\nOutput\n\n{io[0][1]}",
                     **{k: {"input": [i for i, _ in b], "output": [o for _, o in b]}
                        for k, b in zip(("public_tests", "private_tests", "generated_tests"), blocks)},
                     "source": 2, "difficulty": 7, "solutions": {"language": [3] * 6, "solution": sols},
                     "incorrect_solutions": {"language": [3, 2], "solution": [SOLUTION + "#x\n", "int main(){}\n"]},
                     "cf_contest_id": p, "cf_index": "A", "cf_points": 500.0, "cf_rating": 800 + p % 20 * 100,
                     "cf_tags": ["math"], "is_description_translated": False, "untranslated_description": "",
                     "time_limit": {"seconds": 2, "nanos": 0}, "memory_limit_bytes": 256 << 20,
                     "input_file": "", "output_file": ""})
        if len(rows) >= row_group_size:
            writer.write_table(pa.Table.from_pylist(rows, schema=CODE_CONTESTS_SCHEMA))
            rows = []
    if rows:
        writer.write_table(pa.Table.from_pylist(rows, schema=CODE_CONTESTS_SCHEMA))
    writer.close()
    return {"shape": shape, "problems": problems, "tests": tests_total, "parquet_bytes": path.stat().st_size}


def _shape_file(work: Path, shape: str) -> tuple[dict, Path]:
    """(info, folder) of the shape's CodeContests-layout file under ``work``, made on first use."""
    data = work / f"cc-{shape}"
    if not (data / "info.json").is_file():
        (data / "info.json").write_text(json.dumps(make_code_contests(data, shape)))
    return json.loads((data / "info.json").read_text()), data


def shapes(args) -> dict:
    """Per shape: ``factory ingest hf-code-contests`` into a fresh lake: MB/s of source parquet, CPU-s, peak RSS,
    /proc/loadavg before and after (the CPU-s is the load-independent figure)."""
    work, code, out = Path(args.work), Path(args.code or REPO), {}
    env, fx = dict(os.environ, PYTHONPATH=str(code)), [sys.executable, "-m", "factory.cli"]
    for shape in args.shape:
        (info, data), lake = _shape_file(work, shape), work / f"lake-cc-{shape}"
        shutil.rmtree(lake, ignore_errors=True)
        run_measured(fx + ["init", "--lake", str(lake)], env, code)
        load = Path("/proc/loadavg").read_text().split()[:3]
        m = run_measured(fx + ["ingest", "hf-code-contests", "--path", str(data), "--lake", str(lake)], env, code)
        m.pop("stdout", None)
        mb = info["parquet_bytes"] / 2 ** 20
        out[shape] = {**info, **m, "mb_per_s": round(mb / m["wall_s"], 1), "mb_per_cpu_s": round(mb / m["cpu_s"], 1),
                      "load_before": load, "load_after": Path("/proc/loadavg").read_text().split()[:3]}
        print(f"{shape:<6} {mb:7.1f} MB {info['tests']:>7} tests  wall {m['wall_s']:7.1f} s  cpu {m['cpu_s']:7.1f} s  "
              f"{out[shape]['mb_per_s']:6.1f} MB/s  peak {m['peak_rss_mb']:6.0f} MB (all processes {m['peak_tree_mb']:6.0f})  "
              f"load {' '.join(load)}", flush=True)
    return out


def floor(args) -> dict:
    """The least an ingest of ``args.shape`` can take on this machine: the whole command on a one-problem file (the
    fixed cost: start, imports, lake, commit), plus per test what the lake's contract asks for whatever the code:
    three sha256 (input and output digests, the test id; the cheaper of hashlib and DuckDB) and its bronze payload
    (Arrow -> Python -> JSON), on every core at once. Prints the MB/s that bounds."""
    import hashlib

    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    work, walls = Path(args.work), []
    env, fx, (_, one), lake = dict(os.environ, PYTHONPATH=str(REPO)), [sys.executable, "-m", "factory.cli"], \
        _shape_file(work, "one"), work / "lake-cc-one"
    for _ in range(3):
        shutil.rmtree(lake, ignore_errors=True)
        run_measured(fx + ["init", "--lake", str(lake)], env)
        walls.append(run_measured(fx + ["ingest", "hf-code-contests", "--path", str(one), "--lake", str(lake)],
                                  env)["wall_s"])
    info, data = _shape_file(work, args.shape)
    blocks = pq.read_table(data / "data" / "train-00000-of-00001.parquet", columns=list(CC_BLOCKS))
    texts = [t for b in CC_BLOCKS for side in ("input", "output") for t in blocks.column(b).combine_chunks()
             .field(side).flatten().to_pylist()]
    sha = hashlib.sha256
    t0 = time.process_time()   # a digest and an id-like hash per text: two hashes
    [sha(f'["0123456789abcdef",{i % 100},"stdio",null,"{sha(x.encode()).hexdigest()}"]'.encode()).hexdigest()
     for i, x in enumerate(texts)]
    hashlib_s = (time.process_time() - t0) / (2 * len(texts))
    column = duckdb.connect(config={"threads": 1}).from_arrow(pa.table({"x": texts}))
    t0 = time.process_time()
    column.select("sha256(x)").to_arrow_table()
    duckdb_s = (time.process_time() - t0) / len(texts)
    t0 = time.process_time()
    for b in CC_BLOCKS:
        [json.dumps(v, ensure_ascii=False) for v in blocks.column(b).to_pylist()]
    bronze_s = (time.process_time() - t0) / info["tests"]
    cores, fixed, mb, per_test = len(os.sched_getaffinity(0)), min(walls), info["parquet_bytes"] / 2 ** 20, \
        3 * min(hashlib_s, duckdb_s) + bronze_s
    spread = info["tests"] * per_test / cores
    out = {"shape": args.shape, "tests": info["tests"], "parquet_mb": round(mb, 1), "fixed_wall_s": fixed,
           "sha256_us": {"hashlib": round(hashlib_s * 1e6, 3), "duckdb": round(duckdb_s * 1e6, 3)},
           "bronze_us_per_test": round(bronze_s * 1e6, 3), "floor_us_per_test": round(per_test * 1e6, 3),
           "cores": cores, "floor_wall_s": round(fixed + spread, 2), "bound_mb_per_s": round(mb / (fixed + spread), 1),
           "bound_mb_per_s_without_fixed_cost": round(mb / spread, 1)}
    print(" ".join(f"{k} {v}" for k, v in out.items()), flush=True)
    return out


# -- measuring one process ---------------------------------------------------------------------------------
def run_measured(cmd: list[str], env: dict | None = None, cwd: Path = REPO) -> dict:
    """Run ``cmd``; wall seconds, CPU seconds (user+sys) and peak RSS (MB) of that process alone (os.wait4)."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        tree = [0]
        sampler = threading.Thread(target=_sample_tree, args=(proc.pid, tree), daemon=True)
        sampler.start()
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr[-3000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
            "peak_rss_mb": round(ru.ru_maxrss / 1024, 1), "peak_tree_mb": round(tree[0] / 1024, 1),
            "stdout": stdout[-2000:]}


def _sample_tree(pid: int, peak: list) -> None:
    """peak[0]: the largest sum of VmRSS (kB) over ``pid`` and its descendants (conversion workers), every 20 ms
    until ``pid`` is gone (ru_maxrss gives the largest single process only)."""
    while True:
        total, todo = 0, [pid]
        while todo:
            p = todo.pop()
            try:
                total += _vm("VmRSS", p)
                todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
            except (OSError, ValueError):
                continue
        if total == 0:
            return
        peak[0] = max(peak[0], total)
        time.sleep(0.02)


def _vm(field: str, pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])   # kB
    return 0


def child_ingest(folder: str, lake: str) -> None:
    """(child) Ingest ``folder`` with hf-deepcoder; print baseline RSS and the peak during the ingest alone."""
    from factory.stages.ingest import ingest_source
    from tests.lakeutil import init_lake

    init_lake(Path(lake))
    import pyarrow  # noqa: F401  (everything the ingest imports is loaded before the baseline)
    from factory.ingest.hub import ingest as _  # noqa: F401

    Path("/proc/self/clear_refs").write_text("5")   # reset VmHWM: the peak below is the ingest's own
    base = _vm("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    r = ingest_source("hf-deepcoder", [folder], lake=lake)
    print(json.dumps({"baseline_mb": base / 1024, "peak_mb": _vm("VmHWM") / 1024,
                      "delta_mb": (_vm("VmHWM") - base) / 1024, "wall_s": time.perf_counter() - t0,
                      "cpu_s": time.process_time() - c0, "problems": r.problems, "tests": r.tests,
                      "revision": r.revision}))


def _ingest_peak(work: Path, name: str, n: int, chars: int) -> dict:
    folder = work / name
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(work / f"lake-{name}", ignore_errors=True)
    info = make_deepcoder(folder, n, seed=n, shards=1, big_chars=chars, row_group_size=1)
    r = subprocess.run([sys.executable, __file__, "child-ingest", str(folder), str(work / f"lake-{name}")],
                       capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["parquet_mb"] = info["parquet_bytes"] / 2 ** 20
    return res


def memory(args) -> dict:
    """Peak RSS above baseline while ingesting problems that each carry one ``--big-mb`` test input, and the same
    for one problem whose largest input is 1 KB: (big - small) / big-mb = how many times the input is held."""
    work = Path(args.work)
    small = _ingest_peak(work, "small1", 1, 1024)
    out = {"1_small_problem": small}
    print(f"1 problem with a 1 KB input: peak +{small['delta_mb']:.0f} MB over {small['baseline_mb']:.0f} MB "
          f"baseline; {small['wall_s']:.1f} s", flush=True)
    for n in args.counts:
        res = _ingest_peak(work, f"big{n}", n, int(args.big_mb * (1 << 20)))
        res["copies_of_one_input"] = round(res["delta_mb"] / args.big_mb, 2)
        res["held_x"] = round((res["delta_mb"] - small["delta_mb"]) / args.big_mb, 2)
        out[f"{n}_big_problems"] = res
        print(f"{n} problem(s) with a {args.big_mb} MB input: peak +{res['delta_mb']:.0f} MB over "
              f"{res['baseline_mb']:.0f} MB baseline = {res['copies_of_one_input']} x the input; "
              f"{res['held_x']} x above the 1 KB run; {res['wall_s']:.1f} s", flush=True)
    return out


# -- the scale run -------------------------------------------------------------------------------------------
def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def write_verdicts(lake: str) -> None:
    """(child) 16 programs per problem and one verdict per (program, test): the rows execute would write."""
    import hashlib

    import pyarrow as pa

    from factory.lake.commit import stage_run

    with stage_run("execute", {"synthetic": "bench/hub_scale"}, lake=lake) as run:
        tests = run.con.execute("SELECT problem_id, list(test_id ORDER BY ordinal) FROM silver.tests "
                                "GROUP BY problem_id").fetchall()
        now = run.started_at
        rng = random.Random(1)
        progs, execs = [], []

        def flush():
            if progs:
                run.write("silver.programs", pa.Table.from_pylist(progs, schema=run.catalog["silver.programs"]
                                                                  .arrow_schema()))
            if execs:
                run.write("silver.executions", pa.Table.from_pylist(execs, schema=run.catalog["silver.executions"]
                                                                    .arrow_schema()))
            progs.clear()
            execs.clear()

        for pi, (problem_id, test_ids) in enumerate(tests):
            skill = rng.random()
            for k in range(PROGRAMS_PER_PROBLEM):
                code = f"K = {pi * PROGRAMS_PER_PROBLEM + k}\n" + SOLUTION   # distinct code: dedup's exact-code rule must not fold
                pid = hashlib.sha256(f"{problem_id}:{k}".encode()).hexdigest()[:16]
                ref = k == 0   # one reference that passes every test (validates the suite), 15 samples
                progs.append({"program_id": pid, "problem_id": problem_id, "origin": "reference" if ref else "sample",
                              "model": None if ref else "synthetic", "sample_index": None if ref else k,
                              "code": code, "raw_completion": None if ref else code, "created_at": now,
                              "run_id": run.run_id, "language": "python"})
                ok = ref or rng.random() < skill
                for tid in test_ids:
                    status = "pass" if ok or rng.random() < 0.7 else "fail"
                    execs.append({"program_id": pid, "test_id": tid, "limits_hash": "bench", "status": status,
                                  "cpu_ms": round(rng.uniform(5, 900), 1), "wall_ms": round(rng.uniform(5, 950), 1),
                                  "peak_memory_kb": rng.randrange(9000, 60000), "judged_in_process": False,
                                  "executed_at": now, "run_id": run.run_id})
            if len(execs) >= 400_000:
                flush()
        flush()
        run.summary = f"synthetic verdicts for {len(tests)} problems"


def scale(args) -> dict:
    work = Path(args.work)
    results = {"fractions": {}, "cpus": os.cpu_count(), "load_start": os.getloadavg()[0]}
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for frac_text in args.fractions.split(","):
        frac = Fraction(frac_text)
        n = max(8, int(FULL_PROBLEMS * frac))
        root = work / f"f{frac.numerator}_{frac.denominator}"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        data, lake, rel = root / "DeepCoder-Preview-Dataset", root / "lake", root / "releases"
        t0 = time.perf_counter()
        cached = work / f"data{frac.numerator}_{frac.denominator}"
        if (cached / "info.json").is_file():   # generated before: reuse (generation is not what is measured)
            info = json.loads((cached / "info.json").read_text())
        else:
            info = make_deepcoder(cached, n, seed=frac.denominator, workers=args.gen_workers)
            (cached / "info.json").write_text(json.dumps(info))
        info["generate_s"] = round(time.perf_counter() - t0, 1)
        data = cached
        fx = [sys.executable, "-m", "factory.cli"]
        lk = ["--lake", str(lake)]
        stages = {}
        steps = [
            ("init", fx + ["init"] + lk),
            ("ingest humaneval (the decontamination benchmark)", fx + ["ingest", "humaneval"] + lk),
            ("ingest", fx + ["ingest", "hf-deepcoder", "--path", str(data / "taco")] + lk),
            ("verdicts (synthetic write)", [sys.executable, __file__, "child-verdicts", str(lake)]),
            ("dedup", fx + ["dedup"] + lk),
            ("decontam", fx + ["decontam"] + lk),
            ("curate", fx + ["curate", "--allow-unhealthy"] + lk),
            ("release", fx + ["release", "create", "bench", "--view", "gold.rl_problems", "--lake", str(lake), "--releases-dir", str(rel)]),
            ("export", fx + ["export", "bench", "--format", "verl", "--out", str(root / "verl"), "--lake", str(lake),
                             "--releases-dir", str(rel)]),
        ]
        for name, cmd in steps:
            if name in args.skip:
                stages[name] = {"skipped": True}
                continue
            try:
                m = run_measured(cmd, env)
            except RuntimeError as exc:
                m = {"error": str(exc)[-600:]}
                print(f"  {name}: FAILED {m['error'][-300:]}", flush=True)
                stages[name] = m
                break
            m.pop("stdout", None)
            m["lake_bytes"] = _du(lake)
            if name == "ingest" and args.drop_source:   # disk for the full size: the source is regenerable
                m["source_dropped"] = True
                shutil.rmtree(cached, ignore_errors=True)
            stages[name] = m
            if args.out:   # after every stage: an interrupted run keeps what it measured
                results["fractions"][frac_text] = {"source": info, "stages": stages, "load": os.getloadavg()[0]}
                _save(args.out, {"scale": results})
            print(f"1/{frac.denominator if frac.numerator == 1 else frac} {name:<28} wall {m['wall_s']:>7.1f} s  "
                  f"cpu {m['cpu_s']:>7.1f} s  peak {m['peak_rss_mb']:>7.0f} MB  lake {m['lake_bytes'] / 2**20:>8.1f} MB",
                  flush=True)
        ing = stages.get("ingest", {})
        if "wall_s" in ing:
            info["ingest_mb_per_s"] = round(info["parquet_bytes"] / 2 ** 20 / ing["wall_s"], 2)
            info["ingest_mb_per_cpu_s"] = round(info["parquet_bytes"] / 2 ** 20 / max(ing["cpu_s"], 0.01), 2)
            info["lake_over_source"] = round(ing["lake_bytes"] / info["parquet_bytes"], 3)
        results["fractions"][frac_text] = {"source": info, "stages": stages, "load": os.getloadavg()[0]}
        if not args.keep:
            shutil.rmtree(root / "verl", ignore_errors=True)
    return results


def plot(path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = json.loads(Path(path).read_text())
    fr = res["scale"]["fractions"]
    xs = sorted(fr, key=lambda f: float(Fraction(f)))
    at = [float(Fraction(x)) for x in xs]
    fig, axes = plt.subplots(1, 4, figsize=(20, 5.2))
    stages = [s for s in fr[xs[-1]]["stages"] if s not in ("init", "ingest humaneval (the decontamination benchmark)")]
    for s in stages:
        pts = [(float(Fraction(x)), fr[x]["stages"].get(s)) for x in xs]
        pts = [(x, m) for x, m in pts if m and "cpu_s" in m]
        if not pts:
            continue
        # CPU seconds, not wall: the wall time of a shared machine is its load's, the CPU the stage's own
        axes[0].plot([x for x, _ in pts], [m["cpu_s"] for _, m in pts], marker="o", label=s)
        axes[1].plot([x for x, _ in pts], [m["peak_rss_mb"] for _, m in pts], marker="o", label=s)
    axes[2].plot(at, [fr[x]["source"]["parquet_bytes"] / 2 ** 20 for x in xs], marker="o", label="source parquet")
    axes[2].plot(at, [fr[x]["stages"]["ingest"]["lake_bytes"] / 2 ** 20 for x in xs], marker="o",
                 label="lake after ingest")
    axes[2].plot(at, [max(m.get("lake_bytes", 0) for m in fr[x]["stages"].values()) / 2 ** 20 for x in xs],
                 marker="o", label="lake after curate/export")
    axes[1].axhline(4096, ls="--", color="red", label="4 GB target")
    post = ("curate", "release", "export")   # the target: these three of the full size within 5 min of wall
    done = [x for x in xs if all("wall_s" in fr[x]["stages"].get(st, {}) for st in post)]
    bottom = [0.0] * len(done)
    for st in post:
        walls = [fr[x]["stages"][st]["wall_s"] for x in done]
        axes[3].bar(range(len(done)), walls, bottom=bottom, label=st)
        bottom = [b + w for b, w in zip(bottom, walls)]
    for i, total in enumerate(bottom):
        axes[3].text(i, total, f"{total:.0f} s", ha="center", va="bottom", fontsize=8)
    axes[3].axhline(300, ls="--", color="red", label="5 min target (full size)")
    axes[3].set_xticks(range(len(done)), done)
    axes[3].set_xlabel("fraction of DeepCoder-Preview train (24k problems)")
    axes[3].set_title("wall s: curate + release + export (2 cores)")
    axes[3].grid(True, axis="y", alpha=0.3)
    from matplotlib.ticker import NullFormatter, NullLocator
    for ax, title in zip(axes[:3], ("CPU time per stage (s)", "peak RSS per stage (MB)", "bytes (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(at, xs)
        ax.set_xlabel("fraction of DeepCoder-Preview train (24k problems)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes:   # under the axes: a legend never hides a line
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    fig.tight_layout()
    out = str(Path(path).with_suffix(".png"))
    fig.savefig(out, dpi=110)
    return out


def table(path: str) -> str:
    """The scale results as a markdown table, with each stage's growth exponent between the two largest fractions
    (1.0 = linear) and the full-size projection along it."""
    import math

    fr = json.loads(Path(path).read_text())["scale"]["fractions"]
    xs = sorted(fr, key=lambda f: float(Fraction(f)))
    lines = ["| stage | " + " | ".join(f"{x}: wall s / CPU s / peak MB / lake MB" for x in xs)
             + " | CPU growth exp. | peak growth exp. | full size: CPU s (linear fit) / peak MB (power law) |",
             "|---|" + "---|" * (len(xs) + 3)]
    for stage in fr[xs[-1]]["stages"]:
        ms = [fr[x]["stages"].get(stage, {}) for x in xs]
        cells = [f"{m['wall_s']} / {m['cpu_s']} / {m['peak_rss_mb']:.0f} / {m['lake_bytes'] / 2**20:.0f}"
                 if "wall_s" in m else ("skipped" if m.get("skipped") else "failed") for m in ms]
        grow = peak = proj = ""
        done = [(x, m) for x, m in zip(xs, ms) if "wall_s" in m]
        if len(done) >= 2:   # the two largest fractions this stage was measured at
            (xa_, a), (xb_, b) = done[-2], done[-1]
            xa, xb = float(Fraction(xa_)), float(Fraction(xb_))
            ec = math.log(max(b["cpu_s"], 0.01) / max(a["cpu_s"], 0.01)) / math.log(xb / xa)
            ep = math.log(b["peak_rss_mb"] / a["peak_rss_mb"]) / math.log(xb / xa)
            slope = max(0.0, (b["cpu_s"] - a["cpu_s"]) / (xb - xa))   # fixed cost + cost per unit of data
            cpu_full = b["cpu_s"] + slope * (1 - xb)
            # a peak that grows (exponent >= 0.5, with work that grows: CPU exponent >= 0.3) follows its power law;
            # otherwise (fixed work, flat memory) it is the largest measured value
            peak_full = (f"{b['peak_rss_mb'] * (1 / xb) ** ep:.0f}" if ep >= 0.5 and ec >= 0.3 else
                         f"flat, <= {max(m['peak_rss_mb'] for _, m in done):.0f}")
            grow, peak, proj = f"{ec:.2f}", f"{ep:.2f}", f"{cpu_full:.0f} / {peak_full}"
        lines.append(f"| {stage} | " + " | ".join(cells) + f" | {grow} | {peak} | {proj} |")
    for x in xs:
        src = fr[x]["source"]
        lines.append(f"\n{x}: {src['problems']} problems, {src['tests']} tests, {src['parquet_bytes'] / 2**20:.0f} MB "
                     f"source parquet; ingest {src.get('ingest_mb_per_s')} MB/s wall, "
                     f"{src.get('ingest_mb_per_cpu_s')} MB per CPU-second; lake/source after ingest "
                     f"{src.get('lake_over_source')}; load {fr[x].get('load', 0):.1f}")
    return "\n".join(lines)


def _save(out: str, res: dict) -> None:
    old = json.loads(Path(out).read_text()) if Path(out).exists() else {}
    if "scale" in res and "scale" in old:   # a rerun of some fractions keeps the others
        res = {**res, "scale": {**res["scale"], "fractions": {**old["scale"]["fractions"],
                                                              **res["scale"]["fractions"]}}}
    Path(out).write_text(json.dumps({**old, **res}, indent=2, default=str))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--work", default="/tmp/hub_scale")
    common.add_argument("--out")
    m = sub.add_parser("memory", parents=[common])
    m.add_argument("--big-mb", type=float, default=20.0)
    m.add_argument("--counts", type=lambda t: [int(x) for x in t.split(",")], default=[1, 5, 12],
                   help="problems per run, each with one --big-mb input (a flat peak = bounded memory)")
    s = sub.add_parser("scale", parents=[common])
    s.add_argument("--fractions", default="1/64,1/32")
    s.add_argument("--keep", action="store_true")
    s.add_argument("--skip", type=lambda t: t.split(","), default=[],
                   help="stages not to run (e.g. decontam: its memory grows with the test bytes, see docs/hub.md)")
    s.add_argument("--gen-workers", type=int, default=1,
                   help="processes generating the synthetic source (>1: each shard seeded on its own)")
    s.add_argument("--drop-source", action="store_true",
                   help="delete the generated source once ingested (the full size needs its disk for the spill)")
    p = sub.add_parser("plot")
    p.add_argument("results")
    t = sub.add_parser("table")
    t.add_argument("results")
    c = sub.add_parser("child-ingest")
    c.add_argument("folder")
    c.add_argument("lake")
    sh = sub.add_parser("shapes", parents=[common], help="ingest of CodeContests-layout parquet in three shapes (#50)")
    sh.add_argument("--shape", type=lambda t: t.split(","), default=["huge", "cc20k", "tiny"], help=",".join(SHAPES))
    sh.add_argument("--label", default="run", help="key of this run in --out (e.g. before / after)")
    sh.add_argument("--code", help="run factory from this source tree (e.g. `git archive COMMIT factory` unpacked)")
    fl = sub.add_parser("floor", parents=[common], help="the least an ingest of a shape can take here (#50)")
    fl.add_argument("--shape", default="tiny", choices=list(SHAPES))
    v = sub.add_parser("child-verdicts")
    v.add_argument("lake")
    args = ap.parse_args(argv)
    if args.cmd == "child-ingest":
        return child_ingest(args.folder, args.lake)
    if args.cmd == "child-verdicts":
        return write_verdicts(args.lake)
    if args.cmd == "plot":
        print(plot(args.results))
        return
    if args.cmd == "table":
        print(table(args.results))
        return
    Path(args.work).mkdir(parents=True, exist_ok=True)
    if args.cmd == "floor":
        res = {"floor": floor(args)}
    elif args.cmd == "shapes":
        res = {"shapes": {args.label: shapes(args)}}
        if args.out and Path(args.out).exists():
            res["shapes"] = {**json.loads(Path(args.out).read_text()).get("shapes", {}), **res["shapes"]}
    else:
        res = {"memory": memory(args)} if args.cmd == "memory" else {"scale": scale(args)}
    if args.out:
        _save(args.out, res)
    print(json.dumps(res, indent=2, default=str)[:4000])


if __name__ == "__main__":
    main()
