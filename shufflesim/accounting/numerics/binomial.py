"""Binomial numerics shared by the pair constructors and the row-form engines.

* :func:`log_binom_pmf` -- log Bin(n, p)(k) to ~1e-13 absolute even at n = 10^6, in Loader's saddle-point
  form (C. Loader, "Fast and accurate computation of binomial probabilities", 2000);
* :func:`binom_log_kl` and :func:`chernoff_window` -- the relative-entropy (Chernoff) tail bound
  P(X <= x) <= exp(-n KL(x/n || p)) and the window of a binomial outside which the mass is certified to
  be below a budget (the truncation of every pair, see :mod:`shufflesim.accounting.pairs`);
* :func:`log_binom_pmf_scalar`, :func:`binom_log_kl_scalar`, :func:`chernoff_window_scalar` -- the same
  functions at one value (the same kernels and results, without the array bookkeeping that costs ~0.4-9 ms on
  one element; for callers that evaluate one window at a time);
* :func:`log_binom_window` -- log Bin(n, p) on one window by the exact ratio recurrence from an anchor, with its
  error split into the anchor's (common to the window) and the recurrence's (varying);
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

from shufflesim.accounting.numerics.logspace import U

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


def _stirlerr_small(log_fact, x):
    """stirlerr(x) from log(x!) for x <= 15 (elementwise: arrays or numpy scalars)."""
    return log_fact - (x + 0.5) * np.log(x) + x - 0.5 * _LOG_2PI


def _stirlerr_series(x):
    """stirlerr(x) for x > 15 by its Stirling series (Loader 2000, eq 4; arrays or numpy scalars)."""
    x2 = 1.0 / (x * x)
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 * x2) * x2) * x2) * x2) / x


def _stirlerr(x: np.ndarray) -> np.ndarray:
    """log(x!) - [ (x + 1/2) log x - x + log(2 pi)/2 ] for integers x >= 1 (Loader 2000, eq 4)."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    small = x <= 15
    xs = x[small]
    out[small] = _stirlerr_small(_log_factorial_small(xs), xs)
    out[~small] = _stirlerr_series(x[~small])
    return out


def _stirlerr1(x: np.float64) -> np.float64:
    """:func:`_stirlerr` of one value (the same kernels; a numpy scalar in and out)."""
    if x <= 15:
        j = int(x)
        lf = _LOG_FACT[j] if j == x else _log_factorial_small(np.array([x]))[0]
        return _stirlerr_small(lf, x)
    return _stirlerr_series(x)


def _bd0(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """x log(x/m) + m - x >= 0 without cancellation (Loader 2000, "deviance" term), x >= 1, m > 0."""
    x, m = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(m, dtype=float))
    out = np.empty(x.shape)
    near = np.abs(x - m) < 0.1 * (x + m)
    out[near] = _bd0_series(x[near], m[near])
    out[~near] = _bd0_direct(x[~near], m[~near])
    return out


def _bd0_direct(x, m):
    """bd0 away from the mean, where x log(x/m) + m - x does not cancel (arrays or numpy scalars)."""
    return x * np.log(x / m) + m - x


def _bd01(x: np.float64, m: np.float64) -> np.float64:
    """:func:`_bd0` of one pair of values (the same kernels)."""
    if abs(x - m) < 0.1 * (x + m):
        return _bd0_series(x, m)
    return _bd0_direct(x, m)


