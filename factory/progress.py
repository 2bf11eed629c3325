"""Whole-run progress for long stages: count, rate and ETA.

On a terminal: a tqdm bar on stderr. Piped or logged: a plain line every `every_s` seconds (and at the end),
e.g. ``execute: 1200/4752 tests (25%) 85.3/s ETA 0:00:41``, so CI logs and `| tee` show progress too.
"""
from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total: int | None, desc: str, unit: str = "item", *, every_s: float = 10.0,
                 file=None, enabled: bool = True):
        self.total, self.desc, self.unit, self.every_s = total, desc, unit, every_s
        self.file = file or sys.stderr
        self.done, self.start = 0, time.monotonic()
        self._last = self.start
        self._printed = -1   # `done` when the last plain line was printed
        self._bar = None
        self.enabled = enabled
        if enabled and getattr(self.file, "isatty", lambda: False)():
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.file, dynamic_ncols=True)

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last, self._printed = now, self.done
            print(self.line(), file=self.file, flush=True)

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / elapsed
        text = f"{self.desc}: {self.done}"
        if self.total:
            text += f"/{self.total} {self.unit}s ({self.done / self.total:.0%}) {rate:.1f}/s"
            if rate > 0 and self.done < self.total:
                text += f" ETA {_clock((self.total - self.done) / rate)}"
        else:
            text += f" {self.unit}s {rate:.1f}/s"
        return text + f" elapsed {_clock(elapsed)}"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.enabled and self.done and self.done != self._printed:
            print(self.line(), file=self.file, flush=True)
        self.enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
