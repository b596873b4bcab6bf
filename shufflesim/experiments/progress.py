"""A minimal progress bar with an ETA, drawn on a terminal only."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _fmt(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "--:--"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    """``Progress(total, label)``; call :meth:`update` with the number of newly finished items.

    Draws nothing unless ``enabled`` (default: the stream is a TTY).  Redraws at most 10 times a second.
    """

    def __init__(self, total: int, label: str = "trials", *, stream: TextIO | None = None,
                 enabled: bool | None = None, width: int = 30):
        self.total, self.label, self.width = total, label, width
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.done = 0
        self.start = time.perf_counter()
        self._last = 0.0

    def update(self, k: int = 1) -> None:
        self.done += k
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        self.stream.write("\r" + self.line(now))
        self.stream.flush()

    def line(self, now: float | None = None) -> str:
        now = time.perf_counter() if now is None else now
        elapsed = now - self.start
        frac = self.done / self.total if self.total else 1.0
        rate = self.done / elapsed if elapsed > 0 else float("nan")
        eta = (self.total - self.done) / rate if rate and rate == rate else float("nan")
        bar = "#" * int(frac * self.width)
        return (f"[{bar:<{self.width}}] {self.done}/{self.total} {self.label}  "
                f"{rate:,.1f}/s  elapsed {_fmt(elapsed)}  ETA {_fmt(eta)}")

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + self.line() + "\n")
            self.stream.flush()
