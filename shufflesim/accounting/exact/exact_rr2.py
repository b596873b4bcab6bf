"""The exact privacy of shuffled binary randomised response, over every neighbouring pair of data sets.

Each of n users reports its bit, flipped with probability p = 1/(e^{ε0}+1) (q = 1 − p); the analyser sees
the shuffled reports, i.e. their count.  A neighbouring pair of data sets is fixed by m, the number of ones
held by the n − 1 *other* users (m = 0..n−1), and the target's switch 0 ↔ 1.  With
S_m = Bin(m, q) + Bin(n−1−m, p) the others' count,

    P_m = S_m + Bern(p)   (target holds 0),        Q_m = S_m + Bern(q)   (target holds 1),

and the mechanism's δ(ε) is max over m of max(δ(P_m‖Q_m), δ(Q_m‖P_m)) (docs/theory.md#exact-rr2).

* **One direction suffices.** y ↦ n − y maps Q_m to P_{n−1−m} and P_m to Q_{n−1−m} (ones and zeros swap),
  so δ(Q_m‖P_m) = δ(P_{n−1−m}‖Q_{n−1−m}); the maximum over m of δ(P_m‖Q_m) alone is the mechanism's δ.
* **One data set, in closed form.** With A = q − e^ε p, B = e^ε q − p and f the PMF of S_m,
  P_m(y) − e^ε Q_m(y) = A f(y) − B f(y−1).  Tilting f by e^{θy}, θ = log(A/B) ≤ 0, gives again a sum of two
  binomials, h = PMF of Bin(m, q′) + Bin(n−1−m, p′) (log-odds ε0 + θ and θ − ε0), with
  f(y) = c e^{−θy} h(y), so δ(P_m‖Q_m) = A c Σ_y e^{−θy} (h(y) − h(y−1))₊ — the sum runs up to the mode of
  h, which the tilt puts at the threshold, so every term that matters is of order one: no underflow at
  any δ (all in log space), and h is a direct (not FFT) convolution of non-negative terms, whose relative
  round-off is bounded.  :func:`pair_bracket` certifies this value from both sides: the log-PMF accuracy
  model of :mod:`.binomial` (BINOM_LOG_ERR), the convolution's round-off, the Chernoff windows' dropped
  mass (added to the upper end, subtracted at its largest weight from the lower end) and the final
  exponentials.
* **Every m, certified.** Revealing to the adversary the reports of L of the other users (a
  post-processing in reverse: the view with them is finer) shows that for every m in [a, a + L],
  δ(P_m‖Q_m) ≤ the δ of the data set with n − L users of whom a of the others hold ones.  A
  branch-and-bound over m (:func:`_search`) evaluates the exact δ at some m's, bounds every gap between
  two evaluated m's that way, and splits the gap with the largest bound until no gap can hold a larger δ
  than the best one found (or until a stated relative tolerance): the worst m is then *proved* worst.
* **Population scale (n > 10⁶, single use; docs/theory.md#exact-rr2-population).**  One data set's δ in O(window)
  (:func:`pair_log_bracket_sums`: two weighted tail sums instead of the convolution), and every m covered by
  pieces [a, a + L], each certified by the one smaller data set above (:func:`cover`); ε(δ) is bracketed to a
  relative width of 10⁻³ (:func:`population_eps_bracket`), δ(ε) to 2·10⁻² (:func:`population_delta_bracket`),
  in ~600-750 evaluations at every n (~20-30 s at n = 10⁹).

``compositions > 1`` (the same mechanism used k times on the same data): the lower end is the composed δ
of the worst single-use data set(s) — exact for that data set, hence a lower bound on the mechanism —
and the upper end is the tight method's answer on Feldman, McMillan, Talwar's stronger clone pair, a dominating
pair for every data set (and for adaptive composition).  Only single use is exact; compositions are bracketed, and
the bracket's notes say so.  This module gives the lower end's parts (:func:`composed_lower_delta`,
:func:`composed_lower_eps`); the bracket itself is assembled in one place, the exact engine
(:mod:`shufflesim.accounting.exact.exact_engine`, behind ``account(..., method="exact")``).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from shufflesim.accounting.engines.estimates import EXACT_RR2_BRANCH_MAX_N, exact_binary_rr_estimate
from shufflesim.accounting.numerics.binomial import (BINOM_LOG_ERR, certified_tail, chernoff_window_scalar,
                                                     log_binom_window, log_ratio_pq)
from shufflesim.accounting.numerics.invert import bracket_illinois, calibrate
from shufflesim.accounting.numerics.logspace import REL_SLACK, U, exp_down, exp_up, log1pexp, log_expm1, log_sum
from shufflesim.core.checks import check_int, check_positive, check_real
from shufflesim.errors import NotApplicableError, ParameterError

#: log of the Chernoff budget of each tilted binomial's window (dropped mass e^-60 ~ 8.8e-27 of h's total)
_LOG_WINDOW = -60.0
#: default relative tolerance of the search over m (the upper end exceeds the best exact δ found by at most
#: this much, or the notes say how much)
SEARCH_RTOL = 1e-9
#: largest number of exact evaluations the search may spend
MAX_EVALS = 4000


@dataclass(frozen=True)
class Bracket:
    """Certified ``lower <= value <= upper`` of the mechanism's δ(ε) (or ε(δ)); ``m`` the worst number of
    ones among the other users found; ``notes`` what was certified and how."""

    lower: float
    upper: float
    m: int
    notes: tuple[str, ...] = ()
    evaluations: int = 0


# ---------------------------------------------------------------------------------------------------
# one data set


def _sigmoid_pair(t: float) -> tuple[float, float]:
    """(1/(1+e^-t), 1/(1+e^t)), each computed without cancellation."""
    if t >= 0:
        e = math.exp(-t)
        return 1.0 / (1.0 + e), e / (1.0 + e)
    e = math.exp(t)
    return e / (1.0 + e), 1.0 / (1.0 + e)


def _log_binom_window(n: int, p: float, q: float, log_budget: float):
    """(offset, log pmf on the window, log of the certified dropped mass, (varying, common) bounds on the
    log pmf's absolute error) of Bin(n, p), q = 1 - p: the window of :func:`~.binomial.chernoff_window_scalar`
    (at most half of exp(log_budget) dropped on each side), its values by :func:`~.binomial.log_binom_window`
    (the mode's log-PMF under the accuracy model BINOM_LOG_ERR, the ratio recurrence's rounding), and n·4 ulps
    added to the common error for p and q being floats (each within 4 ulps of the exact tilted probability: a
    common factor e^{±4un})."""
    if n == 0:
        return 0, np.zeros(1), -math.inf, (0.0, 0.0)
    lo, hi, log_tail = chernoff_window_scalar(n, p, log_budget, q)
    rel, l_mode, common, varying = log_binom_window(n, p, lo, hi, q=q)
    return lo, l_mode + rel, log_tail, (varying, common + 4.04 * U * n)


def _log_binom_window_fast(n: int, p: float, q: float, log_budget: float):
    """:func:`_log_binom_window` with the recurrence's rounding bounded from the window's ends instead of entry by
    entry (``errors=False`` of :func:`~.binomial.log_binom_window`, half its passes at population scale).

    The per-step bound of :func:`~.binomial.log_binom_window`, 4u(|t| + 2|log(p/q)| + 2) + u|l_anchor + rel|, is at
    most its value with |t| replaced by its largest value on the side (t = log((n − k)/(k + 1)) + log(p/q) decreases
    in k, so the largest |t| is at one of the side's two ends) and |rel| by the largest of the window's two end
    values (rel is concave with rel = 0 at the anchor); the error of any entry is at most the number of steps of its
    side times that."""
    if n == 0:
        return 0, np.zeros(1), -math.inf, (0.0, 0.0)
    lo, hi, log_tail = chernoff_window_scalar(n, p, log_budget, q)
    if p == 0.0 or q == 0.0:
        rel, l_mode, common, _ = log_binom_window(n, p, lo, hi, q=q, errors=False)
        return lo, l_mode + rel, log_tail, (0.0, common + 4.04 * U * n)
    anchor = min(max(int(math.floor((n + 1) * p)), lo), hi)
    rel, l_mode, common, _ = log_binom_window(n, p, lo, hi, anchor=anchor, q=q, errors=False)
    lpq = log_ratio_pq(p, q)
    top = max(abs(float(rel[0])), abs(float(rel[-1]))) + abs(l_mode)

    def t_at(k: int) -> float:
        return abs(math.log((n - k) / (k + 1)) + lpq)

    varying = 0.0
    for steps, k_a, k_b in ((hi - anchor, anchor, hi - 1), (anchor - lo, lo, anchor - 1)):
        if steps > 0:
            t_max = max(t_at(k_a), t_at(k_b))
            varying = max(varying, steps * (4 * U * (t_max + 2 * abs(lpq) + 2) + U * top) * 1.01)
    return lo, l_mode + rel, log_tail, (varying, common + 4.04 * U * n)


def pair_log_bracket(n_others: int, ones: int, eps0: float, eps: float) -> tuple[float, float]:
    """(log lower, log upper) of δ(P‖Q) for the data set with ``ones`` ones among ``n_others`` other users,
    target 0 under P and 1 under Q (module docstring); -inf where δ = 0."""
    if eps >= eps0:
        return -math.inf, -math.inf  # every loss is in [-eps0, eps0]
    lp = -log1pexp(eps0)  # log p
    lq = -log1pexp(-eps0)  # log q
    log_a = lp + eps + log_expm1(eps0 - eps)  # A = q - e^eps p = p e^eps (e^(eps0-eps) - 1)
    log_b = lp + log_expm1(eps0 + eps)  # B = e^eps q - p = p (e^(eps0+eps) - 1)
    theta = log_a - log_b  # <= 0
    q1, q1c = _sigmoid_pair(eps0 + theta)  # tilted success probability of a one-holder's report
    p1, p1c = _sigmoid_pair(theta - eps0)  # ... of a zero-holder's report
    zeros = n_others - ones
    # log c = ones log(p + q e^theta) + zeros log(q + p e^theta)
    log_c = ones * (lp + log1pexp(eps0 + theta)) + zeros * (lq + log1pexp(theta - eps0))
    o1, l1, t1, e1 = _log_binom_window(ones, q1, q1c, _LOG_WINDOW)
    o2, l2, t2, e2 = _log_binom_window(zeros, p1, p1c, _LOG_WINDOW)
    m1, m2 = float(l1.max()), float(l2.max())
    b1 = np.exp(l1 - m1)
    b2 = np.exp(l2 - m2)
    hs = np.convolve(b1, b2)  # h(o1 + o2 + i) e^-(m1 + m2), direct summation of non-negative terms
    # relative error of hs entry by entry: the log-PMFs' varying error bounds, exp/subtraction, summation;
    # their common errors scale h (hence δ) by one factor and go into the final slack
    err_log = e1[0] + e2[0]
    rho = math.expm1(err_log + 8 * U) + (min(b1.size, b2.size) + 4) * U * 1.01
    prev = np.concatenate(([0.0], hs[:-1]))
    lo_d = hs * (1.0 - rho) - prev * (1.0 + rho)
    hi_d = hs * (1.0 + rho) - prev * (1.0 - rho)
    y = o1 + o2 + np.arange(hs.size)  # outcome y of the others' count (the term pairs f(y) and f(y-1))
    log_w = -theta * y  # weight e^(-theta y)
    # the last y of the true positive set is the mode of h (log-concave), within 1 of its mean (Darroch)
    mean_t = ones * q1 + zeros * p1
    y_mode = math.floor(mean_t) + 1
    log_tail = float(np.logaddexp(t1, t2))  # dropped mass of h (<= sum of the two windows' tails)
    with np.errstate(divide="ignore"):
        lw_lo = np.where(lo_d > 0, np.log(np.where(lo_d > 0, lo_d, 1.0)), -np.inf) + log_w
        lw_hi = np.where(hi_d > 0, np.log(np.where(hi_d > 0, hi_d, 1.0)), -np.inf) + log_w
    s_lo = log_sum(lw_lo)
    s_hi = log_sum(lw_hi)
    base = log_a + log_c + m1 + m2
    # log-domain round-off: the log-sum-exp's summation (one ulp per term) and a few ulps of each constant
    slack = (REL_SLACK + e1[1] + e2[1] + (hs.size + 8) * U * 1.01
             + 8 * U * (abs(log_a) + abs(log_c) + abs(m1) + abs(m2) + abs(theta) * (n_others + 2)))
    log_tail_w = log_tail - theta * y_mode + log_a + log_c  # dropped mass at its largest weight, times A c
    upper = base + s_hi + slack
    upper = float(np.logaddexp(upper, log_tail_w + slack))
    lower = base + s_lo - slack
    if log_tail_w > -math.inf and lower > -math.inf:
        gap = log_tail_w + slack - lower
        lower = lower + math.log1p(-math.exp(gap)) if gap < 0 else -math.inf
    return lower, upper


def pair_bracket(n_others: int, ones: int, eps0: float, eps: float) -> tuple[float, float]:
    """(lower, upper) of δ(P‖Q) for one data set (:func:`pair_log_bracket`), as floats rounded outwards."""
    lo, hi = pair_log_bracket(n_others, ones, eps0, eps)
    return _prob_down(lo), _prob_up(hi)


def _prob_down(x: float) -> float:
    """A probability's lower end from its log: :func:`~.logspace.exp_down`, the log clipped at 0 first."""
    return exp_down(min(x, 0.0))


def _prob_up(x: float) -> float:
    """A probability's upper end from its log: :func:`~.logspace.exp_up` capped at 1."""
    return min(1.0, exp_up(min(x, 0.0)))


# ---------------------------------------------------------------------------------------------------
# one data set in O(window): the partial sum from two weighted tail sums (population scale)


#: log of the Chernoff budget of each tilted binomial's window in :func:`pair_log_bracket_sums` (dropped mass
#: e^-36 ~ 2.3e-16 of h's total, added to the upper end and subtracted from the lower one: ~1e-10 of δ at n = 1e9,
#: where the tilted sum S is ~1/(σ (τσ)²) with σ ~ 1e4 and τσ ~ 6)
POP_LOG_WINDOW = -36.0
#: log of the smallest term the linear-space weighted cumulative sum keeps above underflow (else the log-space
#: accumulation: :func:`_log_weighted_cumsum`)
_LOG_FLOOR = -700.0


def _log_weighted_cumsum(z: np.ndarray) -> tuple[np.ndarray, float]:
    """(log C, absolute log error bound) with C(t) = sum_{i <= t} e^{z_i}: a cumulative sum of non-negative terms
    in linear space after the shift by max z (relative error (t + 2) u per entry, exp's ulp included) where no term
    falls below e^-700; otherwise ``np.logaddexp.accumulate`` (each step's rounding ~ u |partial| + 3u)."""
    zmax = float(z.max())
    d = z - zmax
    if float(d.min()) >= _LOG_FLOOR:
        c = np.cumsum(np.exp(d))
        with np.errstate(divide="ignore"):
            out = np.log(c) + zmax
        err = (z.size + 4) * U * 1.01 + U * (abs(zmax) + 750.0) * 2
        return out, err
    out = np.logaddexp.accumulate(z)
    err = z.size * U * 1.01 * (float(np.max(np.abs(out))) + 3.0) + U * abs(zmax)
    return out, err


def _log_dot(x: np.ndarray, y: np.ndarray) -> float:
    """log sum_i e^{x_i + y_i} by a shifted linear sum of non-negative terms (-inf for an empty sum)."""
    if x.size == 0:
        return -math.inf
    v = x + y
    vmax = float(v.max())
    if vmax == -math.inf:
        return -math.inf
    return math.log(float(np.exp(v - vmax).sum())) + vmax


def pair_log_bracket_sums(n_others: int, ones: int, eps0: float, eps: float,
                          log_budget: float = POP_LOG_WINDOW) -> tuple[float, float]:
    """(log lower, log upper) of δ(P‖Q) for one data set, as :func:`pair_log_bracket`, in O(window) instead of
    O(window²): no convolution (docs/theory.md#exact-rr2-population).

    With the tilt of :func:`pair_log_bracket` (τ = −θ ≥ 0, h = h1 * h2 the tilted law of the others' count),
    δ = A c e^{τ y_r} S(y*) where, for any y0 <= y_r,

        S(y0) = Σ_{y<=y0} e^{−τ(y_r−y)} (h(y) − h(y−1)) = e^{−τ(y_r−y0)} h(y0) − (e^τ − 1) K(y0 − 1),
        K(y) = Σ_{j<=y} e^{−τ(y_r−j)} h(j) = e^{−τ(y_r−y)} Σ_k h1(k) G2(y − k),
        G2(t) = Σ_{i<=t} e^{−τ(t−i)} h2(i)   (a weighted cumulative sum of the second window),

    and y* is the largest mode of h, which (Darroch) is ⌊μ⌋ or ⌊μ⌋ + 1 for h's mean μ.  S is evaluated at
    y0 = ⌊μ⌋ − 1 .. ⌊μ⌋ + 2 (= y_r): δ = max over y0 of S(y0) (the partial sums of the positive terms grow up to
    y* and fall after it), so the largest certified upper end over the four is an upper end of δ and every
    certified lower end is a lower end.  Each h(y0) is one dot product of the two windows, K one dot product with
    the cumulative sum G2: sums of non-negative terms, relative round-off <= (terms + few) u; the one subtraction
    (cancelling ~z² ≈ 2 log(1/δ) digits' worth) is taken with both operands moved to the safe side.  The windows'
    dropped mass T changes S by at most T e^{−τ(y_r−y0)} <= T either way; the float θ's error η (it differs from
    log(A/B)) enters as e^{τ±η} − 1; log-PMF errors, log c's rounding and the constants' as in
    :func:`pair_log_bracket`."""
    if eps >= eps0:
        return -math.inf, -math.inf
    lp = -log1pexp(eps0)
    lq = -log1pexp(-eps0)
    lx_a = log_expm1(eps0 - eps)
    lx_b = log_expm1(eps0 + eps)
    log_a = lp + eps + lx_a
    log_b = lp + lx_b
    theta = log_a - log_b
    tau = -theta
    # |θ − log(A/B)|: a few ulps of each part (and log_expm1's condition 1/(e^x - 1) * x at the float x)
    eta = 8 * U * (2 * abs(lp) + eps + abs(lx_a) + abs(lx_b) + 2.0
                   + eps0 / max(-math.expm1(-(eps0 - eps)), 1e-300) + eps0)
    q1, q1c = _sigmoid_pair(eps0 + theta)
    p1, p1c = _sigmoid_pair(theta - eps0)
    zeros = n_others - ones
    c1 = lp + log1pexp(eps0 + theta)
    c2 = lq + log1pexp(theta - eps0)
    log_c = ones * c1 + zeros * c2
    # rounding of log c: a few ulps of each part of each factor, times its multiplicity
    err_c = 8 * U * (ones * (abs(lp) + abs(eps0 + theta) + 1.0) + zeros * (abs(lq) + abs(theta - eps0) + 1.0)
                     + abs(log_c))
    o1, l1, t1, e1 = _log_binom_window_fast(ones, q1, q1c, log_budget)
    o2, l2, t2, e2 = _log_binom_window_fast(zeros, p1, p1c, log_budget)
    m1, m2 = float(l1.max()), float(l2.max())
    r1 = l1 - m1  # log of h1 / e^m1 on its window (<= 0)
    r2 = l2 - m2
    w1, w2 = r1.size, r2.size
    mu = ones * q1 + zeros * p1
    yb = math.floor(mu) - 1  # candidates y0 = yb .. yb + 3 for the largest mode (Darroch: floor(mu) or +1)
    yr = yb + 3
    # K(yb - 1) / e^(m1+m2): G2 on window 2 (index t = i - o2), then the dot product over window 1
    ii = np.arange(w2, dtype=float)
    ii *= tau
    ii += r2
    log_g2, err_g2 = _log_weighted_cumsum(ii)  # log of sum_{i<=t} e^{r2(i) + tau i}
    ii -= r2
    log_g2 -= ii  # log G2(o2 + t)
    del ii
    g2_abs = float(max(abs(log_g2[0]), abs(log_g2[-1]), abs(float(log_g2.max())))) if w2 else 0.0
    d = (yb - 1) - o1 - o2  # K(y) needs G2(y - k) for k = o1 + a: index t = d - a (>= 0), capped at w2 - 1
    a_top = min(w1 - 1, d)  # a <= d
    if a_top >= 0:
        a_cap = max(0, d - (w2 - 1))  # a < a_cap: t beyond window 2, G2(t) = e^{-tau (t - last)} G2(last)
        a_cap = min(a_cap, a_top + 1)
        lg = np.empty(a_top + 1)
        lg[a_cap:] = log_g2[d - a_top:d - a_cap + 1][::-1] if a_cap <= a_top else lg[a_cap:]
        if a_cap > 0:
            lg[:a_cap] = log_g2[-1] - tau * (d - np.arange(a_cap) - (w2 - 1))
        log_k0 = _log_dot(r1[:a_top + 1], lg) - tau * (yr - (yb - 1))
    else:
        log_k0 = -math.inf
    # h(y) / e^(m1+m2) at the candidates, each one dot product of the windows' scaled PMFs over their overlap
    b1 = np.exp(r1)
    b2 = np.exp(r2)
    log_h = []
    for y in range(yb, yr + 1):
        dd = y - o1 - o2
        a_lo, a_hi = max(0, dd - (w2 - 1)), min(w1 - 1, dd)
        if a_hi < a_lo:
            log_h.append(-math.inf)
            continue
        hv = float((b1[a_lo:a_hi + 1] * b2[dd - a_hi:dd - a_lo + 1][::-1]).sum())  # no BLAS threads
        log_h.append(math.log(hv) if hv > 0 else -math.inf)
    # error bounds (absolute, in log): the windows' varying log-PMF errors, the shift / exp / weights' rounding and
    # the summations (each a sum of at most max(w1, w2) + 4 non-negative terms)
    base = e1[0] + e2[0] + 4 * U * (abs(log_budget) + 10.0) * 2
    lam_h = base + (min(w1, w2) + 6) * U * 1.01 + 4 * U * (tau * 4 + 1.0)
    lam_k = (base + err_g2 + (w1 + 6) * U * 1.01
             + 8 * U * (tau * (w1 + w2 + yr - yb + 8)
                        + g2_abs + abs(log_k0 if log_k0 > -math.inf else 0.0) + 1.0))
    # coefficient e^tau - 1 at tau +- eta
    lc_lo = log_expm1(max(tau - eta, 1e-300)) - 4 * U * (1.0 + tau)
    lc_hi = log_expm1(tau + eta) + 4 * U * (1.0 + tau)
    log_t = float(np.logaddexp(t1, t2)) - m1 - m2  # dropped mass, in units of e^(m1+m2)
    lower, upper = -math.inf, -math.inf
    log_k, err_k = log_k0, lam_k  # K(y0 - 1) and its absolute log error
    for j, y0 in enumerate(range(yb, yr + 1)):
        lt1 = log_h[j] - tau * (yr - y0)
        up = _log_diff(lt1 + lam_h, lc_lo + log_k - err_k)
        lo = _log_diff(lt1 - lam_h, lc_hi + log_k + err_k)
        upper = max(upper, float(np.logaddexp(up, log_t)) if log_t > -math.inf else up)
        lower = max(lower, _log_diff(lo, log_t + 4 * U) if log_t > -math.inf else lo)
        log_k = float(np.logaddexp(log_k, lt1))  # K(y0) = K(y0 - 1) + e^{-tau (yr - y0)} h(y0)
        err_k = max(err_k, lam_h) + 4 * U * ((abs(log_k) if log_k > -math.inf else 0.0) + 2.0)
    head = log_a + log_c + m1 + m2 + tau * yr
    slack = (REL_SLACK + e1[1] + e2[1] + err_c
             + 8 * U * (abs(lp) + eps + abs(lx_a) + abs(log_c) + abs(m1) + abs(m2) + tau * abs(yr) + abs(head)))
    if upper > -math.inf:
        upper = head + upper + slack
    if lower > -math.inf:
        lower = head + lower - slack
    return lower, upper


def _log_diff(x: float, y: float) -> float:
    """log(e^x − e^y) for x > y, −inf otherwise (a lower end's difference, or an upper end's that vanished)."""
    if x == -math.inf or y >= x:
        return -math.inf
    if y == -math.inf:
        return x
    return x + math.log1p(-math.exp(y - x))


# ---------------------------------------------------------------------------------------------------
# every data set: branch and bound over m


@dataclass
class _Search:
    lower: float  # log of the best certified lower end found
    upper: float  # log of the certified upper end over every m
    m: int
    evaluations: int
    resolved: bool  # True when the search stopped on its tolerance (not on its budget)
    #: the final partition: (a, b, log upper) — a == b for an evaluated m, else a gap bounded by the data set
    #: of n − (b − a) users with a ones among the others (valid at any eps: δ decreases in eps)
    pieces: tuple = ()


def _search(n: int, eps0: float, eps: float, *, rtol: float = SEARCH_RTOL, stop_below: float | None = None,
            stop_above: float | None = None, max_evals: int = MAX_EVALS, seeds=()) -> _Search:
    """Branch and bound over m = 0..n−1 (module docstring) in log space.

    Stops when the upper end over every m is within ``rtol`` (relative) of the best lower end, or — for
    a decision — as soon as the global upper end is <= ``stop_below`` or some lower end is > ``stop_above``
    (both logs)."""
    N = n - 1
    evals = 0
    exact: dict[int, tuple[float, float]] = {}

    def ev(m: int) -> tuple[float, float]:
        nonlocal evals
        if m not in exact:
            exact[m] = pair_log_bracket(N, m, eps0, eps)
            evals += 1
        return exact[m]

    if N + 1 <= 48:
        grid = list(range(N + 1))
    else:
        grid = sorted(set(np.linspace(0, N, 33).round().astype(int).tolist()) | {int(s) for s in seeds if 0 <= s <= N})
    for m in grid:
        ev(m)
    heap: list[tuple[float, int, int]] = []  # (-log bound, a, b) for gaps with interior points

    def push(a: int, b: int) -> None:
        if b - a >= 2:
            ub = pair_log_bracket(N - (b - a), a, eps0, eps)[1]
            nonlocal evals
            evals += 1
            heapq.heappush(heap, (-ub, a, b))

    for a, b in zip(grid[:-1], grid[1:]):
        push(a, b)
    log_rtol = math.log1p(rtol)
    while True:
        best_m = max(exact, key=lambda k: exact[k][0])
        best_lo = exact[best_m][0]
        top_exact = max(v[1] for v in exact.values())
        gap_ub = -heap[0][0] if heap else -math.inf
        ub = max(top_exact, gap_ub)
        if stop_above is not None and best_lo > stop_above:
            break
        if stop_below is not None and ub <= stop_below:
            break
        if ub <= best_lo + log_rtol or ub == -math.inf or gap_ub <= best_lo + log_rtol:
            break
        if evals >= max_evals:
            break
        _, a, b = heapq.heappop(heap)
        mid = (a + b) // 2
        ev(mid)
        push(a, mid)
        push(mid, b)
    best_m = max(exact, key=lambda k: exact[k][0])
    gap_ub = -heap[0][0] if heap else -math.inf
    ub = max(max(v[1] for v in exact.values()), gap_ub)
    pieces = tuple((m, m, v[1]) for m, v in exact.items()) + tuple((a, b, -nb) for nb, a, b in heap)
    return _Search(exact[best_m][0], ub, best_m, evals, evals < max_evals, pieces)


# ---------------------------------------------------------------------------------------------------
# every data set at population scale: a cover of m = 0..n-1 by pieces, each bounded by one smaller data set


#: relative width in eps asked of the population path's ε(δ) (docs/theory.md#exact-rr2-population)
POP_EPS_RTOL = 1e-3
#: relative width in delta asked of its δ(ε) (about POP_EPS_RTOL in eps at δ ~ 1e-9: d log δ / d log ε ~ 20-40)
POP_DELTA_RTOL = 2e-2
#: share of the width asked that the cover's ε may use above the candidates' root (the rest: the root's own width)
POP_AIM = 0.95
#: largest number of one-data-set evaluations one cover may spend
MAX_POP_EVALS = 6000
#: share of the slack the first cover's pieces aim to use (the slack is a little below linear in the piece's length:
#: at n = 1e7 every piece of the share 1.0 was below the target, at 1.05 some were cut)
_PIECE_SHARE = 0.97


@dataclass(frozen=True)
class Cover:
    """The outcome of :func:`cover`: ``ok`` when every piece's certified upper end is <= the target; ``pieces``
    the final partition (the certified part of it where the cover failed) as (a, L, log upper) — m = a..a+L
    bounded by the data set of n − L users with a ones among the others; ``upper`` the largest log upper end;
    ``point`` an m whose own certified upper end exceeds the target (None if none); ``evaluations`` the
    one-data-set evaluations spent."""

    ok: bool
    upper: float
    pieces: tuple
    evaluations: int
    point: int | None = None


def piece_log_upper(n: int, eps0: float, eps: float, a: int, length: int) -> float:
    """log of a certified upper end of δ(P_m‖Q_m) for every m in [a, a + length] (docs/theory.md#exact-rr2): the
    data set of n − length users with a ones among the others, where revealing the other ``length`` users' reports
    (a post-processing in reverse) covers the m − a ones among them."""
    return pair_log_bracket_sums(n - 1 - length, a, eps0, eps)[1]


def cover(n: int, eps0: float, eps: float, target: float, *, max_evals: int = MAX_POP_EVALS,
          share: float = _PIECE_SHARE) -> Cover:
    """Certify δ(P_m‖Q_m) <= e^target at ``eps`` for every m = 0..n−1 (one direction suffices: module docstring),
    or find out that the cover cannot.

    The slack a piece of length L costs is about linear in L (each revealed user raises log δ by about
    |log δ|/n), so its slope s is measured once (the data sets m = 0 and m = n − 1 and a piece of length
    (n − 1)/256 at a = 0); the first partition has equal pieces of length ``share`` × (target − the larger of the
    two exact ends)/s; a piece whose upper end exceeds the target is cut in four, until every piece is below it,
    a single data set is above it (``point``), or the evaluations run out."""
    N = n - 1
    evals = 0

    def up(a: int, length: int) -> float:
        nonlocal evals
        evals += 1
        return piece_log_upper(n, eps0, eps, a, length)

    ends = {0: up(0, 0)}
    if N > 0:
        ends[N] = up(N, 0)
    for m, u in ends.items():
        if u > target:
            return Cover(False, u, tuple((k, 0, v) for k, v in ends.items()), evals, m)
    if N <= 1:
        return Cover(True, max(ends.values()), tuple((k, 0, v) for k, v in ends.items()), evals)
    margin = target - max(ends.values())
    l1 = max(1, N // 256)
    slope = (up(0, l1) - ends[0]) / l1
    length = N if slope <= 0 else int(min(N, max(0.0, share * margin / slope)))
    # pieces of equal length between the two exact ends
    inner_lo, inner_hi = 1, N - 1
    todo: list[tuple[int, int]] = []
    a = inner_lo
    while a <= inner_hi:
        b = min(inner_hi, a + length)
        todo.append((a, b - a))
        a = b + 1
    done: list[tuple[int, int, float]] = [(k, 0, v) for k, v in ends.items()]
    while todo:
        if evals + len(todo) > max_evals:
            return Cover(False, math.inf, tuple(done), evals)
        nxt: list[tuple[int, int]] = []
        for a, ln in todo:
            u = up(a, ln)
            if u <= target:
                done.append((a, ln, u))
            elif ln == 0:  # a single data set above the target: no cover at this target
                return Cover(False, u, tuple(done) + ((a, 0, u),), evals, a)
            else:
                step = (ln + 1 + 3) // 4  # four pieces of about equal length covering a..a+ln
                x = a
                while x <= a + ln:
                    y = min(a + ln, x + step - 1)
                    nxt.append((x, y - x))
                    x = y + 1
        todo = nxt
    return Cover(True, max(u for _, _, u in done), tuple(done), evals)


def population_delta_bracket(n: int, eps0: float, eps: float, *, rtol: float = POP_DELTA_RTOL) -> Bracket:
    """Certified bracket of the mechanism's δ(ε) over every data set through :func:`cover` (any n; the path of
    n > :data:`MAX_N_EXACT`): the lower end is the best certified lower end of the data sets m = 0 and n − 1
    (and any m the cover finds above its target), the upper end the cover's, at most ``1 + rtol`` times the lower
    one (or the notes say by how much more)."""
    N = n - 1
    evals = 0
    lows: dict[int, float] = {}

    def low(m: int) -> float:
        nonlocal evals
        if m not in lows:
            lows[m] = pair_log_bracket_sums(N, m, eps0, eps)[0]
            evals += 1
        return lows[m]

    for m in {0, N}:
        low(m)
    c = None
    for _ in range(8):
        best_m = max(lows, key=lambda k: lows[k])
        if lows[best_m] == -math.inf:
            break
        c = cover(n, eps0, eps, lows[best_m] + math.log1p(rtol))
        evals += c.evaluations
        if c.ok or c.point is None or c.point in lows:
            break
        low(c.point)
    best_m = max(lows, key=lambda k: lows[k])
    lo = lows[best_m]
    if c is None or not c.ok:
        # the cover at the tolerance failed (a single data set above it or the budget): a full cover at a target
        # doubled until it succeeds gives a certified (wider) upper end
        base = lo if lo > -math.inf else pair_log_bracket_sums(N, 0, eps0, eps)[1]
        for k in range(1, 40):
            c = cover(n, eps0, eps, base + math.log1p(rtol * 2.0 ** k) if base > -math.inf else -700.0 + 20 * k)
            evals += c.evaluations
            if c.ok:
                break
    upper = c.upper if c is not None and c.ok else 0.0
    notes = [f"exact over every neighbouring pair of data sets at population scale "
             f"(docs/theory.md#exact-rr2-population): every m = 0..{N} covered by {len(c.pieces)} pieces, each "
             f"bounded by one smaller data set; worst m found = {best_m}; {evals} evaluations"]
    if lo == -math.inf or upper > lo + math.log1p(rtol) * 1.000001:
        notes.append(f"the interval is wider than its tolerance {rtol:g} (relative width {_rel_width(lo, upper):.2g})")
    return Bracket(_prob_down(lo), _prob_up(upper) if c is not None and c.ok else 1.0, best_m, tuple(notes), evals)


def _new_candidates(N: int, cands, c: Cover) -> set[int]:
    """Data sets to join the candidates of :func:`population_eps_bracket` after a failed cover ``c``: the single
    data set whose certified upper end exceeds δ (``c.point``), else — the cover failed on its budget — the middle
    m = ⌊N/2⌋, ⌈N/2⌉ (the worst data set at ε near 0).  Any data set's certified lower end is a valid lower end of the
    mechanism's ε, and the candidates' root then lies where their upper ends are <= δ too."""
    if c.point is not None and c.point not in cands:
        return {c.point}
    return {N // 2, N - N // 2} - set(cands)


def population_eps_bracket(n: int, eps0: float, delta: float, *, rtol: float = POP_EPS_RTOL) -> Bracket:
    """Certified bracket of the mechanism's ε(δ) over every data set through :func:`cover` (any n; the path of
    n > :data:`MAX_N_EXACT`), of relative width <= ``rtol``.

    The lower end is the root of the candidate data sets (m = 0, n − 1 and any m the cover finds above δ) with
    relative width min(1e-6, rtol/10) (:func:`_root` on :func:`pair_log_bracket_sums`); the upper end ε_u is that
    root's upper end raised to ε_lower / (1 − :data:`POP_AIM` rtol), where :func:`cover` certifies δ(ε_u) <= δ for
    every data set (each piece's bound is a δ of a real pair, non-increasing in ε).  Where the cover fails on a
    single data set above δ, that data set joins the candidates; where it fails on its budget, ε_u is raised.
    The upper end 0 is returned only where the cover certifies δ(0) <= δ for every m (at ε = 0 the worst data set
    is near the middle m, not m = 0 or n − 1)."""
    N = n - 1
    ld = math.log(delta)
    cands = sorted({0, N})
    evaluations = 0
    widen = 1.0
    eps_min = 0.0  # a floor on eps_u where the cover could not certify eps = 0 (its budget)
    for _ in range(24):
        lo, hi, m_lo, ev = _root(n, eps0, ld, cands, min(1e-6, 0.1 * rtol), evaluate=pair_log_bracket_sums)
        evaluations += ev
        if hi == 0.0 and eps_min == 0.0:
            # the candidates have δ(0) <= δ; at ε = 0 the worst data set is near the middle m, not an end, so the
            # upper end 0 needs the cover's certificate for every m (docs/theory.md#exact-rr2-population)
            c = cover(n, eps0, 0.0, ld)
            evaluations += c.evaluations
            if c.ok:
                notes = (f"exact over every neighbouring pair of data sets at population scale "
                         f"(docs/theory.md#exact-rr2-population): delta(0) <= delta for every data set, every "
                         f"m = 0..{N} covered by {len(c.pieces)} pieces ({evaluations} evaluations)",)
                return Bracket(0.0, 0.0, m_lo, notes, evaluations)
            new = _new_candidates(N, cands, c)
            if new:
                cands = sorted(set(cands) | new)  # data sets the candidates miss: solve again with them
                continue
            eps_min = eps0 * 2.0 ** -40  # the cover's budget at ε = 0: certify a small positive ε instead
        aim = POP_AIM * rtol * widen
        # past a relative room of 1/2 the room doubles (the candidates' root is then far below the cover's ε)
        eps_u = max(hi, lo / (1.0 - aim) if aim <= 0.5 else 2.0 * lo * (aim / 0.5), eps_min)
        if eps_u >= eps0:
            eps_u = eps0  # δ(eps0) = 0 for every data set
            c = Cover(True, -math.inf, (), 0)
        else:
            c = cover(n, eps0, eps_u, ld)
        evaluations += c.evaluations
        if c.ok:
            notes = (f"exact over every neighbouring pair of data sets at population scale "
                     f"(docs/theory.md#exact-rr2-population): worst m = {m_lo} ones among the others at the lower end "
                     f"(or {N - m_lo} in the other direction); at the upper end every m = 0..{N} is covered by "
                     f"{len(c.pieces)} pieces, each certified below delta by one smaller data set ({evaluations} "
                     f"evaluations)",)
            if lo == 0.0 or eps_u > lo * (1.0 + rtol) * 1.000001:
                notes += (f"the interval is wider than its tolerance {rtol:g} (the cover could not certify a smaller "
                          f"eps within its budget)",)
            return Bracket(lo, eps_u, m_lo, notes, evaluations)
        new = _new_candidates(N, cands, c)
        if new:
            cands = sorted(set(cands) | new)  # solve again with them
            continue
        widen *= 2.0  # the cover needs more room (budget, or a data set within its round-off of delta)
        if eps_min > 0.0:
            eps_min *= 16.0
    raise NotApplicableError(f"the population cover did not certify eps(delta={delta:g}) at n={n}, eps0={eps0:g} "
                             "within its budget; use --method tight")


# ---------------------------------------------------------------------------------------------------
# public API


#: largest n of the original branch and bound (exact evaluations by direct convolution; ~1 s at 10⁵, up to a minute at
#: 10⁶ at small ε0 and ε); its numbers are kept where it runs.  Above, single use takes the population path
#: (:func:`population_eps_bracket`, :func:`population_delta_bracket`: intervals of relative width 1e-3 in ε)
MAX_N_EXACT = EXACT_RR2_BRANCH_MAX_N
#: largest n of the population path (single use; ~30 s per value at 10⁹ on 2 shared cores, growing like √n)
MAX_N_POPULATION = 10**9
#: largest n at which rr2's default method is ``exact`` (about a second); ``tight`` above
DEFAULT_EXACT_MAX_N = 10**5


#: the refusal of a composed bracket here: it has one home, the exact engine behind ``account`` (whose upper end is the
#: tight method's answer, so that the default is never looser than a method it could have used; issue 28)
COMPOSED_HERE = ("compositions > 1: the composed bracket is computed by account(RR2(n, eps0), method='exact', "
                 "compositions=k) (shufflesim.accounting.exact.exact_engine), not by the single-use brackets")


def check_exact(n, eps0, compositions, values: int = 1):
    """(n, eps0, compositions) checked for the exact worst case: n <= :data:`MAX_N_POPULATION` single use and
    n <= :data:`MAX_N_EXACT` composed (NotApplicableError beyond, naming the tight method), eps0 finite in (0, 700],
    compositions >= 1 (ParameterError otherwise); above :data:`MAX_N_EXACT`, the population path's estimate for
    ``values`` values is checked against the time and memory limits (:func:`check_population_cost`)."""
    n = check_int("n", n, minimum=1)
    compositions = check_int("compositions", compositions, minimum=1)
    if n > MAX_N_POPULATION:
        raise NotApplicableError(f"the exact worst case over data sets needs n <= {MAX_N_POPULATION:.0e} (about "
                                 f"30 s a value there); got n={n}: use --method tight, which brackets it at any n")
    if n > MAX_N_EXACT and compositions > 1:
        raise NotApplicableError(f"the exact bracket of a composition needs n <= {MAX_N_EXACT:.0e} (single use reaches "
                                 f"{MAX_N_POPULATION:.0e}); got n={n} with {compositions} compositions: use "
                                 "--method tight, which brackets it at any n")
    eps0 = check_positive("eps0", eps0)
    if not math.isfinite(eps0) or eps0 > 700.0:
        raise ParameterError(f"eps0 must be finite and <= 700 for the exact computation; got {eps0}")
    if n > MAX_N_EXACT:
        check_population_cost(n, values)
    return n, eps0, compositions


def check_population_cost(n: int, values: int = 1):
    """Refuse (ResourceError, one line with the estimate, the knob and the faster method) a population-path run whose
    estimate (:func:`~shufflesim.accounting.engines.estimates.exact_binary_rr_estimate`) exceeds the memory or time
    limit: the accountant's policy (:func:`shufflesim.core.resources.check_memory` / ``check_time``, as
    :func:`~shufflesim.accounting.engines.estimates.check_estimate`; ``account`` has no ``--yes``, so no time limit
    unless SHUFFLESIM_TIME_LIMIT sets one).  Returns the estimate."""
    from shufflesim.core.resources import check_memory, check_time

    est = exact_binary_rr_estimate(n, values)
    what = f"the exact worst case of shuffled binary RR over every data set (n={n}, {values} value(s))"
    advice = "--method tight brackets it in seconds; SHUFFLESIM_MEMORY_LIMIT / SHUFFLESIM_TIME_LIMIT set the limits"
    check_memory(est.bytes, what, advice)
    check_time(est.seconds, what, advice)
    return est


def delta_bracket(n: int, eps0: float, eps: float, *, compositions: int = 1, rtol: float = SEARCH_RTOL) -> Bracket:
    """Certified bracket of the mechanism's δ(ε): max over every neighbouring pair of data sets.

    Single use: exact up to round-off and the search's ``rtol`` (notes give the width).  ``compositions`` > 1 is
    refused (:data:`COMPOSED_HERE`): the composed bracket is the exact engine's."""
    n, eps0, compositions = check_exact(n, eps0, compositions)
    eps = check_real("eps", eps, low=0.0)
    if compositions > 1:
        raise ParameterError(COMPOSED_HERE)
    if eps >= eps0:
        return Bracket(0.0, 0.0, 0, ("delta(eps) = 0 for eps >= eps0: every privacy loss is in [-eps0, eps0]",))
    if n > MAX_N_EXACT:
        return _population(population_delta_bracket, n, eps0, eps)
    s = _search(n, eps0, eps, rtol=rtol)
    notes = [f"exact over every neighbouring pair of data sets (all m = 0..{n - 1} ones among the others, both "
             f"directions); worst m = {s.m} (or, in the other direction, {n - 1 - s.m}); {s.evaluations} "
             "evaluations of the branch and bound"]
    if not s.resolved:
        notes.append("the search stopped on its evaluation budget: the interval is certified but wider than "
                     f"its tolerance (relative width {_rel_width(s.lower, s.upper):.2g})")
    return Bracket(_prob_down(s.lower), _prob_up(s.upper), s.m, tuple(notes), s.evaluations)


def _population(fn, n: int, eps0: float, value: float) -> Bracket:
    """``fn(n, eps0, value)`` (a population-path bracket) with progress and an ETA on stderr past 5 s."""
    from shufflesim.core.progress import stage

    with stage(f"exact binary RR over every data set at n={n} (population cover)",
               exact_binary_rr_estimate(n).seconds):
        return fn(n, eps0, value)


def _rel_width(lo: float, hi: float) -> float:
    if lo == -math.inf:
        return math.inf
    return math.expm1(hi - lo)


def eps_bracket(n: int, eps0: float, delta: float, *, compositions: int = 1, rtol: float = 1e-9) -> Bracket:
    """Certified bracket of the mechanism's ε(δ), the smallest ε with δ(ε) <= δ over every data set.

    ``lower``: an ε at which some data set's certified δ exceeds ``delta``; ``upper``: an ε at which the
    branch and bound certifies δ <= ``delta`` for every data set.  Their relative gap is ~``rtol``."""
    n, eps0, compositions = check_exact(n, eps0, compositions)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    if compositions > 1:
        raise ParameterError(COMPOSED_HERE)
    if n > MAX_N_EXACT:
        return _population(population_eps_bracket, n, eps0, delta)
    ld = math.log(delta)
    cands = {0, n - 1}
    evaluations = 0
    a, b, m_lo, ev = _root(n, eps0, ld, sorted(cands), 1e-3)
    evaluations += ev
    # a rough search near the answer finds the worst data set before the precise root and the decision
    s = _search(n, eps0, b, rtol=1e-4, max_evals=600, seeds=cands)
    evaluations += s.evaluations
    cands.add(s.m)
    for _ in range(8):
        lo, hi, m_lo, ev = _root(n, eps0, ld, sorted(cands), rtol)
        evaluations += ev
        # decide at hi: is every data set's delta <= delta?
        s = _search(n, eps0, hi, rtol=0.0, stop_below=ld, stop_above=ld, seeds=cands)
        evaluations += s.evaluations
        if s.upper <= ld:
            notes = (f"exact over every neighbouring pair of data sets; worst m = {m_lo} ones among the others at "
                     f"the lower end (or {n - 1 - m_lo} in the other direction); the branch and bound certified "
                     f"delta <= {delta:.3g} for every m at the upper end ({evaluations} evaluations)",)
            return Bracket(lo, hi, m_lo, notes, evaluations)
        if s.lower > ld and s.m not in cands:
            cands.add(s.m)  # a worse data set than the candidates: solve again with it
            continue
        break
    # the search stopped on its budget: raise the upper end until every piece of its partition whose bound
    # exceeds delta is certified below it (the other pieces stay below at larger eps: δ decreases in eps)
    N = n - 1
    viol = [(a, b) for a, b, up in s.pieces if up > ld]

    def worst_up(e: float) -> float:
        nonlocal evaluations
        evaluations += len(viol)
        return max(pair_log_bracket(N - (b - a), a, eps0, e)[1] for a, b in viol)

    hi = calibrate(worst_up, ld, hi, eps0, increasing=False, xtol=0.0, rtol=rtol).x
    notes = (f"worst m = {m_lo} ones among the others at the lower end; the branch and bound over m stopped on its "
             f"budget of {MAX_EVALS} evaluations, so the upper end is the smallest eps at which every piece of its "
             f"partition is certified below delta: a bracket of relative width {(hi - lo) / hi:.2g} "
             f"({evaluations} evaluations)",)
    return Bracket(lo, hi, m_lo, notes, evaluations)


def _root(n: int, eps0: float, ld: float, cands, rtol: float, evaluate=None):
    """ε(δ) for the data sets ``cands`` (log δ = ``ld``): (eps_lo, eps_hi, m at eps_lo, evaluations) with some
    candidate's certified lower δ > δ at eps_lo (or eps_lo = 0) and every candidate's certified upper δ <= δ at
    eps_hi, both *evaluated*, by the project's inverter for curves known as certified brackets
    (:func:`~shufflesim.accounting.numerics.invert.bracket_illinois`) on the log of the candidates' largest certified
    ends, so eps_hi − eps_lo is ~``rtol`` eps_hi (plus the ends' round-off)."""
    N = n - 1
    seen: dict[float, tuple[float, float, int]] = {}

    def at(c: float) -> tuple[float, float, int]:
        """(largest log lower, largest log upper, the m of the largest lower) over the candidates at ε = c."""
        if c not in seen:
            vals = [(evaluate or pair_log_bracket)(N, m, eps0, c) for m in cands]
            i = max(range(len(cands)), key=lambda j: vals[j][0])
            seen[c] = (vals[i][0], max(v[1] for v in vals), cands[i])
        return seen[c]

    def evaluations() -> int:
        return len(seen) * len(cands)

    lo0, up0, m0 = at(0.0)
    if up0 <= ld:
        return 0.0, 0.0, m0, evaluations()
    # δ(eps0) = 0 <= δ: the root lies in (0, eps0]; the one inverter's search for curves known as certified brackets
    a, b, m_a = bracket_illinois(at, ld, 0.0, eps0, lo0, m0, rtol=rtol)
    return a, b, m_a, evaluations()


# ---------------------------------------------------------------------------------------------------
# compositions


def data_set_pair(n: int, eps0: float, ones: int):
    """The exact pair (P_m, Q_m) of one data set as a PMFPair (for the PLD engine), on the Chernoff windows of
    S_m (each factor's window drops at most e^-340, so no kept product underflows; dropped mass in
    ``tail_p``/``tail_q``).  ``params["log_err"]`` bounds the absolute error of every log-probability
    (the windows' log-PMF bounds, the convolution's and the final logs' round-off); the composed lower
    ends of :func:`composed_lower_delta` account for it."""
    from shufflesim.accounting.pld.pmf_pair import PMFPair

    N = n - 1
    lp = -log1pexp(eps0)
    lq = -log1pexp(-eps0)
    p, q = math.exp(lp), math.exp(lq)
    o1, l1, t1, e1 = _log_binom_window(ones, q, p, -340.0)
    o2, l2, t2, e2 = _log_binom_window(N - ones, p, q, -340.0)
    m1, m2 = float(l1.max()), float(l2.max())
    f = np.convolve(np.exp(l1 - m1), np.exp(l2 - m2))
    with np.errstate(divide="ignore"):
        lf = np.log(f) + m1 + m2
    lf = np.concatenate(([-np.inf], lf, [-np.inf]))  # outcomes y = o1+o2-1 .. o1+o2+len
    # P(y) = q f(y) + p f(y-1) (target holds 0: reports 0 w.p. q); Q(y) = p f(y) + q f(y-1)
    log_p = np.logaddexp(lq + lf[1:], lp + lf[:-1])
    log_q = np.logaddexp(lp + lf[1:], lq + lf[:-1])
    finite = np.concatenate((log_p[np.isfinite(log_p)], log_q[np.isfinite(log_q)]))
    err = (sum(e1) + sum(e2) + 2 * BINOM_LOG_ERR + (min(l1.size, l2.size) + 8) * U * 1.01
           + 8 * U * (abs(m1) + abs(m2) + (float(np.max(np.abs(finite))) if finite.size else 0.0) + eps0))
    tail = certified_tail(float(np.logaddexp(t1, t2)))
    return PMFPair(log_p=log_p, log_q=log_q, name="rr2-data-set",
                   params={"n": n, "eps0": eps0, "m": ones, "log_err": err}, reference="docs/theory.md#exact-rr2",
                   tail_p=tail, tail_q=tail)


def lower_candidates(n: int, eps0: float, eps: float) -> list[int]:
    """The data sets whose composed δ the lower end evaluates: m = 0, m = n − 1 and the worst single-use m
    at ``eps`` (per use)."""
    s = _search(n, eps0, min(eps, eps0 * 0.999), rtol=1e-6, max_evals=400)
    return sorted({0, n - 1, s.m})


def mirror_distinct(n: int, ms) -> list[int]:
    """The data sets ``ms`` up to the mirror m <-> n − 1 − m, each as its smaller member (issue 21).

    y ↦ n − y maps (P_m, Q_m) to (Q_{n−1−m}, P_{n−1−m}) (module docstring), so the two data sets' pairs are the
    same pair with the directions swapped, and so are their k-fold compositions; the PLD engine evaluates both
    directions of a pair (delta = the max of the two), so their composed values are equal and one of each mirror
    pair suffices (e.g. "all others hold 0" / "all others hold 1": one composition instead of two)."""
    N = n - 1
    return sorted({min(int(m), N - int(m)) for m in ms})


def composed_lower_delta(n: int, eps0: float, eps: float, k: int, ms) -> tuple[float, int]:
    """(certified lower bound, m) on the δ(ε) of ``k`` uses on the same data, from the data sets ``ms`` (up to
    the mirror, :func:`mirror_distinct`): each data set's pair (:func:`data_set_pair`) composed by the PLD engine
    (both directions), its lower end corrected for the log-probabilities' error η: δ_true(ε) >= e^{-kη} δ̂(ε + 2kη)."""
    from shufflesim.accounting.engines.tight import tight_delta

    ms = mirror_distinct(n, ms)
    best, best_m = 0.0, int(ms[0])
    for m in ms:
        pair = data_set_pair(n, eps0, int(m))
        eta = pair.params["log_err"] * k
        (r,) = tight_delta(pair, [eps + 2 * eta], compositions=k)
        lo = (r.delta_lower or 0.0) * math.exp(-eta) * (1 - 1e-12)
        if lo > best:
            best, best_m = lo, int(m)
    return best, best_m


#: relative precision of a composed data-set lower end in eps (:func:`composed_lower_eps`)
LOWER_EPS_RTOL = 2.5e-4
#: from this many compositions on (issue 21: where the FFT grid costs seconds), the lower end is refined only to
#: :data:`LOWER_EPS_RTOL_LONG` (the issue's relative width), with refined grids aiming at 0.8 of the width needed
#: (Numerics.refine_aim): 1000-fold at n = 1e9, two FFTs of 3.3M + 3.5M points a direction -> one of ~1.5M; the
#: value stays a certified lower end (only how finely it is refined changes)
LONG_COMPOSITION = 64
LOWER_EPS_RTOL_LONG = 1e-3
LOWER_REFINE_AIM_LONG = 0.8


def composed_lower_eps(n: int, eps0: float, delta: float, k: int, ms) -> tuple[float, int]:
    """(certified lower bound, m) on the ε(δ) of ``k`` uses on the same data, from the data sets ``ms`` (up to the
    mirror, :func:`mirror_distinct`; ε_true(δ) >= ε̂_lower(δ e^{kη}) − 2kη, as :func:`composed_lower_delta`)."""
    from shufflesim.accounting.engines.tight import tight_epsilon

    ms = mirror_distinct(n, ms)
    best, best_m = 0.0, int(ms[0])
    for m in ms:
        pair = data_set_pair(n, eps0, int(m))
        eta = pair.params["log_err"] * k
        d = delta * math.exp(eta)
        if d >= 1.0:
            continue
        # a lower end needs no more precision than the 1e-3 relative width: the FFT grid is refined only
        # as far as eps_rtol asks (certified either way; issue 21: half the time of a 1000-fold clones question)
        if k >= LONG_COMPOSITION:
            (r,) = tight_epsilon(pair, [d], compositions=k, eps_rtol=LOWER_EPS_RTOL_LONG,
                                 refine_aim=LOWER_REFINE_AIM_LONG)
        else:
            (r,) = tight_epsilon(pair, [d], compositions=k, eps_rtol=LOWER_EPS_RTOL if k > 1 else None)
        lo = max(0.0, (r.eps_lower or 0.0) - 2 * eta)
        if lo > best:
            best, best_m = lo, int(m)
    return best, best_m


def composed_note(k: int, m: int, what: str) -> str:
    return (f"{k} compositions: lower end = the composed {what} of the data set with m = {m} ones among the others "
            "(the same data in every use: exact for that data set, so a genuine lower bound on the mechanism), "
            "upper end = Feldman-McMillan-Talwar's stronger clone pair composed by the PLD engine (a dominating "
            "pair for every data set); the mechanism's composed value is bracketed, not exact")


def data_sets_lower(n: int, eps0: float, *, eps: float | None = None, delta: float | None = None,
                    ms=None) -> tuple[float, int]:
    """A genuine single-use lower end from explicit data sets (default m = 0 and n − 1, i.e. "all others
    hold 0" in both directions): (certified lower bound on δ(ε), m) or on ε(δ)."""
    N = n - 1
    ms = sorted({0, N}) if ms is None else list(ms)
    if eps is not None:
        vals = [(pair_bracket(N, m, eps0, eps)[0], m) for m in ms]
        return max(vals)
    a, _, m_a, _ = _root(n, eps0, math.log(delta), ms, 1e-9)
    return a, m_a
