"""Resource estimates: refuse a request whose memory estimate exceeds what this machine has, with the estimate.

A refusal is a :class:`~shufflesim.errors.ResourceError` (one line, exit code 2 from the CLI) raised
*before* anything is allocated, instead of an out-of-memory kill with no message.
"""

from __future__ import annotations

import os

from shufflesim.errors import ResourceError

#: fraction of the available memory one request may plan to use
MEMORY_FRACTION = 0.8


def available_memory() -> int:
    """Bytes of memory available to this process (MemAvailable on Linux; else physical pages; else 8 GiB)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError


def check_memory(nbytes: float, what: str, advice: str = "") -> None:
    """Raise :class:`ResourceError` when ``nbytes`` exceeds :data:`MEMORY_FRACTION` of the available memory."""
    avail = available_memory()
    if nbytes > MEMORY_FRACTION * avail:
        tail = f"; {advice}" if advice else ""
        raise ResourceError(f"{what} needs about {human_bytes(nbytes)} of memory but {human_bytes(avail)} is "
                            f"available{tail}")
