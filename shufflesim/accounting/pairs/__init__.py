"""Neighbouring pairs (P, Q) of shuffled mechanisms, as :class:`~shufflesim.accounting.pmf_pair.PMFPair`.

Each constructor returns the log-PMFs of a sufficient statistic of the adversary's view under the two
neighbouring data sets (FORMULAS.md §2):

==============================  =====================================================================
:func:`rr2_pair`                shuffled binary randomised response (Koskela et al., seed 001 §4, eq 4.1)
:func:`krr_pair`                shuffled k-RR: ``adversary="strong-1d"`` (seed 000 eq 3.1 / seed 001
                                eq 5.1), ``"strong"`` (full view, FORMULAS §2 item 3), ``"weak"``
                                (seed 001 Definition 9, Theorem 10, Appendix A)
:func:`clones_pair`             general eps0-LDP randomisers via Feldman et al.'s clones (seed 001 §6,
                                eqs 6.1-6.8, Lemmas B.1-B.3)
:func:`biswas_count_pair`       released count of x0 in Biswas et al.'s fixed-data set setting
                                (seed 003 Definition IV.2, Appendix A eqs 11-13)
==============================  =====================================================================

Truncation.  For large n only outcomes whose mass matters are kept.  Every pair is "others' latent
variables + the target's contribution": a window W of the latent variables of the other n-1 users is
chosen with a Chernoff (relative-entropy) tail bound, and the outcome set is every outcome that a latent
value in W can produce, whatever the target reports.  Hence the mass of outcomes dropped is at most
P(latent not in W) under *both* data sets; that certified bound is stored in ``tail_p``/``tail_q`` (an
accountant adds it to its upper bound on delta).  Kept outcomes carry their exact probabilities
(computed in closed form), so delta computed over the kept outcomes alone is a valid lower bound.
(Exception, documented there: :func:`biswas_count_pair`'s kept masses are exact up to 1e-20 of its
tail bound.)

Row form.  The krr strong/weak and clones pairs all have an ancillary "row" statistic (same law
under P and Q) and, within a row, a Bin(N, 1/2) column with a loss monotone in the column.
``as_rows=True`` returns them as :class:`BinomialRows`: ``log_delta(eps)`` is the exact single-use
delta in O(rows) with binomial tail functions (no atoms, no grid), and ``iter_atoms()`` yields the
atoms block by block so an accountant can place 1e7-1e8 atoms on its grid without holding them all.
Their PMFPair constructors expand the rows.

This module also holds the numerics shared by the constructors: an accurate log binomial PMF
(:func:`log_binom_pmf`), Chernoff windows (:func:`chernoff_window`) and ragged 2-D index helpers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping

import numpy as np
from scipy.special import gammaln, logsumexp
from scipy.stats import binom as _binom

from shufflesim.core.checks import check_real

__all__ = [
    "DEFAULT_TAIL_BOUND_1D",
    "DEFAULT_TAIL_BOUND_MD",
    "log_binom_pmf",
    "binom_log_kl",
    "chernoff_window",
    "BinomialRows",
    "rr2_pair",
    "krr_pair",
    "krr_strong_1d_pair",
    "krr_strong_pair",
    "krr_weak_pair",
    "krr_gamma_from_eps0",
    "krr_eps0_from_gamma",
    "clones_pair",
    "biswas_count_pair",
]

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

_LOG_2PI = math.log(2.0 * math.pi)
# Stirling-series coefficients of stirlerr(x) = log(x!) - log(sqrt(2 pi x) (x/e)^x)
_S0, _S1, _S2, _S3, _S4 = 1.0 / 12, 1.0 / 360, 1.0 / 1260, 1.0 / 1680, 1.0 / 1188


def _stirlerr(x: np.ndarray) -> np.ndarray:
    """log(x!) - [ (x + 1/2) log x - x + log(2 pi)/2 ] for integers x >= 1 (Loader 2000, eq 4)."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    small = x <= 15
    xs = x[small]
    out[small] = gammaln(xs + 1.0) - (xs + 0.5) * np.log(xs) + xs - 0.5 * _LOG_2PI
    xl = x[~small]
    x2 = 1.0 / (xl * xl)
    out[~small] = (_S0 - (_S1 - (_S2 - (_S3 - _S4 * x2) * x2) * x2) * x2) / xl
    return out


