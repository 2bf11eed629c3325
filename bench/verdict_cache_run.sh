#!/bin/bash
# Verdict cache on a real sampled run (docs/performance.md). Sample first, e.g. (OMP_NUM_THREADS=1: torch threads stall on a busy machine):
#   factory init --lake L && factory ingest humaneval --lake L
#   OMP_NUM_THREADS=1 factory sample --lake L --source humaneval --n 16 --temperature 0.6 --limit 2 --max-tokens 128
#   bash bench/verdict_cache_run.sh L | tee bench/results/verdict_cache_run.txt
L=$1; F=${FACTORY:-factory}; W=$(dirname $L)
MODEL=$(${PYTHON:-python} - $L $W <<'PY'
import sys, json

from factory.lake import connect
con = connect(sys.argv[1], read_only=True)
rows = con.execute("""SELECT pb.source_id, p.code, p.model FROM silver.programs p JOIN silver.problems pb USING (problem_id)
                      WHERE p.origin = 'sample' ORDER BY p.problem_id, p.sample_index""").fetchall()
with open(f"{sys.argv[2]}/resample.jsonl", "w") as f:
    for sid, code, _ in rows:
        f.write(json.dumps({"task_id": sid, "solution": code}) + "\n")
print(rows[0][2])
PY
)
echo "samples of $MODEL: $(wc -l < $W/resample.jsonl), distinct programs: $(sort -u $W/resample.jsonl | wc -l); load $(cut -d' ' -f1 /proc/loadavg)"
run() { /usr/bin/time -f "$1: wall %e s, CPU %U+%S s" $F execute --lake $L "${@:2}" --cpu-s 3 2>&1 | grep -v "execute:\|^samples:"; }
run "1 sampled run, --no-cache" --select samples --model "$MODEL" --no-cache
run "2 same samples (epoch1), cache empty" --samples $W/resample.jsonl --model epoch1 --source humaneval
run "3 resampled (epoch2), cache warm" --samples $W/resample.jsonl --model epoch2 --source humaneval
run "4 resampled (epoch3), --no-cache" --samples $W/resample.jsonl --model epoch3 --source humaneval --no-cache
echo "load $(cut -d' ' -f1 /proc/loadavg)"
