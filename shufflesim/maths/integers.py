"""Exact integer arithmetic on numpy arrays."""

from __future__ import annotations

import numpy as np


def exact_integer_sum(a: np.ndarray) -> int:
    """Exact sum of an integer array as a Python int, without overflow and without Python objects.

    Values are split into 32-bit halves whose partial sums cannot overflow int64 for fewer than 2³¹
    elements.
    """
    a = np.asarray(a)
    if a.size == 0:
        return 0
    if a.dtype.kind == "b":
        return int(np.count_nonzero(a))
    if a.dtype.itemsize < 8:
        return int(a.sum(dtype=np.int64))
    neg = a.dtype.kind == "i" and bool((a < 0).any())
    u = a.view(np.uint64) if a.dtype.kind == "i" else a
    lo = (u & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64)
    hi = (u >> np.uint64(32)).sum(dtype=np.uint64)
    total = (int(hi) << 32) + int(lo)
    if neg:  # two's complement: each negative value was counted as value + 2**64
        total -= int(np.count_nonzero(a < 0)) << 64
    return total