def _bd0(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """x log(x/m) + m - x >= 0 without cancellation (Loader 2000, "deviance" term), x >= 1, m > 0."""
    x, m = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(m, dtype=float))
    out = np.empty(x.shape)
    near = np.abs(x - m) < 0.1 * (x + m)
    xn, mn = x[near], m[near]
    v = (xn - mn) / (xn + mn)
    s = (xn - mn) * v
    ej = 2.0 * xn * v
    v2 = v * v
    for j in range(1, 14):  # |v| < 0.1: the 13th term is below 1e-26 of the first
        ej = ej * v2
        s = s + ej / (2 * j + 1)
    out[near] = s
    xf, mf = x[~near], m[~near]
    out[~near] = xf * np.log(xf / mf) + mf - xf
    return out


def _logs(p: float, q: float | None) -> tuple[float, float, float, float]:
    """(p, q, log p, log q) with q = 1 - p unless given; logs taken on the smaller side for accuracy."""
    p = float(p)
    q = 1.0 - p if q is None else float(q)
    with np.errstate(divide="ignore"):
        if p <= 0.5:
            lp, lq = (math.log(p) if p > 0 else -math.inf), math.log1p(-p)
        else:
            lq = math.log(q) if q > 0 else -math.inf
            lp = math.log1p(-q)
    return p, q, lp, lq


def log_binom_pmf(k, n, p: float, q: float | None = None) -> np.ndarray:
    """log P(Bin(n, p) = k), elementwise over broadcast integer arrays ``k`` and ``n``.

    Uses Loader's saddle-point form (C. Loader, "Fast and accurate computation of binomial
    probabilities", 2000): log pmf = stirlerr(n) - stirlerr(k) - stirlerr(n-k) - bd0(k, np)
    - bd0(n-k, nq) - log(2 pi k (n-k)/n)/2.  Its absolute error in the log is ~1e-13 even at n = 1e6,
    where the textbook ``gammaln`` difference loses ~1e-9 to cancellation.  Pass ``q = 1 - p`` when it
    is known more accurately than ``1 - p`` (e.g. ``-expm1(-eps0)``).  ``k`` outside [0, n] gives -inf.
    """
    p, q, lp, lq = _logs(p, q)
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    out = np.full(k.shape, -np.inf)
    if p == 0.0 or q == 0.0:
        point = n if q == 0.0 else np.zeros_like(n)
        out[k == point] = 0.0
        return out
    inside = (k >= 0) & (k <= n)
    lo = inside & (k == 0)
    hi = inside & (k == n) & (n > 0)
    mid = inside & (k > 0) & (k < n)
    out[lo] = n[lo] * lq
    out[hi] = n[hi] * lp
    km, nm = k[mid], n[mid]
    out[mid] = (
        _stirlerr(nm)
        - _stirlerr(km)
        - _stirlerr(nm - km)
        - _bd0(km, nm * p)
        - _bd0(nm - km, nm * q)
        - 0.5 * (_LOG_2PI + np.log(km) + np.log1p(-km / nm))
    )
    return out


