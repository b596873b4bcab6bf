"""Binomial numerics shared by the pair constructors and the row-form engines.

* :func:`log_binom_pmf` -- log Bin(n, p)(k) to ~1e-13 absolute even at n = 10^6, in Loader's saddle-point
  form (C. Loader, "Fast and accurate computation of binomial probabilities", 2000);
* :func:`binom_log_kl` and :func:`chernoff_window` -- the relative-entropy (Chernoff) tail bound
  P(X <= x) <= exp(-n KL(x/n || p)) and the window of a binomial outside which the mass is certified to
  be below a budget (the truncation of every pair, see :mod:`shufflesim.accounting.pairs`);
* :func:`binom_rows` -- log Bin(n_r, p) on ragged rows of columns, by the exact ratio recurrence;
* :func:`row_blocks` / :data:`CHUNK_CELLS` -- blocks of rows of bounded padded size, for streaming;
* :func:`certified_tail`, :func:`log_tail_sum` -- a truncation bound as a float rounded up, log-sums;
* :data:`BINOM_LOG_ERR` -- the accuracy model of these log-PMF values (n p rounding compensated, so it holds
  to n = 1e10: tests/test_pairs.py) that the row-form engines
  (:mod:`.rows_pld`, :mod:`.rows_stream`) certify their intervals under.
"""

from __future__ import annotations

import math

import numpy as np

#: accuracy model of the binomial log-PMF values (:func:`log_binom_pmf` and its row recurrence
#: :func:`binom_rows`; checked against mpmath in tests/test_pairs.py): the absolute error of log B is
#: at most BINOM_LOG_ERR * max(1, |log B| / 100).  The row engines certify their intervals for the
#: mathematical pair under this model (the atom engine takes its input log-PMFs as exact instead).
BINOM_LOG_ERR = 2e-12

_LOG_2PI = math.log(2.0 * math.pi)
# Stirling-series coefficients of stirlerr(x) = log(x!) - log(sqrt(2 pi x) (x/e)^x)
_S0, _S1, _S2, _S3, _S4 = 1.0 / 12, 1.0 / 360, 1.0 / 1260, 1.0 / 1680, 1.0 / 1188


#: log(j!) for j = 0..16, for the small arguments of :func:`_stirlerr` without importing scipy: the values of
#: scipy.special.gammaln(j + 1) bit for bit (tests/test_cli_startup.py asserts it), so no result moves
_LOG_FACT = np.array([float.fromhex(h) for h in (
    "0x0.0p+0", "0x0.0p+0", "0x1.62e42fefa39efp-1", "0x1.cab0bfa2a2002p+0",
    "0x1.96ca77c922cf9p+1", "0x1.326643c4479c9p+2", "0x1.a51273acf01cap+2", "0x1.10ce1f32dcc30p+3",
    "0x1.5358e82fcb70dp+3", "0x1.99a8921a7f7cfp+3", "0x1.e357590954d15p+3", "0x1.180973f3a8d74p+4",
    "0x1.3fcba16d50143p+4", "0x1.68d5a9c3b32cdp+4", "0x1.930f3df162a43p+4", "0x1.be636a63fd347p+4",
    "0x1.eabff061f1a85p+4",
)])


def _log_factorial_small(x: np.ndarray) -> np.ndarray:
    """log(x!) for x <= 15: a table for integers; scipy's gammaln (imported on use) for any other value."""
    j = x.astype(np.int64)
    if np.all(j == x):
        return _LOG_FACT[j]
    from scipy.special import gammaln

    return gammaln(x + 1.0)