def _bd0_series(xn: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """bd0 for |v| < 0.1, v = (x - m)/(x + m): (x - m) v + sum_{j=1}^{13} 2 x v^{2j+1}/(2j+1), summed in that
    order -- bit for bit, but stopping at the first term that can change no element's sum.

    With s >= 0.9 v^2 (x + m) (|v| < 0.1), term j is at most |v|^{2j-1}/2 of s; once |v|^{2j-1} <= 2^-60
    for every element, it and every later (smaller) term are below 2^-61 s, under half an ulp of s, so
    adding them leaves s unchanged (round to nearest).  At most 10 terms are needed below |v| = 0.1 (one
    kept as a margin for the rounding of the cut), fewer when the largest |v| is smaller (issue 9)."""
    v = (xn - mn) / (xn + mn)
    s = (xn - mn) * v
    if isinstance(v, float):  # one value (the scalar entry points)
        vmax = abs(v)
    elif v.size == 0:
        return s
    else:
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
    # math's logs (no numpy error state to set: ~14 us per call, which the scalar entry points would pay)
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


def _bd0_exact_mean1(x: np.float64, n: np.float64, p: float) -> np.float64:
    """:func:`_bd0_exact_mean` of one value (the same kernels and compensation)."""
    hi, lo = _two_prod(n, p)
    if hi < 1e-300:
        hi, lo = 1e-300, 0.0
    return _bd01(x, hi) + (1.0 - x / hi) * lo


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
    out[mid] = _loader(_stirlerr(nm), _stirlerr(km), _stirlerr(nm - km), _bd0_exact_mean(km, nm, p),
                       _bd0_exact_mean(nm - km, nm, q), km, nm)
    return out


def _loader(s_n, s_k, s_nk, d_k, d_nk, k, n):
    """Loader's saddle-point combination of the stirlerr and bd0 terms (arrays or numpy scalars)."""
    return s_n - s_k - s_nk - d_k - d_nk - 0.5 * (_LOG_2PI + np.log(k) + np.log1p(-k / n))


def log_binom_pmf_scalar(k: int, n: int, p: float, q: float | None = None) -> float:
    """:func:`log_binom_pmf` at one integer ``k`` and ``n``, as a float: the same formulas, kernels and n·p
    compensation (so the same accuracy model, :data:`BINOM_LOG_ERR`), without the array bookkeeping that
    costs ~0.4 ms per call on one element (the exact binary-RR engine calls it per window; tests/test_binomial.py
    asserts equality with the vectorised values)."""
    p, q, lp, lq = _logs(p, q)
    if p == 0.0 or q == 0.0:
        return 0.0 if k == (n if q == 0.0 else 0) else -math.inf
    if k < 0 or k > n:
        return -math.inf
    if k == 0:
        return float(n) * lq
    if k == n:
        return float(n) * lp
    kf, nf = float(k), float(n)  # Python floats: the same IEEE arithmetic as numpy's, without its scalar overhead
    return float(_loader(_stirlerr1(nf), _stirlerr1(kf), _stirlerr1(nf - kf), _bd0_exact_mean1(kf, nf, p),
                         _bd0_exact_mean1(nf - kf, nf, q), kf, nf))


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


def _kl1(x: int, n: int, p: float, q: float, lp: float, lq: float) -> float:
    """:func:`binom_log_kl` at one integer ``x`` (the same kernels and special cases; p, q, log p, log q given)."""
    nf = float(n)
    if x == 0:
        return -nf * lq
    if x == n:
        return -nf * lp
    xf = float(x)
    return float(_bd0_exact_mean1(xf, nf, p) + _bd0_exact_mean1(nf - xf, nf, q))


def binom_log_kl_scalar(x: int, n: int, p: float, q: float | None = None) -> float:
    """:func:`binom_log_kl` at one integer ``x`` in [0, n], as a float (same values, without array overhead)."""
    p, q, lp, lq = _logs(p, q)
    return _kl1(int(x), int(n), p, q, lp, lq)


def _edge(sat, inner: int, outer: int, guess: int) -> int:
    """The value next to ``inner`` on the satisfying side of a monotone predicate: ``sat`` is False at ``inner``
    and True at ``outer`` (which is not evaluated: it may be a virtual end beyond the support); returns the x
    nearest ``inner`` with sat(x), found by bisection after first testing ``guess`` and its neighbour towards
    ``inner`` (a good guess settles it in two evaluations; the guess only chooses where to look)."""
    d = 1 if outer > inner else -1
    g = min(max(guess, min(inner, outer) + 1), max(inner, outer) - 1)
    if (outer - inner) * d > 1:
        if sat(g):
            if not sat(g - d):
                return g
            outer = g - d
        else:
            inner = g
            if sat(g + d):
                return g + d
            inner = g + d
    while (outer - inner) * d > 1:
        mid = (inner + outer) // 2
        if sat(mid):
            outer = mid
        else:
            inner = mid
    return outer


def _kl_root(n: int, p: float, q: float, need: float, side: int) -> float:
    """A guess of the x on ``side`` (-1 below the mean, +1 above) where n KL(x/n || p) = need: the normal
    approximation moved by Newton steps on the textbook KL (only where :func:`chernoff_window_scalar` looks first)."""
    mean, var = n * p, n * p * q
    x = mean + side * math.sqrt(2.0 * max(need, 0.0) * var)
    for _ in range(4):
        x = min(max(x, 0.5), max(n - 0.5, 0.5))
        f = x * math.log(x / mean) + (n - x) * math.log((n - x) / (n * q)) - need
        slope = math.log(x / mean) - math.log((n - x) / (n * q))
        if slope == 0.0 or not math.isfinite(f):
            break
        x_new = x - f / slope
        if not math.isfinite(x_new) or side * (x_new - mean) <= 0:
            break
        x = x_new
    return x


def chernoff_window_scalar(n: int, p: float, log_budget: float, q: float | None = None) -> tuple[int, int, float]:
    """:func:`chernoff_window` for one ``n`` and budget: ``(lo, hi, log_tail)`` as Python numbers.

    The same window (lo - 1 the largest x below the mean with n KL(x/n || p) >= -(log_budget - log 2), hi + 1
    the smallest above it, each by :func:`binom_log_kl`'s values; the p = 1/2 mirror; a window keeps at least
    one value) and the same certified tail; only the search differs (scalar, from a Newton guess, ~0.2 ms
    instead of ~9 ms on one element).  tests/test_binomial.py asserts equal results."""
    p, q, lp, lq = _logs(p, q)
    n = int(n)
    if p == 0.0 or q == 0.0:
        point = n if q == 0.0 else 0
        return point, point, -math.inf
    need = -(float(log_budget) - math.log(2.0))
    mean = float(n) * p
    kl: dict[int, float] = {}  # the values met (the tails below reuse the search's last ones)

    def kl_at(x: int) -> float:
        if x not in kl:
            kl[x] = _kl1(x, n, p, q, lp, lq)
        return kl[x]

    def sat(x: int) -> bool:
        return kl_at(min(max(x, 0), n)) >= need

    def surely_unsat(x: int) -> bool:
        """sat(x) is False, known without evaluating it, for x within 1 of the mean (floor or ceil) with
        2 <= x <= n - 2: bd0(x, m) = m phi(x/m) <= (x - m)^2 / x where x/m <= 3 (phi(t) = t log t - t + 1 <=
        (t - 1)^2 / t on (0, 3]), so n KL(x/n || p) < 1/x + 1/(n - x), widened by 1% for q given apart from 1 - p
        and by 1e-6 for the kernels' rounding (their error model is ~1e-13 here).  Saves the two evaluations at the
        mean that a window with a budget below e^-2 always fails (the exact binary RR's windows)."""
        return 2 <= x <= n - 2 and need > 1.01 / x + 1.01 / (n - x) + 1e-6

    fine = math.isfinite(need) and need > 0
    b = min(int(math.floor(mean)), n)
    if not surely_unsat(b) and sat(b):
        x_lo = b
    elif b <= 0:
        x_lo = -1
    else:
        guess = int(math.floor(_kl_root(n, p, q, need, -1))) if fine else b - 1
        x_lo = _edge(sat, b, -1, guess)
    if p == q:
        x_hi = n - x_lo
    else:
        c = min(int(math.ceil(mean)), n)
        if not surely_unsat(c) and sat(c):
            x_hi = c
        elif c >= n:
            x_hi = n + 1
        else:
            guess = int(math.ceil(_kl_root(n, p, q, need, 1))) if fine else c + 1
            x_hi = _edge(sat, c, n + 1, guess)
    hi = x_hi - 1
    lo = min(x_lo + 1, hi)
    lt_lo = -kl_at(max(lo - 1, 0)) if lo > 0 else -math.inf
    lt_hi = -kl_at(min(hi + 1, n)) if hi < n else -math.inf
    return lo, hi, float(np.logaddexp(lt_lo, lt_hi))


def log_ratio_pq(p: float, q: float) -> float:
    """log(p/q) for the ratio recurrence, each log taken where it is accurate: log p − log q for p <= 1/2, else
    log1p(−q) − log q (the given q is then the accurate side)."""
    return (math.log(p) if p <= 0.5 else math.log1p(-q)) - math.log(q)


def log_binom_window(n: int, p: float, lo: int, hi: int, anchor: int | None = None, q: float | None = None, *,
                     errors: bool = True):
    """log Bin(n, p)(k) on the window k = lo..hi (0 <= lo <= hi <= n) by the exact ratio recurrence
    log B(k+1) − log B(k) = log((n−k)/(k+1)) + log(p/q) (:func:`log_ratio_pq`), cumulated both ways from
    ``anchor`` (default: the mode clipped to the window), whose value is :func:`log_binom_pmf_scalar`.

    Returns ``(rel, l_anchor, common, varying)``: the values are ``l_anchor + rel`` (``rel`` is 0 at the anchor);
    ``common`` = BINOM_LOG_ERR·max(1, |l_anchor|/100) bounds the anchor's error, shared by every entry (it scales
    the window's PMF by one factor); ``varying`` bounds the recurrence's own rounding at any entry: per step
    4 ulps of each logarithm and of the quotient, 4u(|t| + 2|log(p/q)| + 2), and one ulp of the partial sum,
    u|l_anchor + rel| (docs/theory.md#exact-rr2).  ``errors=False`` skips ``varying`` (returned as nan) for a
    caller with an allowance of its own: it costs a few passes over windows that reach 10⁹ values at population
    scale.  Computed in place (about three arrays of the window's size).  Used by the exact binary-RR engine and
    the tail sums of Cheu et al.'s summation bound."""
    p, q, _, _ = _logs(p, q)
    if p == 0.0 or q == 0.0:  # a point mass (e.g. a tilted probability that underflowed): no ratio to recur by
        point = n if q == 0.0 else 0
        inside = lo <= point <= hi
        rel = np.where(np.arange(lo, hi + 1) == point, 0.0, -np.inf)
        return rel, (0.0 if inside else -math.inf), BINOM_LOG_ERR, 0.0
    if anchor is None:
        anchor = int(math.floor((n + 1) * p))
    anchor = min(max(int(anchor), lo), hi)
    l_anchor = log_binom_pmf_scalar(anchor, n, p, q)
    lpq = log_ratio_pq(p, q)
    i = anchor - lo
    rel = np.empty(hi - lo + 1)
    rel[i] = 0.0
    varying = 0.0 if errors else math.nan
    for side in (1, -1):
        k = np.arange(anchor, hi, dtype=float) if side > 0 else np.arange(anchor - 1, lo - 1, -1, dtype=float)
        if k.size == 0:
            continue
        t = n - k  # the step k -> k + 1 (up) or k + 1 -> k (down): ±(log((n − k)/(k + 1)) + log(p/q))
        k += 1.0
        t /= k
        del k
        np.log(t, out=t)
        t += lpq
        if side < 0:
            np.negative(t, out=t)
        c = rel[i + 1:] if side > 0 else np.empty(t.size)
        np.cumsum(t, out=c)
        if errors:
            np.abs(t, out=t)
            t += 2 * abs(lpq)
            t += 2
            t *= 4 * U
            s_abs = l_anchor + c
            np.abs(s_abs, out=s_abs)
            s_abs *= U
            t += s_abs
            varying = max(varying, float(t.sum()))
        if side < 0:
            rel[:i] = c[::-1]
    common = BINOM_LOG_ERR * max(1.0, abs(l_anchor) / 100.0)
    return rel, l_anchor, common, varying


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

