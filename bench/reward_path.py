"""The trainer's reward path (#49): how often it parses each item's ground truth, and its time on the same items.

    python bench/reward_path.py                 # 20 problems each of HumanEval, MBPP, LeetCode, CodeContests, APPS
    python bench/reward_path.py --n 40 --repeat 7

Ground truths are the ones `factory export` writes: each record goes through the factory's own ingest adapter and
export builder (``factory.release.prompts.ground_truth`` + ``truth_json``, half with the binary reward spec and a
calibrated ``cpu_s``), and the completion is the source's reference program in a fenced block (APPS, which has none: a program of the
right shape with a wrong answer). Measured:

* **parses per item**: ``json.loads`` calls on an item's ground-truth string, and calls of factory functions that
  receive the item's ground truth (the string, or the dict decoded from it) as their first argument - every
  helper that reads it again - in one ``compute_score`` per item (verl's per-item reward manager);
* **pre-sandbox time**: the reward path up to the sandbox (ground truth read, code extracted, jobs built), with the
  sandbox stubbed out: ``compute_score`` per item, ``compute_score_batch`` over all items, and over GRPO groups
  (``--group`` completions per prompt, its ground-truth string repeated);
* **whole path**: ``compute_score_batch`` with the real sandbox (verdict cache off, so every job runs); its
  rewards are kept so a later run can be checked for the same results.

Writes ``bench/results/reward_path.json`` (``--label`` names the run, e.g. before / after; runs of other labels
already in the file are kept).
"""
from __future__ import annotations

import json
import os
import sys
import time
from itertools import islice
from pathlib import Path

from harness import DATA, ROOT, machine, median_time, parser, table, write  # noqa: I001  (first: sys.path)

os.environ["FACTORY_VERDICT_CACHE"] = "0"   # every job runs: the path, not the cache, is measured

import factory.reward as reward  # noqa: E402
from factory.ingest.readers import read_jsonl  # noqa: E402
from factory.ingest.sources import ADAPTERS  # noqa: E402
from factory.release.prompts import ground_truth, truth_json  # noqa: E402

SOURCES = {"humaneval": ("humaneval", "humaneval/HumanEval.jsonl.gz"), "mbpp": ("mbpp", "mbpp/mbpp.jsonl"),
           "leetcode": ("leetcode", "leetcodedataset/LeetCodeDataset-v0.3.1-test.jsonl.gz"),
           "codecontests": ("codecontests", "codecontests_subset300/codecontests_subset300.jsonl"),
           "apps": ("apps", "apps_mapcoder150/selected150.jsonl")}


def items(n: int) -> list[dict]:
    """[{source, ground_truth (export JSON), completion}] for the first ``n`` records of each source."""
    out = []
    for source, (name, rel) in SOURCES.items():
        for k, (_, rec) in enumerate(islice(read_jsonl(DATA / rel), n)):
            norm = ADAPTERS[name].convert(rec, (rel, k + 1), {})
            # APPS ships no solutions: a program of the right shape with a wrong answer (stdio or call)
            code = norm.programs[0].code if norm.programs else \
                f"def {norm.entry_point}(*args):\n    return None\n" if norm.entry_point else "print(0)\n"
            tests = [{"test_id": str(i), "kind": t.kind, "code": t.code, "input": t.input, "expected": t.expected,
                      "comparison": t.comparison, "atol": t.atol} for i, t in enumerate(norm.tests)]
            row = {"tests": json.dumps(tests), "entry_point": norm.entry_point, "test_preamble": norm.test_preamble,
                   "test_format": norm.test_format, "language": norm.language, "starter_code": norm.starter_code,
                   "cpu_s": 4.0 if k % 2 else None}
            spec = {"kind": "binary" if k % 2 else "soft", "tests": "hidden"}
            out.append({"source": source, "ground_truth": truth_json(ground_truth(row, spec)),
                        "completion": f"```python\n{code}\n```"})
    return out


