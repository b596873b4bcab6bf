"""A small shared thread pool for the accountant's block loops (issue 9).

numpy releases the GIL in its array loops, so independent blocks of a table or of a stream of atoms can
be computed on several cores by threads.  Callers keep results bit-identical to a serial run: blocks
write disjoint outputs, and anything order-dependent (accumulations) is done by the caller in block
order.  ``SHUFFLESIM_THREADS`` caps the number of threads (default: the CPUs available, at most 4;
1 = serial).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_POOL: ThreadPoolExecutor | None = None


def n_threads() -> int:
    """Threads the accountant may use."""
    env = os.environ.get("SHUFFLESIM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=n_threads(), thread_name_prefix="shufflesim-acct")
    return _POOL


def run_blocks(fn: Callable[[T], R], blocks: Sequence[T]) -> list[R]:
    """``[fn(b) for b in blocks]``, computed on the pool when there is more than one block and thread."""
    if len(blocks) <= 1 or n_threads() == 1:
        return [fn(b) for b in blocks]
    return list(_pool().map(fn, blocks))


def map_ordered(fn: Callable[[T], R], blocks: Iterable[T], ahead: int | None = None) -> Iterator[R]:
    """``fn`` over ``blocks`` on the pool, yielded in block order, at most ``ahead`` blocks in flight (so the
    caller can accumulate results in the serial order while the next blocks are being computed)."""
    if n_threads() == 1:
        for b in blocks:
            yield fn(b)
        return
    ahead = ahead or n_threads() + 1
    pending = []
    pool = _pool()
    for b in blocks:
        pending.append(pool.submit(fn, b))
        if len(pending) >= ahead:
            yield pending.pop(0).result()
    for f in pending:
        yield f.result()