def _stirlerr(x: np.ndarray) -> np.ndarray:
    """log(x!) - [ (x + 1/2) log x - x + log(2 pi)/2 ] for integers x >= 1 (Loader 2000, eq 4)."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    small = x <= 15
    xs = x[small]
    out[small] = _log_factorial_small(xs) - (xs + 0.5) * np.log(xs) + xs - 0.5 * _LOG_2PI
    xl = x[~small]
    x2 = 1.0 / (xl * xl)
    out[~small] = (_S0 - (_S1 - (_S2 - (_S3 - _S4 * x2) * x2) * x2) * x2) / xl
    return out


def _bd0(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """x log(x/m) + m - x >= 0 without cancellation (Loader 2000, "deviance" term), x >= 1, m > 0."""
    x, m = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(m, dtype=float))
    out = np.empty(x.shape)
    near = np.abs(x - m) < 0.1 * (x + m)
    out[near] = _bd0_series(x[near], m[near])
    xf, mf = x[~near], m[~near]
    out[~near] = xf * np.log(xf / mf) + mf - xf
    return out


def _bd0_series(xn: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """bd0 for |v| < 0.1, v = (x - m)/(x + m): (x - m) v + sum_{j=1}^{13} 2 x v^{2j+1}/(2j+1), summed in that
    order -- bit for bit, but stopping at the first term that can change no element's sum.

    With s >= 0.9 v^2 (x + m) (|v| < 0.1), term j is at most |v|^{2j-1}/2 of s; once |v|^{2j-1} <= 2^-60
    for every element, it and every later (smaller) term are below 2^-61 s, under half an ulp of s, so
    adding them leaves s unchanged (round to nearest).  At most 10 terms are needed below |v| = 0.1 (one
    kept as a margin for the rounding of the cut), fewer when the largest |v| is smaller (issue 9)."""
    v = (xn - mn) / (xn + mn)
    s = (xn - mn) * v
    if v.size == 0:
        return s
    vmax = float(np.max(np.abs(v)))
    if vmax == 0.0:
        return s  # every term is 0
    # smallest J with vmax^(2J-1) <= 2^-60; terms 1..J are added (term J as the margin)
    terms = min(13, int(math.ceil((60.0 / -math.log2(vmax) + 1.0) / 2.0)))
    ej = 2.0 * xn * v
    v2 = v * v
    for j in range(1, terms + 1):
        ej = ej * v2
        s = s + ej / (2 * j + 1)
    return s


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


_SPLIT = 134217729.0  # 2^27 + 1: Dekker's splitting constant for float64


def _two_prod(a: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo) with hi + lo = a * b exactly (Dekker's error-free product; a < 2^996)."""
    hi = a * b
    A = a * _SPLIT
    ah = A - (A - a)
    al = a - ah
    B = b * _SPLIT
    bh = B - (B - b)
    bl = b - bh
    lo = ((ah * bh - hi) + ah * bl + al * bh) + al * bl
    return hi, lo


def _bd0_exact_mean(x: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    """bd0(x, n p) with the rounding of the product n p compensated to first order: bd0 changes by
    (1 - x/M) dM when its mean M moves by dM, and n p = hi + lo exactly (:func:`_two_prod`).  Without it the
    rounded mean costs u |x - n p| in the log-PMF: 2e-11 at n = 2e9, five times the accuracy model at 1e9."""
    hi, lo = _two_prod(n, p)
    tiny = hi < 1e-300  # a mean that underflows: floored as before, no correction
    if np.any(tiny):
        hi = np.where(tiny, 1e-300, hi)
        lo = np.where(tiny, 0.0, lo)
    return _bd0(x, hi) + (1.0 - x / hi) * lo


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
        - _bd0_exact_mean(km, nm, p)
        - _bd0_exact_mean(nm - km, nm, q)
        - 0.5 * (_LOG_2PI + np.log(km) + np.log1p(-km / nm))
    )
    return out


