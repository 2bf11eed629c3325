"""Streaming: a Hub ingest's memory does not grow with the dataset (row groups in, Parquet files out, one
transaction), and MB-sized test inputs arrive intact."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.ingest_hub import hubfixtures as fx
from tests.lakeutil import init_lake, query

CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from factory.ingest.hub.ingest import ingest_hub
    import pyarrow  # loaded before the baseline
    from factory.lake import connect

    def vm(field):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    folder, lake = sys.argv[1], sys.argv[2]
    connect(lake, read_only=True).close()   # DuckDB and the lake's extensions loaded before the baseline too
    Path("/proc/self/clear_refs").write_text("5")   # reset the high-water mark: measure the ingest alone
    base = vm("VmRSS")
    r = ingest_hub("hf-deepcoder", [folder], lake=lake, flush_bytes=8 << 20)
    print(json.dumps({"delta": vm("VmHWM") - base, "problems": r.problems, "tests": r.tests}))
""")


def _big_rows(n: int, chars: int) -> list[dict]:
    rows = []
    for k in range(n):
        big = " ".join(str(10 ** 8 + k * 7 + i) for i in range(chars // 10))
        tests = {"inputs": ["1 2\n", big + "\n"], "outputs": ["3\n", f"{k}\n"]}
        rows.append({"problem": f"Problem {k}: sum the numbers.", "tests": json.dumps(tests), "starter_code": "",
                     "metadata": json.dumps({})})
    return rows


def _measure(tmp_path, n: int, chars: int) -> dict:
    folder = tmp_path / f"ds{n}"
    fx.write_parquet(folder / "taco" / "train-00000-of-00001.parquet", _big_rows(n, chars), fx.DEEPCODER_SCHEMA,
                     row_group_size=1)
    lake = init_lake(tmp_path / f"lake{n}")
    r = subprocess.run([sys.executable, "-c", CHILD, str(folder / "taco"), str(lake)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return {**json.loads(r.stdout.strip().splitlines()[-1]), "lake": lake}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_memory_does_not_grow_with_the_dataset(tmp_path):
    mb8 = 8 << 20
    small, large = _measure(tmp_path, 2, mb8), _measure(tmp_path, 10, mb8)
    assert (small["problems"], large["problems"]) == (2, 10)
    # 10 problems carry 5x the bytes of 2 (80 MB of inputs); a run that kept rows until COMMIT (DuckLake's own
    # INSERT in one transaction: ~3 bytes of RSS per byte written) would peak far above 1.5x the small run
    assert large["delta"] < 1.5 * small["delta"] + (16 << 20), (small["delta"], large["delta"])
    assert large["delta"] < 400 << 20, (small["delta"], large["delta"])   # measured ~190 MB (far under 4 GB)
    lengths = query(large["lake"], "SELECT max(length(input)), count(*) FROM silver.tests")
    assert lengths[0][1] == 20 and lengths[0][0] > mb8 - 64
    big = query(large["lake"], "SELECT input FROM silver.tests t JOIN silver.problems p USING (problem_id) WHERE "
                               "p.source_id LIKE '%:4' AND length(input) > 1000")[0][0]
    assert big == json.loads(_big_rows(4, mb8)[3]["tests"])["inputs"][1]
    payload = json.loads(query(large["lake"], "SELECT payload FROM bronze.raw_records WHERE line = 4")[0][0])
    assert payload["tests"]["$elided"].startswith("sha256:") and payload["problem"].startswith("Problem 3")
