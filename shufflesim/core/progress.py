"""A progress hook for the lower layers (accounting, pipeline) that cannot import the experiments'
progress bar: :func:`stage` announces a long step with its estimated duration and, while it runs, prints
elapsed time and an ETA to stderr at intervals (issue 21: no path runs past a minute without a word).

Nothing is printed for steps that finish within :data:`QUIET_SECONDS`; by default it prints only when the
stream is a terminal (so ``--json`` output piped to a file or a test's captured stderr stays clean, as the
Monte-Carlo progress bar does); ``SHUFFLESIM_PROGRESS=0`` silences it, ``SHUFFLESIM_PROGRESS=1`` forces it on.  The ticker is a daemon thread that only reads
the clock; the computation is not touched.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

#: steps shorter than this print nothing
QUIET_SECONDS = 5.0
#: seconds between two progress lines
EVERY_SECONDS = 15.0


def _enabled(out) -> bool:
    flag = os.environ.get("SHUFFLESIM_PROGRESS", "")
    if flag in ("0", "1"):
        return flag == "1"
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


def _fmt(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


@contextmanager
def stage(label: str, estimate_s: float | None = None, *, stream=None, quiet_s: float = QUIET_SECONDS,
          every_s: float = EVERY_SECONDS):
    """Context manager around a possibly long step; ``estimate_s`` is its estimated duration."""
    out = stream if stream is not None else sys.stderr
    if not _enabled(out):
        yield
        return
    t0 = time.monotonic()
    done = threading.Event()
    if estimate_s is not None and estimate_s > quiet_s:
        print(f"progress: {label}: estimated {_fmt(estimate_s)}", file=out, flush=True)

    def tick() -> None:
        wait = quiet_s
        while not done.wait(wait):
            el = time.monotonic() - t0
            if estimate_s is not None and estimate_s > el:
                eta = f"ETA ~{_fmt(estimate_s - el)}"
            else:
                eta = "ETA unknown (past the estimate)" if estimate_s is not None else "ETA unknown"
            print(f"progress: {label}: elapsed {_fmt(el)}, {eta}", file=out, flush=True)
            wait = every_s

    th = threading.Thread(target=tick, daemon=True)
    th.start()
    try:
        yield
    finally:
        done.set()
