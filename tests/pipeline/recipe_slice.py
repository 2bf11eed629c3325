"""A small real slice of ../shared/data laid out as a data dir (`factory recipe run --data-dir`): the first rows of
MBPP+ (a benchmark), MBPP (the same tasks: contamination by lineage, plus train rows), LeetCode v0.2.0 train
(public-only: hidden tests) and KodCode (prefill)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path


def _jsonl(path: Path, n: int, keep=lambda r: True) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt") as fh:
        for line in fh:
            row = json.loads(line)
            if keep(row):
                out.append(row)
                if len(out) == n:
                    break
    return out


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)


def build_slice(dest: Path, shared: Path, n: int = 5) -> dict[str, int]:
    """Write the slice under dest; returns rows per dataset folder."""
    plus = _jsonl(shared / "mbppplus" / "MbppPlus.jsonl.gz", n)
    _write_jsonl(dest / "mbppplus" / "MbppPlus.jsonl.gz", plus)
    ids = {int(r["task_id"].split("/")[1]) for r in plus}
    mbpp = _jsonl(shared / "mbpp" / "mbpp.jsonl", 10 ** 6, lambda r: r["task_id"] in ids)
    mbpp += _jsonl(shared / "mbpp" / "mbpp.jsonl", n, lambda r: 601 <= r["task_id"])
    _write_jsonl(dest / "mbpp" / "mbpp.jsonl", mbpp)
    lc = _jsonl(shared / "leetcodedataset" / "LeetCodeDataset-v0.2.0-train.jsonl.gz", n)
    _write_jsonl(dest / "leetcodedataset" / "LeetCodeDataset-v0.2.0-train.jsonl.gz", lc)
    src = shared / "kodcode_demo" / "Verified_KodCode_prefill_200_1741214325_Complete.json"
    kod = json.loads(src.read_text())[:n]
    (dest / "kodcode_demo").mkdir(parents=True, exist_ok=True)
    (dest / "kodcode_demo" / src.name).write_text(json.dumps(kod))
    return {"mbppplus": len(plus), "mbpp": len(mbpp), "leetcodedataset": len(lc), "kodcode_demo": len(kod)}