def count_parses(batch: list[dict]) -> dict:
    """Per item: json.loads of its ground-truth string, and factory calls handed its ground truth (string or
    decoded dict) as first argument, in one compute_score."""
    loads, readers, names = [], [], {}
    real_loads = json.loads
    for it in batch:
        raw, decoded, n = it["ground_truth"], [], {"loads": 0, "readers": 0}

        def counting_loads(s, *a, **kw):
            out = real_loads(s, *a, **kw)
            if s is raw:
                n["loads"] += 1
                decoded.append(out)
            return out

        def profile(frame, event, arg):
            code = frame.f_code
            if event != "call" or not code.co_argcount or "/factory/" not in code.co_filename:
                return
            first = frame.f_locals.get(code.co_varnames[0])
            if first is raw or any(first is d for d in decoded):
                n["readers"] += 1
                names[code.co_name] = names.get(code.co_name, 0) + 1

        json.loads = counting_loads
        sys.setprofile(profile)
        try:
            reward.compute_score(it["source"], it["completion"], raw)
        finally:
            sys.setprofile(None)
            json.loads = real_loads
        loads.append(n["loads"])
        readers.append(n["readers"])
    return {"json_loads_per_item": sum(loads) / len(loads), "readers_per_item": sum(readers) / len(readers),
            "json_loads_max": max(loads), "reader_calls": dict(sorted(names.items(), key=lambda kv: -kv[1]))}


def main() -> None:
    ap = parser(__doc__, "reward_path.json")
    ap.add_argument("--n", type=int, default=20, help="records per source (default 20)")
    ap.add_argument("--repeat", type=int, default=5, help="rounds per timing, median kept (default 5)")
    ap.add_argument("--group", type=int, default=8, help="completions per prompt in the grouped timing (default 8)")
    ap.add_argument("--label", default="run", help="name of this run in the JSON (e.g. before, after)")
    args = ap.parse_args()
    batch = items(args.n)
    truths = [it["ground_truth"] for it in batch]
    comps = [it["completion"] for it in batch]
    sources = [it["source"] for it in batch]
    mb = sum(len(t) for t in truths) / 1e6
    print(f"{len(batch)} items, ground truths {mb:.1f} MB of JSON")

    counts = count_parses(batch)
    real_run = reward._run_with_retry
    reward._run_with_retry = lambda jobs, limits: []   # the sandbox stubbed out: the pre-sandbox part alone
    try:
        per_item, per_item_all, _ = median_time(
            lambda: [reward.compute_score(s, c, g) for s, c, g in zip(sources, comps, truths)], args.repeat)
        batched, batched_all, _ = median_time(lambda: reward.compute_score_batch(sources, comps, truths), args.repeat)
        g = args.group   # GRPO: a group of completions of one prompt, the same ground-truth string each
        grouped, grouped_all, _ = median_time(lambda: reward.compute_score_batch(
            [s for s in sources for _ in range(g)], [c for c in comps for _ in range(g)],
            [t for t in truths for _ in range(g)]), args.repeat)
    finally:
        reward._run_with_retry = real_run
    reward.compute_score_batch(sources[:2], comps[:2], truths[:2])   # the pool warm before timing
    whole, whole_all, rewards = median_time(lambda: reward.compute_score_batch(sources, comps, truths),
                                            max(1, args.repeat // 2))
    by_source = {s: [r for r, t in zip(rewards, sources) if t == s] for s in SOURCES}
    rows = [{"measure": "json.loads of the ground truth / item", "value": counts["json_loads_per_item"]},
            {"measure": "factory calls reading the ground truth / item", "value": counts["readers_per_item"]},
            {"measure": "pre-sandbox, compute_score per item (ms / item)", "value": 1000 * per_item / len(batch)},
            {"measure": "pre-sandbox, compute_score_batch (ms / item)", "value": 1000 * batched / len(batch)},
            {"measure": f"pre-sandbox, compute_score_batch, groups of {args.group} (ms / completion)",
             "value": 1000 * grouped / (len(batch) * args.group)},
            {"measure": "whole path, compute_score_batch (s)", "value": whole}]
    print(table(rows))
    print("readers:", counts["reader_calls"])
    print("reference reward mean by source:", {s: round(sum(v) / len(v), 3) for s, v in by_source.items() if v})
    out = Path(args.out)
    runs = json.loads(out.read_text()).get("runs", {}) if out.exists() else {}
    runs[args.label] = {
        "machine": machine(), "time": time.strftime("%Y-%m-%d %H:%M:%S"), "items": len(batch),
        "items_by_source": {s: len(v) for s, v in by_source.items()}, "ground_truth_mb": round(mb, 2),
        "parses": counts, "pre_sandbox_per_item_s": {"median": per_item, "rounds": per_item_all},
        "pre_sandbox_batch_s": {"median": batched, "rounds": batched_all},
        "pre_sandbox_groups_s": {"group": args.group, "median": grouped, "rounds": grouped_all},
        "whole_batch_s": {"median": whole, "rounds": whole_all}, "rewards": rewards,
        "commit": os.popen(f"git -C {ROOT} rev-parse --short HEAD").read().strip()}
    write(out, {"bench": "reward_path", "runs": runs})


if __name__ == "__main__":
    main()
