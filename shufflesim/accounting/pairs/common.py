"""Helpers shared by the pair constructors: truncation knobs and ragged-row index arithmetic.

The truncation argument is in :mod:`shufflesim.accounting.pairs` (package docstring); the binomial
numerics it relies on are in :mod:`shufflesim.accounting.numerics.binomial`.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.core.checks import check_real
from shufflesim.accounting.numerics.binomial import chernoff_window, log_binom_pmf

#: Default bound on the dropped mass for pairs over a 1-D support (rr2, krr strong-1d, biswas count).
#: A 1-D support costs O(width) with width ~ sqrt(2 log(1/tail)) standard deviations, so keeping every
#: outcome down to 1e-300 costs at most ~37 sd each side (~4e4 atoms at n = 1e6): truncation then never
#: limits a delta that a double can represent.
DEFAULT_TAIL_BOUND_1D = 1e-300

#: Default bound on the dropped mass for pairs over 2-D/3-D supports (krr strong, krr weak, clones).
#: Their size grows like log(1/tail)^(d/2); 1e-15 is below the FFT accountant's round-off floor
#: (~1e-16 of the total mass per composition) yet keeps n = 1e6 tractable.  Pass a smaller
#: ``tail_bound`` to certify single-use delta below ~1e-15.
DEFAULT_TAIL_BOUND_MD = 1e-15


def ragged(lo: np.ndarray, hi: np.ndarray):
    """Flatten rows r with columns lo[r]..hi[r] (inclusive): returns (row index, column) arrays."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    counts = np.maximum(hi - lo + 1, 0)
    rows = np.repeat(np.arange(lo.size), counts)
    starts = np.cumsum(counts) - counts
    cols = np.arange(rows.size, dtype=np.int64) - np.repeat(starts, counts) + np.repeat(lo, counts)
    return rows, cols


#: rows per call of the binomial numerics in :func:`by_row_chunks`: 128 kB per float64 temporary.  Issue 28: over
#: the 259k latent rows of the weak pair at n = 1e4, one call made ~2 MB temporaries, which the allocator maps
#: and unmaps afresh (a page fault per 4 kB: about half of the pair's CPU time was the kernel's) and which fall
#: out of cache between the ~100 passes of a Chernoff window; much smaller slices pay numpy's per-call overhead
ROW_CHUNK = 16384


def by_row_chunks(fn, *arrays, chunk: int | None = None):
    """``fn(*arrays)`` for an elementwise ``fn`` of 1-D arrays of one length (returning an array or a tuple of
    arrays), computed on consecutive slices of ``chunk`` rows (default :data:`ROW_CHUNK`) and concatenated.

    The values are those of one call: every element of the binomial numerics (:func:`chernoff_window`,
    :func:`~shufflesim.accounting.numerics.binomial.log_binom_pmf`) depends on that element's arguments only
    (tests/test_pair_speed.py compares the two bit for bit); only the size of the temporaries changes."""
    chunk = ROW_CHUNK if chunk is None else chunk
    arrays = np.broadcast_arrays(*(np.asarray(a) for a in arrays))
    size = arrays[0].size if arrays else 0
    if size <= chunk or arrays[0].ndim != 1:
        return fn(*arrays)
    parts = [fn(*(a[i:i + chunk] for a in arrays)) for i in range(0, size, chunk)]
    if isinstance(parts[0], tuple):
        return tuple(np.concatenate(col) for col in zip(*parts))
    return np.concatenate(parts)


def row_windows(n_rows, p: float, log_budget_rows, q: float | None = None):
    """Chernoff windows for rows with Bin(n_rows[r], p) and per-row log budgets; rows whose budget is
    >= 1 are dropped whole (returned empty: lo = 1 > hi = 0, log tail 0 = their whole mass).  Computed
    :data:`ROW_CHUNK` rows at a time (:func:`by_row_chunks`): the same windows."""
    lo, hi, lt = by_row_chunks(lambda n_, b_: chernoff_window(n_, p, b_, q), n_rows, log_budget_rows)
    drop = np.asarray(log_budget_rows) >= 0.0
    lo = np.where(drop, 1, lo)
    hi = np.where(drop, 0, hi)
    lt = np.where(drop, 0.0, lt)
    return lo, hi, lt


