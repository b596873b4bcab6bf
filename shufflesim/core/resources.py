"""Resource estimates: refuse a request whose memory estimate exceeds what this machine has, with the estimate.

A refusal is a :class:`~shufflesim.errors.ResourceError` (one line, exit code 2 from the CLI) raised
*before* anything is allocated, instead of an out-of-memory kill with no message.
"""

from __future__ import annotations

import os

from shufflesim.errors import ResourceError

#: fraction of the available memory one request may plan to use
MEMORY_FRACTION = 0.8


#: environment variable capping the memory one request may plan to use (bytes, or with a K/M/G suffix):
#: the knob for shared machines and for tests (issue 21); an address-space limit (``ulimit -v``,
#: ``resource.setrlimit(RLIMIT_AS)``) is honoured as well
MEMORY_LIMIT_ENV = "SHUFFLESIM_MEMORY_LIMIT"


def _parse_bytes(text: str) -> int:
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in "KMGT" else t
    try:
        val = float(num) * mult
    except ValueError:
        raise ResourceError(f"{MEMORY_LIMIT_ENV}={text!r} is not a size (e.g. 2G, 512M, 1000000)") from None
    if not val > 0:
        raise ResourceError(f"{MEMORY_LIMIT_ENV}={text!r} must be a positive size")
    return int(val)


def _address_space_room() -> int | None:
    """Room left under a soft RLIMIT_AS (None when unlimited or unknown)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft <= 0:
            return None
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        return max(int(soft) - used, 0)
    except (ImportError, OSError, ValueError, AttributeError):
        return None


def available_memory() -> int:
    """Bytes of memory available to this process: MemAvailable on Linux (else physical pages; else
    8 GiB), capped by :data:`MEMORY_LIMIT_ENV` and by the room left under an RLIMIT_AS."""
    avail = _system_available()
    env = os.environ.get(MEMORY_LIMIT_ENV)
    if env:
        avail = min(avail, _parse_bytes(env))
    room = _address_space_room()
    if room is not None:
        avail = min(avail, room)
    return avail


def _system_available() -> int:
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


def check_time(seconds: float, what: str, advice: str = "") -> None:
    """Raise :class:`ResourceError` when the estimate ``seconds`` exceeds the limit set by the environment
    variable ``SHUFFLESIM_TIME_LIMIT`` (seconds; unset: no limit -- long runs show progress instead)."""
    env = os.environ.get("SHUFFLESIM_TIME_LIMIT")
    if not env:
        return
    try:
        limit = float(env)
    except ValueError:
        raise ResourceError(f"SHUFFLESIM_TIME_LIMIT={env!r} is not a number of seconds") from None
    if seconds > limit:
        tail = f"; {advice}" if advice else ""
        raise ResourceError(f"{what} is estimated to take about {seconds:.3g} s, above SHUFFLESIM_TIME_LIMIT={limit:g}"
                            f" s{tail}")
