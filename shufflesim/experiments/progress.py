"""Progress bar with an ETA (tqdm), drawn on a terminal only."""

from __future__ import annotations

import sys
from typing import TextIO

_FORMAT = "{n_fmt}/{total_fmt} {unit} |{bar:30}| {rate_fmt}  elapsed {elapsed}  ETA {remaining}"


class Progress:
    """``Progress(total, label)``; call :meth:`update` with the number of newly finished items.

    Draws nothing unless ``enabled`` (default: the stream is a TTY), so ``--json`` runs and redirected
    output stay clean.  The drawing is tqdm's, without its monitor thread.
    """

    def __init__(self, total: int, label: str = "trials", *, stream: TextIO | None = None,
                 enabled: bool | None = None):
        self.total, self.label = total, label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.done = 0
        self._bar = None
        if enabled:
            from tqdm import tqdm

            tqdm.monitor_interval = 0  # no background thread (workers may be forked)
            self._bar = tqdm(total=total, unit=label, file=self.stream, bar_format=_FORMAT, mininterval=0.1,
                             dynamic_ncols=True, leave=True)

    def update(self, k: int = 1) -> None:
        self.done += k
        if self._bar is not None:
            self._bar.update(k)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