def log_binom_pmf_rows(k, n, p: float, q: float | None = None) -> np.ndarray:
    """log Bin(n[r], p)(k[r]) for many rows: :func:`~shufflesim.accounting.numerics.binomial.log_binom_pmf`,
    :data:`ROW_CHUNK` rows at a time (:func:`by_row_chunks`): the same values."""
    return by_row_chunks(lambda k_, n_: log_binom_pmf(k_, n_, p, q), k, n)


def hull_rows(lo, hi, group_sizes):
    """Outcome rows from latent rows whose outcome either stays in its row or moves to the next row
    with the column shifted by 0 or +1 (the target's contribution).

    Latent rows are given flattened, consecutive within each group (``group_sizes``); an empty latent
    row has lo > hi.  Outcome row t of a group (t = 0 .. size) covers the hull of latent row t's
    columns [lo_t, hi_t] and of latent row t-1's columns shifted to [lo_{t-1}, hi_{t-1} + 1].
    Returns (group of each outcome row, position t, out_lo, out_hi).
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    sizes = np.asarray(group_sizes, dtype=np.int64)
    og, ot = ragged(np.zeros_like(sizes), sizes)
    start = np.cumsum(sizes) - sizes
    big = np.iinfo(np.int64).max // 4
    same = ot < sizes[og]
    prev = ot >= 1
    i_same = np.where(same, start[og] + ot, 0)
    i_prev = np.where(prev, start[og] + ot - 1, 0)
    if lo.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return og, ot, empty, empty
    ls, hs = lo[i_same], hi[i_same]
    lp, hp = lo[i_prev], hi[i_prev] + 1
    ok_s = same & (ls <= hs)
    ok_p = prev & (lp <= hp - 1)
    out_lo = np.minimum(np.where(ok_s, ls, big), np.where(ok_p, lp, big))
    out_hi = np.maximum(np.where(ok_s, hs, -big), np.where(ok_p, hp, -big))
    return og, ot, out_lo, out_hi


def finish(log_p: np.ndarray, log_q: np.ndarray, *extra: np.ndarray):
    """Drop outcomes impossible under both P and Q (they carry no mass and an undefined loss)."""
    keep = (log_p > -np.inf) | (log_q > -np.inf)
    if keep.all():
        return (log_p, log_q, *extra)
    return (log_p[keep], log_q[keep], *(e[keep] for e in extra))


def check_tail_bound(tail_bound) -> float:
    """A truncation knob: the largest mass a constructor may drop, in [0, 0.1] (0 = no truncation)."""
    return check_real("tail_bound", tail_bound, low=0.0, high=0.1)


def log_budget(tail_bound: float) -> float:
    """log(tail_bound), -inf for 0."""
    return math.log(tail_bound) if tail_bound > 0 else -math.inf


def flip_probabilities(eps0: float) -> tuple[float, float]:
    """(1/(e^eps0 + 1), e^eps0/(e^eps0 + 1)) computed without overflow or cancellation."""
    t = math.exp(-eps0)
    return t / (1.0 + t), 1.0 / (1.0 + t)


#: truncations of the clone count C (:func:`hoeffding_window` is seed 001 §6.2's; Chernoff is the default)
TRUNCATIONS = ("chernoff", "hoeffding")


def hoeffding_window(N: int, p: float, tau: float) -> tuple[int, int, float]:
    """Seed 001 §6.2: S_c = [max(0, (p-c)N), min(N, (p+c)N)], c = sqrt(log(2/tau)/(2N)); mass outside <= tau."""
    if N == 0 or tau <= 0:
        return 0, N, -math.inf
    c = math.sqrt(math.log(2.0 / tau) / (2.0 * N))
    lo = max(0, math.ceil((p - c) * N))
    hi = min(N, math.floor((p + c) * N))
    # Hoeffding: P(C <= (p-c)N) <= exp(-2Nc^2) = tau/2 and the same above; a side inside the support
    # boundary drops nothing.
    sides = (lo > 0) + (hi < N)
    log_tail = math.log(sides * tau / 2.0) if sides else -math.inf
    return lo, hi, log_tail
