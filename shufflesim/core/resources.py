"""Resource estimates: refuse a request whose memory estimate exceeds what this machine has, or whose time
estimate exceeds the time limit, with the estimate.

A refusal is a :class:`~shufflesim.errors.ResourceError` (one line, exit code 2 from the CLI) raised
*before* anything is allocated, instead of an out-of-memory kill with no message or hours without asking.

The policy (issue 29, "work that will not fit is not started") is :func:`choose_path`: a command lists the
paths that answer its question (the engine asked for first, then the others: the fast engine, other chunks),
each with its estimate (:class:`RunPath`); the first that fits runs under ``auto``, the one asked for runs if
it fits, and otherwise the refusal names the estimate, the knob and the paths that fit.  Memory: at most
:data:`MEMORY_FRACTION` of :func:`available_memory` (SHUFFLESIM_MEMORY_LIMIT, ``ulimit -v``).  Time:
:func:`time_limit`, :data:`DEFAULT_TIME_LIMIT` (600 s, the threshold of ``run`` and ``sweep``) unless
SHUFFLESIM_TIME_LIMIT sets another; ``--yes`` lifts it.  Commands without ``--yes`` (``account``) call
:func:`check_time`, which keeps them unlimited unless the environment sets a limit.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Sequence

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


#: environment variable setting the time limit (seconds) of one request whose run time is estimated before it
#: starts; without it the limit is :data:`DEFAULT_TIME_LIMIT` where the command has ``--yes``
TIME_LIMIT_ENV = "SHUFFLESIM_TIME_LIMIT"

#: default time limit (seconds) of a simulation whose estimate is known before it starts: the threshold above
#: which ``run`` and ``sweep`` ask for ``--yes`` (10 minutes); ``--yes`` lifts it, SHUFFLESIM_TIME_LIMIT sets it
DEFAULT_TIME_LIMIT = 600.0


def time_limit(*, yes: bool = False, by_default: bool = True) -> float:
    """The time limit (seconds) of one request: unlimited with ``yes`` (the command's ``--yes``), else
    :data:`TIME_LIMIT_ENV` when set, else :data:`DEFAULT_TIME_LIMIT` (``by_default=False``: no limit unless the
    environment sets one, for commands without ``--yes``)."""
    if yes:
        return math.inf
    env = os.environ.get(TIME_LIMIT_ENV)
    if env:
        try:
            limit = float(env)
        except ValueError:
            raise ResourceError(f"{TIME_LIMIT_ENV}={env!r} is not a number of seconds") from None
        if not limit > 0:  # nan, 0 and negative limits would refuse everything (or nothing) silently
            raise ResourceError(f"{TIME_LIMIT_ENV}={env!r} must be a positive number of seconds")
        return limit
    return float(DEFAULT_TIME_LIMIT) if by_default else math.inf


def _limit_knob(limit: float) -> str:
    env = os.environ.get(TIME_LIMIT_ENV)
    return f"{TIME_LIMIT_ENV}={limit:g} s" if env else f"the time limit of {limit:g} s"


def check_time(seconds: float, what: str, advice: str = "", *, yes: bool = False, by_default: bool = False) -> None:
    """Raise :class:`ResourceError` when the estimate ``seconds`` exceeds :func:`time_limit` (``yes`` and
    ``by_default`` as there; ``by_default=False`` keeps commands without ``--yes`` (``account``) unlimited unless
    SHUFFLESIM_TIME_LIMIT is set -- long runs show progress instead)."""
    limit = time_limit(yes=yes, by_default=by_default)
    if seconds > limit:
        tail = f"; {advice}" if advice else ""
        raise ResourceError(f"{what} is estimated to take about {seconds:.3g} s, above {_limit_knob(limit)}{tail}")


@dataclass(frozen=True)
class RunPath:
    """One way to answer a request, with its estimate: ``label`` says what runs ("the faithful engine streamed
    in chunks of 2^20 users"), ``option`` the flag that selects it ("--engine fast"); ``seconds`` and ``bytes``
    are estimates (``None``: not estimated -- a cost that does not grow with n)."""

    label: str
    option: str
    seconds: float | None = None
    bytes: float | None = None

    def cost(self) -> str:
        parts = []
        if self.bytes is not None:
            parts.append(f"{human_bytes(self.bytes)} of memory")
        if self.seconds is not None:
            parts.append(f"{self.seconds:.3g} s")
        return "about " + " and ".join(parts) if parts else "a cost that does not grow with n"


def over_limit(path: RunPath, *, yes: bool = False, by_default: bool = True) -> str | None:
    """Why ``path`` does not fit (its memory above :data:`MEMORY_FRACTION` of :func:`available_memory`, or its
    time above :func:`time_limit`), or ``None`` when it fits.  Memory is never lifted by ``yes``."""
    if path.bytes is not None:
        avail = available_memory()
        if path.bytes > MEMORY_FRACTION * avail:
            return f"needs about {human_bytes(path.bytes)} of memory but {human_bytes(avail)} is available"
    if path.seconds is not None:
        limit = time_limit(yes=yes, by_default=by_default)
        if path.seconds > limit:
            return f"is estimated to take about {path.seconds:.3g} s, above {_limit_knob(limit)}"
    return None


def choose_path(what: str, paths: Sequence[RunPath], *, auto: bool = False, yes: bool = False,
                advice: str = "", by_default: bool = True) -> RunPath:
    """The policy of every command that can estimate its work before it starts (issue 29: work that will not
    fit is not started).  ``paths[0]`` is the path asked for, the others are the alternatives that answer the
    same question (another engine, other chunks).  With ``auto`` the first path that fits is chosen (no refusal
    where another path answers); otherwise ``paths[0]`` runs if it fits.  Else :class:`ResourceError` in one
    line: the estimate, the knob (``--yes`` for time, SHUFFLESIM_MEMORY_LIMIT / SHUFFLESIM_TIME_LIMIT) and the
    paths that fit, with their costs, or ``advice`` when none does."""
    if not paths:
        raise ValueError("choose_path needs at least one path")
    reasons = [over_limit(p, yes=yes, by_default=by_default) for p in paths]
    if reasons[0] is None:
        return paths[0]
    if auto:
        for p, r in zip(paths, reasons):
            if r is None:
                return p
    first = paths[0]
    others = [f"{p.option} answers ({p.cost()})" for p, r in zip(paths[1:], reasons[1:]) if r is None]
    timed = first.seconds is not None and "memory" not in reasons[0]
    knob = "; --yes runs it anyway" if timed and not yes else ""
    tail = "; ".join(others) if others else advice
    raise ResourceError(f"{what} on {first.label} {reasons[0]}{knob}" + (f"; {tail}" if tail else ""))