def binom_log_kl(x, n, p: float, q: float | None = None) -> np.ndarray:
    """n * KL(x/n || p) for Bin(n, p), computed as bd0(x, np) + bd0(n-x, nq) (exact at x = 0, n)."""
    p, q, lp, lq = _logs(p, q)
    x, n = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(n, dtype=float))
    out = np.zeros(x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(x > 0, _bd0_exact_mean(np.maximum(x, 1.0), n, p), n * p)
        b = np.where(n - x > 0, _bd0_exact_mean(np.maximum(n - x, 1.0), n, q), n * q)
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

    def refined(x0, side):
        """The normal-approximation guess moved by three Newton steps on the continuous n KL(x/n || p) = need
        (convex in x, so the iterates settle on the far side of the root): only where the bisection starts
        looking, never what it accepts (issue 9: the bracket shrinks from ~0.4 spread to a few values)."""
        nf = n_arr.astype(float)
        x = np.clip(x0, 0.5, np.maximum(nf - 0.5, 0.5)).astype(float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for _ in range(3):
                f = binom_log_kl(x, nf, p, q) - need
                slope = np.log(x / (nf * p)) - np.log((nf - x) / (nf * q))
                xn = x - f / slope
                ok = np.isfinite(xn) & (side * (xn - mean) > 0)
                x = np.where(ok, np.clip(xn, 0.5, np.maximum(nf - 0.5, 0.5)), x)
        return np.where(np.isfinite(x), x, x0)

    step = np.maximum(8, np.ceil(0.2 * spread).astype(np.int64))
    fine = np.isfinite(need) & (need > 0) & np.isfinite(spread)
    # lower side: largest integer x < mean with nKL(x) >= need; then lo = x + 1 (x < 0 -> lo = 0)
    lo_int = np.floor(mean).astype(np.int64)  # nKL(lo_int) small; search x in [-1, lo_int]
    a = np.full(n_arr.shape, -1, dtype=np.int64)  # a: value known to satisfy (x=-1: empty tail)
    b = np.minimum(lo_int, n_arr)  # b: value possibly not satisfying
    ok_b = binom_log_kl(b, n_arr, p, q) >= need
    # if even b = floor(mean) satisfies (only when need <= ~0), the whole left side is dropped
    guess = np.floor(mean - spread)
    guess = np.where(fine, np.floor(refined(guess, -1.0)), guess).astype(np.int64)
    a, b = bisect(a, b, guess, np.where(fine, 2, step))
    x_lo = np.where(ok_b, np.minimum(lo_int, n_arr), a)  # largest dropped value on the left (-1: none)
    lo = x_lo + 1
    # upper side: smallest integer x > mean with nKL(x) >= need; hi = x - 1 (x > n -> hi = n).
    # For p = 1/2, KL is symmetric (x <-> n - x, computed identically), so the mirror of the left side.
    if p == q:
        d = n_arr - x_lo
    else:
        c = np.minimum(np.ceil(mean).astype(np.int64), n_arr)
        ok_c = binom_log_kl(c, n_arr, p, q) >= need
        guess = np.ceil(mean + spread)
        guess = np.where(fine, np.ceil(refined(guess, 1.0)), guess).astype(np.int64)
        d, c = bisect(n_arr + 1, c, guess, np.where(fine, 2, step))  # d satisfies (n + 1: empty tail), c does not
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


#: largest n_max tabulated by :func:`log_int_table` (128 MB); beyond, the logs are computed on lookup
LOG_TABLE_MAX = 1 << 24


class _LogInt:
    """log(j) for integer arrays j in 0..n_max, computed on lookup (the same np.log of the same floats
    as the table): for n_max beyond :data:`LOG_TABLE_MAX` (n = 1e9 would need a 4 GB table; issue 21)."""

    def __init__(self, n_max: int):
        self.size = int(n_max) + 1

    def __getitem__(self, idx):
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(idx, dtype=float))


def log_int_table(n_max: int) -> np.ndarray:
    """log(j) for j = 0..n_max (log 0 = -inf); computed on lookup above :data:`LOG_TABLE_MAX`."""
    if n_max > LOG_TABLE_MAX:
        return _LogInt(n_max)
    with np.errstate(divide="ignore"):
        return np.log(np.arange(n_max + 1, dtype=float))



def log_tail_sum(log_terms) -> float:
    """log of a sum of non-negative terms given in log space (-inf for an empty sum)."""
    arr = np.asarray(log_terms, dtype=float).ravel()
    if arr.size == 0:
        return -math.inf
    # scipy.special.logsumexp's algorithm, reproduced bit for bit (tests/test_cli_startup.py) without importing
    # scipy: the maximal terms are counted apart, the rest summed after the shift, log1p of their ratio
    top = np.max(arr)
    if top == -np.inf or top == np.inf:
        return float(top)
    is_max = arr == top
    count = np.sum(is_max.astype(float))
    rest = np.sum(np.exp(np.where(is_max, -np.inf, arr) - top))
    rest = rest if rest == 0 else rest / count
    return float(np.log1p(rest) + np.log(count) + top)



def certified_tail(log_tail: float) -> float:
    """The tail bound as a float, rounded up by a relative 1e-12 so exp() round-off cannot undercut it."""
    if log_tail == -math.inf:
        return 0.0
    return float(math.exp(log_tail) * (1.0 + 1e-12))


#: atoms built at a time when a :class:`~.binomial_rows.BinomialRows` is expanded or tabulated (8 MB per float64
#: temporary: blocks this size are recycled by the allocator, while much larger ones are mapped
#: afresh each time and pay a page fault per 4 kB, which made 4M-cell blocks ~5x slower)
CHUNK_CELLS = 1 << 20


def row_blocks(width: np.ndarray, cells: int):
    """Consecutive row index blocks whose padded size (rows x max width) stays near ``cells``.

    ``width`` is the number of columns of each row; yields arrays of row indices (in order)."""
    width = np.asarray(width, dtype=np.int64)
    if width.size == 0:
        return
    w = int(max(width.max(), 1))
    step = max(1, cells // w)
    for start in range(0, width.size, step):
        yield np.arange(start, min(start + step, width.size))