def binom_log_kl(x, n, p: float, q: float | None = None) -> np.ndarray:
    """n * KL(x/n || p) for Bin(n, p), computed as bd0(x, np) + bd0(n-x, nq) (exact at x = 0, n)."""
    p, q, lp, lq = _logs(p, q)
    x, n = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(n, dtype=float))
    out = np.zeros(x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(x > 0, _bd0(np.maximum(x, 1.0), np.maximum(n * p, 1e-300)), n * p)
        b = np.where(n - x > 0, _bd0(np.maximum(n - x, 1.0), np.maximum(n * q, 1e-300)), n * q)
    out = a + b
    # at x = 0 the exact value is -n log q; at x = n it is -n log p
    out = np.where(x == 0, -n * lq, out)
    out = np.where(x == n, -n * lp, out)
    return out


def chernoff_window(n, p: float, log_budget, q: float | None = None):
    """Window [lo, hi] of Bin(n, p) outside which the mass is certified to be <= exp(log_budget).

    Vectorised over integer arrays ``n`` and ``log_budget``.  Each side gets half the budget and uses
    the Chernoff bound P(X <= x) <= exp(-n KL(x/n || p)) for x <= np (and the mirror bound above the
    mean).  Returns ``(lo, hi, log_tail)`` where ``log_tail`` is the log of the certified bound on
    P(X < lo) + P(X > hi) actually achieved (-inf when the window is the whole support [0, n]).
    ``log_budget = +inf`` (or >= 0) asks for nothing: the window may then be the single mode.
    """
    p, q, lp, lq = _logs(p, q)
    n_arr, lb = np.broadcast_arrays(np.asarray(n, dtype=np.int64), np.asarray(log_budget, dtype=float))
    shape = n_arr.shape
    n_arr = n_arr.astype(np.int64).ravel()
    lb = lb.ravel()
    if p == 0.0 or q == 0.0:
        point = (n_arr if q == 0.0 else np.zeros_like(n_arr)).reshape(shape)
        return point.copy(), point.copy(), np.full(shape, -np.inf)
    side = lb - math.log(2.0)
    need = -side  # required n KL at the first dropped value
    mean = n_arr * p
    with np.errstate(invalid="ignore", over="ignore"):
        # normal-approximation distance to the boundary (capped: a budget of 0 asks for the whole support)
        spread = np.fmin(np.sqrt(2.0 * np.maximum(need, 0.0) * n_arr * p * q), n_arr + 2.0)  # nan (inf * 0) -> cap

    def sat(x, idx):  # n KL(x/n || p) >= need (x clipped to the support)
        return binom_log_kl(np.clip(x, 0, n_arr[idx]), n_arr[idx], p, q) >= need[idx]

    def bisect(a, b, guess, step):
        """Narrow brackets with a satisfying and b not (sat is monotone between them) until
        |b - a| = 1.  A bracket of half-width ``step`` around ``guess`` is tried first (the normal
        approximation is close), keeping the full bracket where it does not hold."""
        g_a = np.clip(guess - step, np.minimum(a, b), np.maximum(a, b))
        g_b = np.clip(guess + step, np.minimum(a, b), np.maximum(a, b))
        if np.any(a > b):  # upper side: a above b
            g_a, g_b = g_b, g_a
        every = np.arange(a.size)
        ok = sat(g_a, every) | (g_a == a)
        ok &= ~sat(g_b, every) & (g_b != a)
        a = np.where(ok, g_a, a)
        b = np.where(ok, g_b, b)
        for _ in range(70):
            act = np.flatnonzero(np.abs(b - a) > 1)
            if act.size == 0:
                break
            mid = (a[act] + b[act]) // 2
            good = sat(mid, act)
            a[act] = np.where(good, mid, a[act])
            b[act] = np.where(good, b[act], mid)
        return a, b

    step = np.maximum(8, np.ceil(0.2 * spread).astype(np.int64))
    # lower side: largest integer x < mean with nKL(x) >= need; then lo = x + 1 (x < 0 -> lo = 0)
    lo_int = np.floor(mean).astype(np.int64)  # nKL(lo_int) small; search x in [-1, lo_int]
    a = np.full(n_arr.shape, -1, dtype=np.int64)  # a: value known to satisfy (x=-1: empty tail)
    b = np.minimum(lo_int, n_arr)  # b: value possibly not satisfying
    ok_b = binom_log_kl(b, n_arr, p, q) >= need
    # if even b = floor(mean) satisfies (only when need <= ~0), the whole left side is dropped
    guess = np.floor(mean - spread).astype(np.int64)
    a, b = bisect(a, b, guess, step)
    x_lo = np.where(ok_b, np.minimum(lo_int, n_arr), a)  # largest dropped value on the left (-1: none)
    lo = x_lo + 1
    # upper side: smallest integer x > mean with nKL(x) >= need; hi = x - 1 (x > n -> hi = n).
    # For p = 1/2, KL is symmetric (x <-> n - x, computed identically), so the mirror of the left side.
    if p == q:
        d = n_arr - x_lo
    else:
        c = np.minimum(np.ceil(mean).astype(np.int64), n_arr)
        ok_c = binom_log_kl(c, n_arr, p, q) >= need
        guess = np.ceil(mean + spread).astype(np.int64)
        d, c = bisect(n_arr + 1, c, guess, step)  # d satisfies (n + 1: empty tail), c does not
        d = np.where(ok_c, c, d)
    x_hi = d  # smallest dropped value on the right (n+1: nothing dropped)
    hi = x_hi - 1
    lo = np.minimum(lo, hi)  # a window always keeps at least one value
    with np.errstate(divide="ignore"):
        lt_lo = np.where(lo > 0, -binom_log_kl(np.maximum(lo - 1, 0), n_arr, p, q), -np.inf)
        lt_hi = np.where(hi < n_arr, -binom_log_kl(np.minimum(hi + 1, n_arr), n_arr, p, q), -np.inf)
    return lo.reshape(shape), hi.reshape(shape), np.logaddexp(lt_lo, lt_hi).reshape(shape)


def binom_rows(n_rows, p: float, lo, hi, q: float | None = None, log_int: np.ndarray | None = None):
    """log Bin(n_r, p)(c) on ragged rows c = lo_r .. hi_r, as a padded 2-D array and its mask.

    Each row is anchored at its first in-support column with :func:`log_binom_pmf` and continued by
    the exact recurrence log pmf(c) - log pmf(c-1) = log(n-c+1) - log(c) + log(p/q), summed along the
    row (the round-off accumulated over a row of width W is ~sqrt(W) * 1e-16 * |log pmf|, ~1e-13).
    ``log_int`` is an optional table of log(j), j = 0..max(n)+1 (see :func:`log_int_table`).
    Columns outside [0, n_r] hold -inf.  Returns ``(G, mask)`` of shape (rows, max width); ``G[mask]``
    is the rows' values in order.
    """
    p, q, lp, lq = _logs(p, q)
    n_rows = np.asarray(n_rows, dtype=np.int64)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    width = np.maximum(hi - lo + 1, 0)
    W = int(width.max()) if width.size else 0
    j = np.arange(W, dtype=np.int64)[None, :]
    c = lo[:, None] + j
    mask = j < width[:, None]
    if p == 0.0 or q == 0.0:
        point = (n_rows if q == 0.0 else np.zeros_like(n_rows))[:, None]
        return np.where(c == point, 0.0, -np.inf), mask
    nmax = int(n_rows.max()) + 1 if n_rows.size else 1
    L = log_int if (log_int is not None and log_int.size > nmax) else log_int_table(nmax)
    start = np.clip(lo, 0, n_rows)
    first = log_binom_pmf(start, n_rows, p, q)
    if W and np.all((lo >= 0) | (width == 0)):
        # every window starts inside the support: the same recurrence (identical values) with fewer
        # temporaries; columns beyond n_r are set to -inf
        N = n_rows[:, None]
        c = lo[:, None] + j
        np.minimum(c, N + 1, out=c)
        inc = L[N + 1 - c]
        inc -= L[np.maximum(c, 1)]
        inc[:, 0] = 0.0
        if lp != lq:
            inc[:, 1:] += lp - lq
        G = np.cumsum(inc, axis=1)
        G += first[:, None]
        G[c > N] = -np.inf
        return G, mask
    N = n_rows[:, None]
    inside = (c > start[:, None]) & (c <= N)
    cc = np.where(inside, c, 1)
    inc = L[np.where(inside, N - cc + 1, 1)] - L[cc]
    if lp != lq:
        inc += np.where(inside, lp - lq, 0.0)
    G = np.cumsum(inc, axis=1)
    G += first[:, None]
    G[(c < start[:, None]) | (c > N)] = -np.inf
    return G, mask


def log_int_table(n_max: int) -> np.ndarray:
    """log(j) for j = 0..n_max (log 0 = -inf)."""
    with np.errstate(divide="ignore"):
        return np.log(np.arange(n_max + 1, dtype=float))


def ragged(lo: np.ndarray, hi: np.ndarray):
    """Flatten rows r with columns lo[r]..hi[r] (inclusive): returns (row index, column) arrays."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    counts = np.maximum(hi - lo + 1, 0)
    rows = np.repeat(np.arange(lo.size), counts)
    starts = np.cumsum(counts) - counts
    cols = np.arange(rows.size, dtype=np.int64) - np.repeat(starts, counts) + np.repeat(lo, counts)
    return rows, cols


def row_windows(n_rows, p: float, log_budget_rows, q: float | None = None):
    """Chernoff windows for rows with Bin(n_rows[r], p) and per-row log budgets; rows whose budget is
    >= 1 are dropped whole (returned empty: lo = 1 > hi = 0, log tail 0 = their whole mass)."""
    lo, hi, lt = chernoff_window(n_rows, p, log_budget_rows, q)
    drop = np.asarray(log_budget_rows) >= 0.0
    lo = np.where(drop, 1, lo)
    hi = np.where(drop, 0, hi)
    lt = np.where(drop, 0.0, lt)
    return lo, hi, lt


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


def log_tail_sum(log_terms) -> float:
    """log of a sum of non-negative terms given in log space (-inf for an empty sum)."""
    arr = np.asarray(log_terms, dtype=float).ravel()
    if arr.size == 0:
        return -math.inf
    return float(logsumexp(arr))


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


def certified_tail(log_tail: float) -> float:
    """The tail bound as a float, rounded up by a relative 1e-12 so exp() round-off cannot undercut it."""
    if log_tail == -math.inf:
        return 0.0
    return float(math.exp(log_tail) * (1.0 + 1e-12))


#: atoms built at a time when a :class:`BinomialRows` is expanded or tabulated (8 MB per float64
#: temporary: blocks this size are recycled by the allocator, while much larger ones are mapped
#: afresh each time and pay a page fault per 4 kB, which made 4M-cell blocks ~5x slower)
CHUNK_CELLS = 1 << 20


def _chunks(width: np.ndarray, cells: int):
    """Consecutive row index blocks whose padded size (rows x max width) stays near ``cells``."""
    width = np.asarray(width, dtype=np.int64)
    if width.size == 0:
        return
    w = int(max(width.max(), 1))
    step = max(1, cells // w)
    for start in range(0, width.size, step):
        yield np.arange(start, min(start + step, width.size))


@dataclass(frozen=True)
class BinomialRows:
    """A neighbouring pair in "ancillary rows" form (the shape of the krr strong/weak and clones pairs).

    Outcomes are (r, x) with r a row and x in [0, N_r]; with B_r = Bin(N_r, 1/2),

        P(r, x) = exp(log_w[r]) B_r(x) (alpha[r] x + beta[r]),
        Q(r, x) = exp(log_w[r]) B_r(x) (alpha[r] (N_r - x) + beta[r]),

    so the row (an ancillary statistic) has the same law under P and Q, the privacy loss
    log((alpha x + beta)/(alpha (N - x) + beta)) increases with x, and P(r, x) = Q(r, N_r - x) (the
    pair is symmetric: delta_{P||Q} = delta_{Q||P}).  ``lo``/``hi`` are the columns kept when the pair
    is expanded into atoms; ``extra_log_p``/``extra_log_q`` are atoms outside the rows (e.g. the
    zero-loss atom of the strong adversary's visible coin); ``tail`` is a certified bound on the mass
    (under P and under Q) of the rows dropped and of the columns outside [lo, hi].  ``name``,
    ``params`` and ``reference`` describe the pair as for a :class:`~shufflesim.accounting.pmf_pair.PMFPair`.

    The tight accountant takes this form directly (:class:`~shufflesim.accounting.pld.RowsPLD`:
    exact single use in O(rows) per eps; composition by streaming the atoms onto a grid block by
    block), so the 1e7-1e8 atoms of n = 1e6 never have to be held at once.
    """

    log_w: np.ndarray
    N: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    tail: float
    extra_log_p: np.ndarray
    extra_log_q: np.ndarray
    name: str = "rows"
    params: Mapping[str, Any] = field(default_factory=dict)
    reference: str = ""

    @property
    def n_atoms(self) -> int:
        return int(np.maximum(self.hi - self.lo + 1, 0).sum() + self.extra_log_p.size)

    @property
    def tail_p(self) -> float:
        """Mass of P dropped by the truncation (as :attr:`PMFPair.tail_p`)."""
        return float(self.tail)

    @property
    def tail_q(self) -> float:
        """Mass of Q dropped by the truncation (equal to ``tail_p`` by symmetry of the bound)."""
        return float(self.tail)

    def mirrored(self) -> "BinomialRows":
        """The pair with the roles of P and Q exchanged, written again in row form.

        Q(r, x) = P(r, N_r - x) (Bin(N, 1/2) is symmetric), so the Q||P direction of these rows is the
        P||Q direction of the rows with the column windows reflected (x -> N_r - x) and the extra
        atoms' two sides swapped.
        """
        return replace(self, lo=self.N - self.hi, hi=self.N - self.lo,
                       extra_log_p=self.extra_log_q, extra_log_q=self.extra_log_p)

    @property
    def symmetric(self) -> bool:
        """True when every kept window is its own reflection and the extra atoms are swap-invariant:
        then delta_{P||Q} = delta_{Q||P} over the kept atoms."""
        keep = self.lo <= self.hi
        if not np.array_equal((self.lo + self.hi)[keep], self.N[keep]):
            return False
        a = sorted(zip(self.extra_log_p.tolist(), self.extra_log_q.tolist()))
        b = sorted(zip(self.extra_log_q.tolist(), self.extra_log_p.tolist()))
        return a == b

    def iter_atoms(self, cells: int = CHUNK_CELLS) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Yield (log_p, log_q, row, x) for the kept atoms in blocks of about ``cells`` atoms.

        An accountant can place the atoms on its grid block by block without holding them all; the
        extra atoms come first (row = -1, x = -1).  Atoms impossible under both sides are skipped.
        """
        if self.extra_log_p.size:
            m = -np.ones(self.extra_log_p.size, dtype=np.int64)
            yield self.extra_log_p, self.extra_log_q, m, m
        width = self.hi - self.lo + 1
        L = log_int_table(int(self.N.max()) + 2) if self.N.size else None
        for rows in _chunks(width, cells):
            G, mask = binom_rows(self.N[rows], 0.5, self.lo[rows], self.hi[rows], log_int=L)
            x = (self.lo[rows][:, None] + np.arange(G.shape[1])[None, :]).astype(float)
            N = self.N[rows][:, None].astype(float)
            A, B = self.alpha[rows][:, None], self.beta[rows][:, None]
            G += self.log_w[rows][:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                lp = (G + np.log(A * x + B))[mask]  # alpha, beta are O(1): no under/overflow
                lq = (G + np.log(A * (N - x) + B))[mask]
            r = np.broadcast_to(rows[:, None], G.shape)[mask]
            xx = x[mask].astype(np.int64)
            keep = (lp > -np.inf) | (lq > -np.inf)
            if keep.all():
                yield lp, lq, r, xx
            else:
                yield lp[keep], lq[keep], r[keep], xx[keep]

    def expand(self, *, with_outcomes: bool = False):
        """All kept atoms as (log_p, log_q) -- and (row, x) when ``with_outcomes`` -- in one piece."""
        total = self.n_atoms
        log_p = np.empty(total)
        log_q = np.empty(total)
        rows = np.empty(total, dtype=np.int64) if with_outcomes else None
        xs = np.empty(total, dtype=np.int64) if with_outcomes else None
        pos = 0
        for lp, lq, r, x in self.iter_atoms():
            k = lp.size
            log_p[pos : pos + k] = lp
            log_q[pos : pos + k] = lq
            if with_outcomes:
                rows[pos : pos + k] = r
                xs[pos : pos + k] = x
            pos += k
        out = (log_p[:pos], log_q[:pos])
        return out + (rows[:pos], xs[:pos]) if with_outcomes else out

    def log_delta(self, eps: float) -> float:
        """log of the exact delta(eps) of the rows kept (all columns 0..N_r), without expanding atoms.

        Row r contributes exp(log_w) [alpha (1 + e^eps) S1 - (e^eps (alpha N + beta) - beta) S0] with
        S0 = P(B_r >= x*) and S1 = E[B_r 1{B_r >= x*}] = (N/2) P(Bin(N-1, 1/2) >= x* - 1), where x* is
        the first column whose loss exceeds eps; binomial tails come from scipy's regularised
        incomplete beta (tails below ~1e-308 underflow to 0).  Cost O(rows).  A lower bound on the
        pair's delta; add ``tail`` for an upper bound.  Equal in both directions by symmetry (extra
        atoms included).  eps > 700 is evaluated at 700 (an upper bound there).
        """
        eps = min(float(eps), 700.0)  # beyond e^700 only infinite-loss atoms remain; clamping is conservative
        ee = math.exp(eps)
        N = self.N.astype(float)
        a, b = self.alpha, self.beta
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            thr = np.where(a > 0, (ee * (a * N + b) - b) / (a * (1.0 + ee)), np.inf)
            xs = np.floor(np.minimum(thr, N + 1.0)) + 1.0  # first column with loss > eps
            xs = np.maximum(xs, 0.0)
            ls0 = _binom.logsf(xs - 1.0, N, 0.5)
            ls1 = np.log(N / 2.0) + _binom.logsf(xs - 2.0, N - 1.0, 0.5)
            t1 = np.log(a) + np.log1p(ee) + ls1
            t0 = np.log(ee * (a * N + b) - b) + ls0
            diff = np.where(t1 > t0, t1 + np.log(-np.expm1(t0 - t1)), -np.inf)
            diff = np.where(xs > N, -np.inf, diff)
            terms = self.log_w + diff
        parts = [terms[np.isfinite(terms)]]
        lp, lq = self.extra_log_p, self.extra_log_q
        m = lp > lq + eps
        if m.any():
            with np.errstate(divide="ignore"):
                parts.append(lp[m] + np.log(-np.expm1(lq[m] + eps - lp[m])))
        return log_tail_sum(np.concatenate(parts))


from shufflesim.accounting.pairs.biswas import biswas_count_pair  # noqa: E402
from shufflesim.accounting.pairs.clones import clones_pair  # noqa: E402
from shufflesim.accounting.pairs.krr import (  # noqa: E402
    krr_eps0_from_gamma,
    krr_gamma_from_eps0,
    krr_pair,
    krr_strong_1d_pair,
    krr_strong_pair,
    krr_weak_pair,
)
from shufflesim.accounting.pairs.rr2 import rr2_pair  # noqa: E402
