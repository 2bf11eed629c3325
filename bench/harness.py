"""What the bench scripts share: the repository on sys.path, the data folder, the common flags, a call timed, a
median of repeats, a command run and timed (``factory``: this checkout's CLI), a JSONL reader, CPU
oversubscription, the machine line, a Markdown table and the JSON under bench/results/. Import it first:
``from harness import DATA, ROOT, parser, table, write``."""
from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("FACTORY_SHARED_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "bench" / "results"


def parser(doc: str, out: str, options: dict | None = None) -> argparse.ArgumentParser:
    """The script's parser, its docstring as help, ``--out`` defaulting to bench/results/OUT, and per
    ``options`` item (flag: default) an option taking one value of its default's type."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(RESULTS / out), help="result JSON (default: bench/results/%(default)s)")
    for flag, default in (options or {}).items():
        ap.add_argument(flag, type=type(default), default=default)
    return ap


def run(cmd: list, **kw) -> tuple[float, str]:
    """(wall s, stdout) of ``cmd`` run to its end; a failure stops the bench with the tail of its stderr."""
    t, done = timed(subprocess.run, [str(c) for c in cmd], capture_output=True, text=True, **kw)
    if done.returncode:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return t, done.stdout


def factory(*args, lake=None, **kw) -> str:
    """The stdout of ``python -m factory.cli ARGS [--lake LAKE]`` (this checkout's factory)."""
    return run([sys.executable, "-m", "factory.cli", *args, *(["--lake", lake] if lake else [])], cwd=ROOT, **kw)[1]


def jsonl(path: Path) -> list[dict]:
    """The records of a JSONL file (``.gz`` too), read by the factory's own reader."""
    from factory.ingest.readers import read_jsonl

    return [r for _, r in read_jsonl(path)]


def _burn() -> None:
    while True:
        pass


@contextlib.contextmanager
def oversubscribed(factor: int):
    """``factor`` x CPU oversubscription while the block runs: ``factor - 1`` busy-loop processes per core."""
    burners = [multiprocessing.Process(target=_burn, daemon=True) for _ in range((factor - 1) * (os.cpu_count() or 1))]
    for b in burners:
        b.start()
    try:
        yield
    finally:
        for b in burners:
            b.kill()
            b.join()


def machine() -> dict:
    """Cores, load average, Python and CPU: the line every result carries (the machine is shared)."""
    return {"cpus": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(), "machine": platform.processor() or platform.machine()}


def timed(fn, *args, **kw) -> tuple[float, object]:
    """(wall s, result) of ``fn(*args, **kw)``."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return time.perf_counter() - t0, out


def median_time(fn, repeat: int = 1) -> tuple[float, list[float], object]:
    """(median wall s, every round's s, the last round's result) of ``fn()`` run ``repeat`` times."""
    times, outs = zip(*(timed(fn) for _ in range(max(1, repeat))))
    return statistics.median(times), list(times), outs[-1]


def table(rows: list[dict], cols: list[str] | None = None) -> str:
    """A Markdown table of ``rows`` (dicts), the columns ``cols`` or the first row's keys; None prints '-'."""
    cols = cols or list(rows[0]) if rows else cols or []

    def fmt(v):   # floats to 3 significant digits, but 1000 and up in full (no 1.23e+03)
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return "-" if v is None else str(v)
    return "\n".join(["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
                     + ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows])


def write(out: str | Path, result: dict) -> Path:
    """``result`` as indented JSON at ``out`` (folders made), and a line saying so."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    return path
