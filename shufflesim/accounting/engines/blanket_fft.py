"""Certified evaluation of a :class:`~shufflesim.accounting.pairs.blanket.SumForm` at any n (issue 30).

A sum form is δ(ε) = off(ε) + (1/n) E[(S)_+], S = Σ_{i=1}^n f(Y_i), f = u − e^ε v, Y_i i.i.d. on a few atoms
(docs/theory.md#pairs-blanket).  The blanket forms give the mechanism's upper end, the data-set forms its lower
end; this module brackets each form's δ with certified ends and solves for ε(δ).

* **Upper end (mean-preserving split).**  Every atom value f_a is split between its two neighbouring grid points
  k h and (k + 1) h with probabilities that keep its mean (rounded so that the mean is never below f_a).  Given
  the Y's the split noise has conditional mean ≥ 0, and x ↦ x_+ is convex and non-decreasing, so by Jensen
  E[(S')_+] ≥ E[(S)_+] exactly: the grid sum S' gives an upper bound with no deterministic shift; its excess is
  second order (the tilted law of S' has its log-MGF raised by at most n λ² h²/8).

* **Lower end (size-biasing; exact identity).**  For any event E = {S̃ > c} of the histogram, S̃ = Σ f̃(Y_i)
  with f̃ a deterministic grid rounding, Σ_{hist ∈ E} (P − e^ε Q) = (1/n) E[S 1{S̃ > c}] ≤ (1/n) E[S_+], and
  (1/n) E[S 1{S̃ > c}] = Σ_a f_a mass_a Pr[S̃_{n−1} > c − f̃_a] (E[H_a g(H)] = n mass_a E[g(H′ + e_a)], H′ the
  counts of n − 1 draws).  Only the (n − 1)-fold law of the grid variable is needed; every c on the grid is
  tried at once (suffix sums) and the best kept.  Valid for both kinds of form (a lower bound on the form's δ).

* **The n-fold law** is tilted at λ near the saddle point (the tilted mean of S near 0) and composed on a
  circular window with :mod:`shufflesim.accounting.pld.fft`'s error model (its module docstring, item 4; see
  :func:`_compose` for the two stages and why not :func:`~shufflesim.accounting.pld.fft.compose_grid` itself: its
  window/tail bounds use a block sketch whose widening by h is multiplied by n in the exponent, and its
  infinite-mass bookkeeping repeats the atoms n times — 800 MB at n = 1e8).  The error model is used as stated: the
  computed tilted window ĉ satisfies ||ĉ − c||_2 ≤ rho, c ≥ ỹ on the window with Σ(c − ỹ) = P̃(outside) bounded
  by the tilted Chernoff tails, and inputs within relative ``rel``.  With weights w the functional Σ w ỹ is
  bracketed by Σ w ĉ ± (rho ||w||_2 + rel Σ|w||ĉ| + γ Σ|w||ĉ| + max|w| P̃(outside)) (γ: the summation's
  rounding, (M + 10) u).

* **Small n**: :func:`~shufflesim.accounting.pairs.blanket.sum_form_delta_exact` (enumeration) where its cost is
  below :data:`EXACT_BUDGET` vectors, with the relative allowance :func:`exact_allowance` and an absolute one
  for the rounding of S (both stated there).

* **Screening** (cheap, certified): Chernoff, E[S_+] ≤ e^{n K(θ) − 1}/θ for every θ > 0 (x_+ ≤ e^{θx − 1}/θ),
  K the per-draw cumulant generating function.  A saddle-point estimate (not certified) orders the forms and
  locates ε(δ); only a few certified FFTs run.

Identical (u, v) atoms are merged first (k-RR's outputs fall into three classes), which keeps the exact
enumeration and the FFT's inputs small.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.accounting.numerics.logspace import NEG_INF, U, exp_down, exp_up
from shufflesim.accounting.pld.fft import cpow
from shufflesim.accounting.pairs.blanket import SumForm, sum_form_delta_exact
from shufflesim.errors import AccuracyError

#: exact enumeration where it visits at most this many count vectors
EXACT_BUDGET = 200_000
#: largest FFT length the certified evaluation uses (a coarser grid stays certified, only looser)
MAX_GRID = 1 << 24
#: the grid is never finer than the one whose window has this many points (time and memory at n = 1e8)
TARGET_GRID = 1 << 20
#: target relative excess of the split's upper end (sets h: n λ² h²/8 ≈ this)
GRID_ETA = 0.002
#: tilted mass left outside the window
WINDOW_TAU = 1e-14
#: the FFT's relative input error exp(x) − 1 is computed only for x below this (expm1 overflows near 709); beyond
#: it :class:`AccuracyError` (the result is not usable: the caller falls back)
REL_EXPONENT_MAX = 700.0
#: fft_upper's weights s e^{−λ s} are computed directly only for λ s ≤ this (beyond it e^{−λ s} nears the
#: subnormal range, whose relative rounding is unbounded): the far part is bounded in log space
FAR_TILT = 600.0


# ---------------------------------------------------------------------------------------------
# forms as arrays
# ---------------------------------------------------------------------------------------------

def merge_atoms(form: SumForm) -> SumForm:
    """The same form with atoms of equal (u, v) merged (their masses summed: the law of f(Y) is unchanged)."""
    key = np.stack([form.u, form.v], axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    if uniq.shape[0] == form.mass.size:
        return form
    mass = np.bincount(inv.reshape(-1), weights=form.mass, minlength=uniq.shape[0])
    return SumForm(form.n, mass, uniq[:, 0].copy(), uniq[:, 1].copy(), form.off_p, form.off_q, form.kind, form.x,
                   form.x2, form.other, dict(form.params))


def _f_bounds(form: SumForm, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """(f_lo, f_hi) bracketing the exact atom values u − e^ε v (e^ε and the products within a few ulps)."""
    e = math.exp(eps)
    f = form.u - e * form.v
    err = 8 * U * (np.abs(form.u) + e * np.abs(form.v)) + 1e-300
    return f - err, f + err


def _off_bounds(form: SumForm, eps: float) -> tuple[float, float]:
    e = math.exp(eps)
    t = form.off_p - e * form.off_q
    err = 8 * U * float(np.sum(form.off_p + e * form.off_q)) + (1e-300 if form.off_p.size else 0.0)
    s = float(np.maximum(t, 0.0).sum())
    return max(0.0, s - err), s + err


def div_up(x: float, n: float) -> float:
    """x / n rounded up: one ulp above the round-to-nearest quotient (≥ the exact quotient, also where it is
    subnormal or underflows to 0; 0 only for x = 0)."""
    return math.nextafter(x / n, math.inf) if x > 0 else x


# ---------------------------------------------------------------------------------------------
# cheap pieces: saddle point, Chernoff (certified), estimate
# ---------------------------------------------------------------------------------------------

def _log_mgf(f: np.ndarray, m: np.ndarray, th: float) -> float:
    top = float(np.max(th * f))
    return top + math.log(float(np.sum(m * np.exp(th * f - top))))


def saddle_theta(f: np.ndarray, m: np.ndarray) -> float:
    """θ ≥ 0 with K'(θ) = 0 (tilted mean 0); 0 if E f ≥ 0; inf if f ≤ 0 everywhere (S_+ = 0).
    Safeguarded Newton on the increasing K' (bracket kept), a few dozen steps at most."""
    if float(np.max(f)) <= 0:
        return math.inf
    if float(np.dot(m, f)) >= 0:
        return 0.0
    fmax = float(np.max(f))

    def moments(th):
        w = m * np.exp(th * (f - fmax))
        w = w / w.sum()
        mu = float(np.dot(w, f))
        return mu, float(np.dot(w, (f - mu) ** 2))

    lo, hi = 0.0, 1.0 / max(float(np.max(np.abs(f))), 1e-300)
    while moments(hi)[0] < 0:
        lo, hi = hi, 2 * hi
        if hi > 1e300:
            return lo
    th = 0.5 * (lo + hi)
    for _ in range(100):
        mu, var = moments(th)
        if mu < 0:
            lo = th
        else:
            hi = th
        nxt = th - mu / var if var > 0 else 0.5 * (lo + hi)
        if not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi)
        if abs(nxt - th) <= 1e-13 * th or hi - lo <= 1e-13 * hi:
            return nxt
        th = nxt
    return th


def chernoff_upper(form: SumForm, eps: float) -> float:
    """Certified upper bound on the form's δ(ε): off + e^{n K(θ) − 1}/(n θ) at θ near its best."""
    _, fh = _f_bounds(form, eps)
    off = _off_bounds(form, eps)[1]
    m = form.mass
    if float(np.max(fh)) <= 0:
        return off
    th0 = saddle_theta(fh, m)
    n = form.n
    best = math.inf
    var = float(np.dot(m, fh * fh))
    cands = [th0 + c / math.sqrt(n * max(var, 1e-300)) for c in (1.0, 0.3, 3.0)] if th0 < math.inf else []
    for th in cands:
        if not (th > 0 and math.isfinite(th)):
            continue
        K = _log_mgf(fh, m, th)
        K_up = K + 8 * U * (abs(K) + th * float(np.max(np.abs(fh))) + fh.size + 2)
        # the quotient rounded up (a round-to-nearest division could fall to 0 below a positive bound)
        best = min(best, div_up(exp_up(n * K_up * (1 + 4 * U) + 4 * U * n - 1.0 - math.log(th) + 1e-12), n))
    return min(1.0, off + best * (1 + 1e-12)) if math.isfinite(best) else 1.0


def estimate_delta(form: SumForm, eps: float) -> float:
    """Saddle-point estimate of the form's δ(ε) (not certified; locating and ordering only)."""
    from scipy.special import erfcx, ndtr

    f = form.values(eps)
    m = form.mass
    off = form.off_delta(eps)
    n = form.n
    th = saddle_theta(f, m)
    if th == math.inf:
        return off
    if th == 0.0:
        mu, sd = n * float(np.dot(m, f)), math.sqrt(n * max(float(np.dot(m, f * f) - np.dot(m, f) ** 2), 1e-300))
        z = mu / sd
        return off + (mu * ndtr(z) + sd * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)) / n
    K = _log_mgf(f, m, th)
    w = m * np.exp(th * f - float(np.max(th * f)))
    w /= w.sum()
    var = float(np.dot(w, f * f) - np.dot(w, f) ** 2)
    sd = math.sqrt(n * max(var, 1e-300))
    a = th * sd
    core = 1.0 / math.sqrt(2 * math.pi) - a * 0.5 * float(erfcx(a / math.sqrt(2)))
    core = max(core, 1e-300)
    return off + math.exp(min(n * K + math.log(sd * core), 700.0)) / n


# ---------------------------------------------------------------------------------------------
# exact small-n path
# ---------------------------------------------------------------------------------------------

def exact_cost(form: SumForm) -> float:
    """Count vectors visited by :func:`sum_form_delta_exact`: C(n + A − 1, A − 1)."""
    A = form.mass.size
    return math.exp(math.lgamma(form.n + A) - math.lgamma(form.n + 1) - math.lgamma(A))


def exact_allowance(form: SumForm) -> float:
    """Relative allowance on :func:`sum_form_delta_exact`'s value: the log-multinomial from lgamma (each within a
    few ulps of magnitude ≤ lgamma(n + 1)), its exp, and the sum of C terms — 16 u (lgamma(n + 1) + C + 10) plus
    1e-12 of margin (an allowance, not a proof about libm: stated in the report)."""
    return 1e-12 + 16 * U * (math.lgamma(form.n + 1) + exact_cost(form) + 10)


def exact_bracket(form: SumForm, eps: float) -> tuple[float, float]:
    """(lower, upper) on the form's δ(ε) from the enumeration, widened by :func:`exact_allowance` and, absolutely,
    by the rounding of S (≤ (A + 10) u Σ_i |f(Y_i)|, i.e. (A + 10) u Σ_a mass_a (|u_a| + e^ε v_a) after /n)."""
    val = sum_form_delta_exact(form, eps)
    r = exact_allowance(form)
    e = math.exp(eps)
    ab = (form.mass.size + 10) * U * float(np.dot(form.mass, np.abs(form.u) + e * np.abs(form.v))) + 1e-300
    return max(0.0, val * (1 - r) - ab), min(1.0, val * (1 + r) + ab)


# ---------------------------------------------------------------------------------------------
# the certified FFT
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Law:
    """The computed tilted n-fold law of a grid variable: ĉ on grid indices lo..lo+M−1, log normaliser Λ, tilt λ,
    and the error terms of :mod:`shufflesim.accounting.pld.fft` (rho, rel, log P̃ outside the window)."""

    c: np.ndarray
    lo: int
    h: float
    lam: float
    log_norm: float
    rho: float
    rel: float
    log_out: float


def _kgrid(vals: np.ndarray, lm: np.ndarray, t: float) -> tuple[float, float]:
    """(log Σ e^{lm + t vals}, a bound on its rounding error) for the grid variable's few atoms."""
    a = lm + t * vals
    top = float(np.max(a))
    val = top + math.log(float(np.sum(np.exp(a - top))))
    return val, 8 * U * (abs(val) + float(np.max(np.abs(a))) + vals.size + 2)


def _tail_log(vals, lm, lam, copies, a, side) -> float:
    """Certified log of P̃(S ≥ a) (side "upper") or P̃(S ≤ a) ("lower") under the λ-tilted law of ``copies``
    draws: exp(copies [K(λ ± θ) − K(λ)] ∓ θ a) at the θ that (nearly) minimises it (any θ > 0 is valid)."""
    from scipy.optimize import minimize_scalar

    sign = 1.0 if side == "upper" else -1.0
    K0, e0 = _kgrid(vals, lm, lam)
    sc = max(float(np.max(np.abs(vals))), 1e-300)

    def g(x):
        th = math.exp(x)
        return copies * (_kgrid(vals, lm, lam + sign * th)[0] - K0) - sign * th * a

    res = minimize_scalar(g, bounds=(math.log(1e-12 / sc), math.log(1e3 / sc)), method="bounded",
                          options={"xatol": 1e-6})
    th = math.exp(float(res.x))
    K1, e1 = _kgrid(vals, lm, lam + sign * th)
    val = copies * (K1 - K0 + e0 + e1) * (1 + 4 * U) - sign * th * a + 8 * U * abs(th * a) + 1e-12
    return min(0.0, val)


def _boundary(vals, lm, lam, copies, log_tau, side) -> float:
    """Loss a with the tilted tail beyond it ≤ e^{log_tau} (approximately; certified tails are recomputed)."""
    from scipy.optimize import minimize_scalar

    sign = 1.0 if side == "upper" else -1.0
    K0, _ = _kgrid(vals, lm, lam)
    sc = max(float(np.max(np.abs(vals))), 1e-300)

    def a_of(x):
        th = math.exp(x)
        return (copies * (_kgrid(vals, lm, lam + sign * th)[0] - K0) - log_tau) / th

    res = minimize_scalar(a_of, bounds=(math.log(1e-12 / sc), math.log(1e3 / sc)), method="bounded",
                          options={"xatol": 1e-6})
    return sign * float(res.fun)


#: the m-fold base law is convolved directly while its support stays below this many points
DIRECT_SPAN = 1 << 14


def _compose(uk, lm, vals, lam, copies, lo, M, n_in: int = 1):
    """The tilted ``copies``-fold law of the grid variable on the circular window [lo, lo + M): (ĉ, Λ, rho, rel).

    Two stages.  (1) The m-fold law (m a power of two, its support below :data:`DIRECT_SPAN`) and the law of the
    remainder r < m by direct convolution (np.convolve) of non-negative vectors: every entry is a sum of
    non-negative products, so it carries a *relative* error ≤ (support + 2) u per convolution on top of its
    factors'.  (2) The FFT of the folded m-fold law raised to q = copies // m (binary powering), times the FFT of
    the folded remainder, inverted: :mod:`shufflesim.accounting.pld.fft`'s error model (module docstring, item 4)
    with N' = q + 1 factors of Fourier modulus ≤ 1: ||ĉ − c||_2 ≤ rho = 1.01 [(N' + 1) eps_F + 3 N' u] (+ underflow),
    and relative input error rel = (1 + θ_0)^copies (1 + θ_c)^{log2 m + popcount} − 1, θ_0 the tilted base masses'
    rounding as in :func:`~shufflesim.accounting.pld.fft.compose_grid` and θ_c = (support + 2) u.  Stage (1) cuts
    the FFT's factor count from n to n/m (rho at n = 1e8 from ~2e-6 to ~1e-9)."""
    from scipy.fft import irfft, rfft
    from shufflesim.accounting.pld.fft import FFT_KAPPA

    lc, _ = _kgrid(vals, lm, lam)
    arg = lm + lam * vals - lc
    k0 = int(uk[0])
    base = np.zeros(int(uk[-1]) - k0 + 1)
    base[uk - k0] = np.exp(arg)
    theta0 = (4 * U * (float(np.max(np.abs(lm))) + lam * float(np.max(np.abs(vals))) + abs(lc) + 2)
              + (math.log2(uk.size + 1) + 10) * U
              + 4 * U * (n_in + 2))  # the masses' own formation (products, bincount, log): a few ulps each
    span = base.size - 1
    m = 1
    while 2 * m * span + 1 <= DIRECT_SPAN and 2 * m <= copies:
        m *= 2
    q, r = divmod(copies, m)
    # powers base^(2^i) for 2^i < m by direct convolution, the remainder's law from r's bits
    pw = base
    rem = None
    n_conv = 0
    i = 0
    while (1 << i) < m:
        if r >> i & 1:
            rem = pw if rem is None else np.convolve(rem, pw)
            n_conv += 1
        pw = np.convolve(pw, pw)
        n_conv += 1
        i += 1
    rem_start = r * k0  # the remainder's law starts at r k0, the m-fold law at m k0
    theta_c = (max(pw.size, 1) + 2) * U
    folded = np.bincount(np.mod(np.arange(pw.size) + m * k0, M), weights=pw, minlength=M)
    X = rfft(folded)
    del folded
    Y = cpow(X, q) if q > 0 else None
    if rem is not None:
        fr = np.bincount(np.mod(np.arange(rem.size) + rem_start, M), weights=rem, minlength=M)
        Z = rfft(fr)
        Y = Z if Y is None else Y * Z
    c = irfft(Y, n=M)
    c = np.roll(c, -(lo % M))
    nf = q + (1 if rem is not None else 0)
    eps_f = FFT_KAPPA * U * math.ceil(math.log2(max(M, 2)))
    rho = 1.01 * ((nf + 1) * eps_f + 3 * nf * U) + nf * (pw.size + 1) * 1e-300
    fold_u = (-(-pw.size // M) + 1) * U
    expo = copies * math.log1p(theta0) + (n_conv + 2) * math.log1p(theta_c) + nf * fold_u
    if not expo < REL_EXPONENT_MAX:  # inputs' relative error (1 + θ_0)^copies of order 1 or more: not usable
        raise AccuracyError(f"the blanket FFT's relative input error exp({expo:.3g}) - 1 is too large (tilt "
                            f"{lam:.3g} times atom values up to {float(np.max(np.abs(vals))):.3g})")
    rel = math.expm1(expo) * 1.01 + 1e-12
    return c, copies * lc, rho, rel


def _grid_law(k: np.ndarray, mass: np.ndarray, h: float, copies: int, lam: float) -> Law:
    """Compose ``copies`` draws of the grid variable (indices k with probabilities mass) at tilt lam.

    The window and the tails outside it use the grid variable's exact log-MGF (few atoms) rather than the PLD
    module's block sketch, whose widening by h is multiplied by n in the exponent (useless at n = 1e8)."""
    from scipy.fft import next_fast_len

    ok = mass > 0
    k, mass = k[ok], mass[ok]
    uk, inv = np.unique(k, return_inverse=True)
    mm = np.bincount(inv.reshape(-1), weights=mass)
    vals = uk * h
    lm = np.log(mm)
    kmin, kmax = copies * int(uk[0]), copies * int(uk[-1])
    full = kmax - kmin + 1
    log_tau = math.log(WINDOW_TAU / 2)
    hi_a = _boundary(vals, lm, lam, copies, log_tau, "upper")
    lo_a = _boundary(vals, lm, lam, copies, log_tau, "lower")
    lo = max(kmin, int(math.floor(lo_a / h)) - 2)
    hi = min(kmax, int(math.ceil(hi_a / h)) + 2)
    width = max(hi - lo + 1, 1)
    if full <= 2 * width or full <= 4096:
        lo, width = kmin, full
    M = next_fast_len(max(width, 64), real=True)
    if M > MAX_GRID:
        raise AccuracyError(f"the blanket sum form needs an FFT of {M} points (> {MAX_GRID}) at h = {h:.3g}")
    c, log_norm, rho, rel = _compose(uk, lm, vals, lam, copies, lo, M, int(k.size))
    above = NEG_INF if lo + M - 1 >= kmax else _tail_log(vals, lm, lam, copies, (lo + M) * h, "upper")
    below = NEG_INF if lo <= kmin else _tail_log(vals, lm, lam, copies, (lo - 1) * h, "lower")
    log_out = float(np.logaddexp(above, below))
    return Law(c, lo, h, lam, log_norm, rho, rel, log_out)


def _choose_h(f: np.ndarray, m: np.ndarray, n: int, lam: float) -> float:
    """Grid spacing: n λ² h²/8 ≈ GRID_ETA (the split's tilted excess), at most σ̃/20, at least the spacing that
    keeps the window within MAX_GRID/2 points."""
    w = m * np.exp(lam * (f - np.max(f)))
    w /= w.sum()
    sd1 = math.sqrt(max(float(np.dot(w, f * f) - np.dot(w, f) ** 2), 1e-300))
    sd = math.sqrt(n) * sd1
    h = sd / 20
    if lam > 0:
        h = min(h, math.sqrt(8 * GRID_ETA / n) / lam)
    span = 2 * (sd * 16 + float(np.max(np.abs(f))) * 4)
    return max(h, span / TARGET_GRID)


def _fft_lam(f: np.ndarray, m: np.ndarray, n: int) -> float:
    th = saddle_theta(f, m)
    sd = math.sqrt(n * max(float(np.dot(m, f * f) - np.dot(m, f) ** 2), 1e-300))
    return max(th, 1.0 / sd) if math.isfinite(th) else 1.0 / sd


def fft_upper(form: SumForm, eps: float, h: float | None = None) -> float:
    """Certified upper bound on the form's δ(ε) through the mean-preserving split (module docstring)."""
    _, fh = _f_bounds(form, eps)
    off = _off_bounds(form, eps)[1]
    m = form.mass
    n = form.n
    if float(np.max(fh)) <= 0:
        return min(1.0, off)
    lam = _fft_lam(fh, m, n)
    h = _choose_h(fh, m, n, lam) if h is None else h
    x = fh / h
    k = np.floor(x)
    d = x - k
    # rounding of x, k and d: raise d (the split's mean k h + d h is then >= f); d >= 1 moves all to k + 1
    d = d + 8 * U * (np.abs(x) + 2)
    up = d >= 1.0
    k = np.where(up, k + 1, k)
    d = np.where(up, 0.0, d)
    kk = np.concatenate([k, k + 1]).astype(np.int64)
    mass = np.concatenate([m * (1 - d), m * d])
    # the masses' rounding moves the mean by <= 2u h per atom: covered by the 8u raise of d above
    law = _grid_law(kk, mass, h, n, lam)
    M = law.c.size
    s = (law.lo + np.arange(M)) * h
    pos = s > 0
    # far points (lam s > FAR_TILT): e^{-lam s} would be subnormal or 0 (its relative rounding unbounded); their part
    # is bounded in log space below, e^{-lam s} <= e^{-FAR_TILT}
    far = pos & (lam * s > FAR_TILT)
    near = pos & ~far
    with np.errstate(over="ignore", under="ignore"):
        w = np.where(near, s * np.exp(-lam * np.where(near, s, 0.0)), 0.0)
    w *= 1 + 4 * U * (lam * np.abs(s) + 4)  # s, lam s and exp: relative rounding <= 4u (lam |s| + 3)
    cp = np.maximum(law.c, 0.0)
    main = float(np.dot(w, cp))
    gam = (M + 10) * U
    err = law.rho * float(np.linalg.norm(w)) * (1 + 1e-9)
    near_total = main * (1 + law.rel) * (1 + gam) + err
    logs = [math.log(near_total)] if near_total > 0 else []
    if far.any():  # Σ_far s e^{-lam s} c <= e^{-FAR_TILT} (Σ_far s ĉ_+ (1 + rel)(1 + gam) + rho ||s_far||_2)
        sf = np.where(far, s, 0.0)
        fs = float(np.dot(sf, cp)) * (1 + law.rel) * (1 + gam) * (1 + 1e-9) \
            + law.rho * float(np.linalg.norm(sf)) * (1 + 1e-9)
        if fs > 0:
            logs.append(-FAR_TILT + math.log(fs))
    if law.log_out > NEG_INF:  # outside the window: s e^{-lam s} <= 1/(e lam)
        logs.append(law.log_out - 1.0 - math.log(lam))
    if not logs:
        return min(1.0, off)
    log_total = float(np.logaddexp.reduce(logs))
    log_total += 8 * U * (max(abs(x) for x in logs) + len(logs) + 2)  # the logs and logaddexp: a few ulps each
    val = div_up(exp_up(law.log_norm + log_total + math.log1p(law.rel) + 4 * U * abs(law.log_norm) + 1e-13), n)
    return min(1.0, (off + val) * (1 + 4 * U))


def fft_lower(form: SumForm, eps: float, h: float | None = None) -> float:
    """Certified lower bound on the form's δ(ε) through the size-biasing identity (module docstring)."""
    fl, _ = _f_bounds(form, eps)
    off = _off_bounds(form, eps)[0]
    m = form.mass
    n = form.n
    if n < 2 or float(np.max(fl)) <= 0:
        return off
    lam = _fft_lam(fl, m, n)
    h = _choose_h(fl, m, n, lam) if h is None else h
    kt = np.rint(fl / h).astype(np.int64)  # f~: nearest grid point (any deterministic rounding will do)
    law = _grid_law(kt, m, h, n - 1, lam)
    M, lo = law.c.size, law.lo
    # weights e^{-lam (s - s_ref)} relative to the tilted law's peak s_ref (the rounding f~ - f may shift S~ by
    # O(n h) from S; the event's threshold c follows it, and e^{-lam s_ref} moves into the normaliser)
    i_ref = int(np.argmax(law.c))
    e_arg = -lam * ((np.arange(M) - i_ref) * h)
    log_ref = -lam * ((lo + i_ref) * h)
    # first index with -lam (s - s_ref) <= 300: the squared weights' suffix sums stay finite (e^600 M < 1e308)
    i_min = int(np.searchsorted(-e_arg, -300.0))
    with np.errstate(over="ignore"):
        ew = np.exp(np.minimum(e_arg, 300.0))
    ew[:i_min] = 0.0
    v = ew * law.c
    va = ew * np.abs(law.c)
    # suffix sums (length M + 1, last 0)
    Tc = np.concatenate([np.cumsum(v[::-1])[::-1], [0.0]])
    Ta = np.concatenate([np.cumsum(va[::-1])[::-1], [0.0]])
    T2 = np.concatenate([np.cumsum((ew * ew)[::-1])[::-1], [0.0]])
    # candidate J (c = (lo + J + 1/2) h): thresholds J + 1 - k~_a in [i_min, M]
    kmax, kmin = int(kt.max()), int(kt.min())
    J = np.arange(max(i_min + kmax - 1, 0), min(M - 1 + kmin, M - 1) + 1)
    if J.size == 0:
        return off
    order = np.argsort(-kt)  # thresholds ascending
    thr = [np.clip(J + 1 - kt[a], 0, M) for a in order]
    coef = fl[order] * m[order]
    # G_i = e^{-lam s_i} cum_p on the piece [thr_p, thr_{p+1}) (cum_p: the coefficients of the thresholds <= i);
    # the last piece's cum is E f~-weighted total (small: no cancellation between the pieces' bounds)
    cum = np.cumsum(coef)
    main = np.zeros(J.size)
    absg = np.zeros(J.size)
    g2 = np.zeros(J.size)
    gmax = np.zeros(J.size)
    rnd = np.zeros(J.size)
    for p in range(len(thr)):
        end = thr[p + 1] if p + 1 < len(thr) else np.full(J.size, M)
        main += cum[p] * (Tc[thr[p]] - Tc[end])
        absg += abs(cum[p]) * np.maximum(Ta[thr[p]] - Ta[end], 0.0)
        rnd += abs(cum[p]) * (Ta[thr[p]] + Ta[end])
        g2 += cum[p] ** 2 * np.maximum(T2[thr[p]] - T2[end], 0.0)
        gmax = np.maximum(gmax, np.where(thr[p] < end, abs(cum[p]) * ew[np.minimum(thr[p], M - 1)], 0.0))
    # above the window G = cum_last e^{-lam s} <= |cum_last| ew[M - 1] (also when the last piece is empty)
    gmax = np.maximum(gmax, abs(cum[-1]) * ew[M - 1])
    gnorm = np.sqrt(g2 * (1 + 1e-9))
    # ew = exp(-lam (s - s_ref)) within 4u (|exponent| + 3) <= 4u 303 of its exact value: Σ|G||c^| of that
    eta_w = 4 * U * 303
    # suffix sums: relative error <= M u of the absolute suffix each (cumsum), differences and the piece sum
    gam = (M + 10 + 4 * len(thr)) * U
    err = (law.rho * gnorm * (1 + 1e-9) + (law.rel + eta_w) * (absg + gam * rnd) + 2 * gam * rnd
           + gmax * math.exp(law.log_out) * (1 + 1e-9))
    lb = main - err
    if not law.rel < 1.0:  # the relative input error leaves no lower end from the FFT
        raise AccuracyError(f"the blanket FFT's relative input error {law.rel:.3g} leaves no lower end")
    i = int(np.argmax(lb))
    if not lb[i] > 0:
        return off
    val = exp_down(law.log_norm + log_ref + math.log(lb[i]) + math.log1p(-law.rel)
                   - 4 * U * (abs(law.log_norm) + 2 * abs(log_ref)) - 1e-13)
    return max(0.0, (off + val) * (1 - 4 * U))


# ---------------------------------------------------------------------------------------------
# one form, both ends
# ---------------------------------------------------------------------------------------------

def form_bracket(form: SumForm, eps: float, *, want: str = "both") -> tuple[float, float]:
    """(lower, upper) on one form's δ(ε): the exact enumeration where cheap, else the certified FFT (``want``:
    "upper", "lower" or "both"; an end not asked for is 0 or 1)."""
    form = merge_atoms(form)
    if exact_cost(form) <= EXACT_BUDGET:
        return exact_bracket(form, eps)
    lo, up = 0.0, 1.0
    if want in ("lower", "both"):
        try:
            lo = fft_lower(form, eps)
        except AccuracyError:  # the FFT is not usable here: the off-support part alone is a lower end
            lo = _off_bounds(form, eps)[0]
    if want in ("upper", "both"):
        try:
            up = fft_upper(form, eps)
        except AccuracyError:  # the FFT is not usable here: Chernoff (certified, looser)
            up = chernoff_upper(form, eps)
    return lo, max(lo, up)


# ---------------------------------------------------------------------------------------------
# the mechanism: max over blanket forms (upper), max over data-set forms (lower)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MechanismForms:
    """The blanket forms (upper end) and data-set forms (lower end) of one mechanism, atoms merged."""

    upper: tuple
    lower: tuple

    @classmethod
    def of(cls, upper, lower) -> "MechanismForms":
        return cls(tuple(_dedupe(merge_atoms(f) for f in upper)), tuple(_dedupe(merge_atoms(f) for f in lower)))


def _dedupe(forms):
    """Forms with identical laws of (f, off) kept once (k-RR's symmetric pairs): only bit-for-bit equal atoms
    (mass, u, v, sorted) and off-support terms count as equal — a form differing in any bit is kept, since no
    allowance covers dropping it from the upper end's maximum."""
    seen, out = set(), []
    for f in forms:
        o = np.lexsort((f.v, f.u, f.mass))
        off = np.lexsort((f.off_q, f.off_p))
        key = (f.kind, f.n, np.ascontiguousarray(f.mass[o], dtype=float).tobytes(),
               np.ascontiguousarray(f.u[o], dtype=float).tobytes(), np.ascontiguousarray(f.v[o], dtype=float).tobytes(),
               np.ascontiguousarray(f.off_p[off], dtype=float).tobytes(),
               np.ascontiguousarray(f.off_q[off], dtype=float).tobytes())
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def delta_interval(mf: MechanismForms, eps: float, *, top: int = 3) -> tuple[float, float, SumForm | None, SumForm | None]:
    """(lower, upper, lower's form, upper's form) on the mechanism's δ(ε).  Upper: every blanket form whose
    Chernoff bound could exceed the best certified upper found so far is evaluated (in the order of the
    estimate); lower: the ``top`` data-set forms by estimate."""
    ups = sorted(mf.upper, key=lambda f: -estimate_delta(f, eps))
    best_up, arg_up = 0.0, None
    for f in ups:
        if best_up > 0 and chernoff_upper(f, eps) <= best_up:
            continue
        up = form_bracket(f, eps, want="upper")[1]
        if up > best_up or arg_up is None:
            best_up, arg_up = max(up, best_up), f
    lows = sorted(mf.lower, key=lambda f: -estimate_delta(f, eps))[:top]
    best_lo, arg_lo = 0.0, None
    for f in lows:
        lo = form_bracket(f, eps, want="lower")[0]
        if lo > best_lo:
            best_lo, arg_lo = lo, f
    return min(best_lo, best_up), best_up, arg_lo, arg_up


def _solve_estimate(forms, delta: float, eps_hi: float) -> float:
    """ε with max over ``forms`` of the estimate = δ (the project's bisection, numerics.invert; cheap, uncertified:
    it only places the certified evaluations)."""
    from shufflesim.accounting.numerics.invert import bisect_decreasing

    g = lambda e: max(estimate_delta(f, e) for f in forms)  # noqa: E731
    if g(eps_hi) > delta:
        return eps_hi
    return bisect_decreasing(g, delta, lo=0.0, hi=eps_hi, rtol=1e-7, atol=0.0)[0]


def eps_interval(mf: MechanismForms, delta: float, eps_max: float, *,
                 top: int = 3) -> tuple[float, float, SumForm | None]:
    """(lower, upper, lower's form) on the mechanism's ε(δ): estimate, then certify at a point slightly above
    (upper) and slightly below (lower), moving by the estimate's slope until the certified end holds (≤ 8
    evaluations each); ``eps_max`` (the local ε0) is the fallback upper end.  The form returned is the one whose
    certified δ lower end exceeded δ at the lower end (None when the lower end is 0)."""
    if not mf.upper:
        return 0.0, eps_max, None
    e_up = _solve_estimate(mf.upper, delta, eps_max)
    e_lo = _solve_estimate(mf.lower, delta, eps_max) if mf.lower else 0.0
    up, _ = _certify(lambda e: (_upper_at(mf, e), None), mf.upper, delta, e_up, eps_max, "upper")
    lo, form = _certify(lambda e: lower_form_at(mf, e, top=top), mf.lower, delta, e_lo, eps_max, "lower") \
        if mf.lower else (0.0, None)
    return lo, min(up, eps_max), (form if lo > 0 else None)


def _certify(fn, forms, delta: float, e0: float, eps_max: float, side: str, tries: int = 7) -> tuple[float, object]:
    """The certified end of ε(δ) on one side: "upper" — an ε with fn(ε) ≤ δ (fn a certified upper bound on δ), as
    small as found (``eps_max`` if none); "lower" — an ε with fn(ε) > δ (fn a certified lower bound), as large as
    found (0 if none).  Newton steps on log fn with the estimate's slope, overshooting by 10 % towards the safe
    side, then one step back towards δ once a certified point is found.  ``fn`` returns (value, tag); the tag of
    the point kept is returned with it (the form that certified it)."""
    best = eps_max if side == "upper" else 0.0
    tag = None
    e = e0
    for i in range(tries):
        if not (0 < e < eps_max):
            break
        d, t = fn(e)
        d = max(d, 1e-300)
        ok = d <= delta if side == "upper" else d > delta
        if ok and (e < best if side == "upper" else e > best):
            best, tag = e, t
        est = lambda x: max(max(estimate_delta(f, x) for f in forms), 1e-300)  # noqa: E731
        slope = (math.log(est(e * 0.995)) - math.log(est(e * 1.005))) / (0.01 * e)
        if not slope > 0:
            slope = 1.0 / (0.05 * e)
        step = (math.log(d) - math.log(delta)) / slope  # the move that would bring fn to delta
        if ok and i >= 1:
            # one step back towards the target from a certified point, then stop
            tgt = e + 0.9 * step
            dd, t = fn(tgt) if 0 < tgt < eps_max else (None, None)
            dd = None if dd is None else max(dd, 1e-300)
            if dd is not None and (dd <= delta if side == "upper" else dd > delta) \
                    and (tgt < best if side == "upper" else tgt > best):
                best, tag = tgt, t
            break
        if ok:
            e = e + 0.9 * step if abs(step) > 1e-6 * e else e
            if abs(step) <= 1e-6 * e:
                break
            continue
        e = e + 1.1 * step + (1e-6 * e if side == "upper" else -1e-6 * e)
    if best in (0.0, eps_max):  # Newton found nothing (a steep or flat stretch): fixed relative offsets from e0
        for r in (1e-3, 1e-2, 1e-1, 0.5):
            e = min(e0 * (1 + r), eps_max) if side == "upper" else e0 * (1 - r)
            if not 0 < e < eps_max:
                continue
            d, t = fn(e)
            if (d <= delta) if side == "upper" else (d > delta):
                return e, t
    return best, tag


def _upper_at(mf: MechanismForms, eps: float) -> float:
    ups = sorted(mf.upper, key=lambda f: -estimate_delta(f, eps))
    best = 0.0
    for f in ups:
        if best > 0 and chernoff_upper(f, eps) <= best:
            continue
        best = max(best, form_bracket(f, eps, want="upper")[1])
    return best


def lower_form_at(mf: MechanismForms, eps: float, *, top: int = 3) -> tuple[float, SumForm | None]:
    """(certified lower end on δ(ε), the data-set form that gave it) over the ``top`` forms by estimate."""
    lows = sorted(mf.lower, key=lambda f: -estimate_delta(f, eps))[:top]
    best, arg = 0.0, None
    for f in lows:
        lo = form_bracket(f, eps, want="lower")[0]
        if lo > best or arg is None:
            best, arg = max(lo, best), f
    return best, arg


def delta_lower_at(mf: MechanismForms, eps: float, *, top: int = 3) -> float:
    return lower_form_at(mf, eps, top=top)[0]


# ---------------------------------------------------------------------------------------------
# mechanisms: the forms of a matrix / of k-RR, and answers
# ---------------------------------------------------------------------------------------------

def matrix_forms(R: np.ndarray, n: int) -> MechanismForms:
    """Every blanket form (upper end) and every data-set form "the others hold c" (lower end) of matrix R."""
    from shufflesim.accounting.pairs.blanket import blanket_forms, dataset_forms

    return MechanismForms.of(blanket_forms(R, n), dataset_forms(R, n))


def krr_matrix(k: int, gamma: float) -> np.ndarray:
    """k-RR's matrix: R(x, y) = (1 − γ) 1{x = y} + γ/k."""
    return np.full((k, k), gamma / k) + np.eye(k) * (1.0 - gamma)


def krr_forms(k: int, gamma: float, n: int) -> MechanismForms:
    """k-RR's forms up to its symmetry: the blanket form of the pair (0, 1) and the data-set forms of the target
    switching 0 → 1 with the others all holding 0, 1 or a third value (every ordered pair is a relabelling of
    (0, 1), every c of one of these three).  Built on a 4-input matrix whose last output column stands for the
outputs 3..k−1 and whose last input for any value outside {0, 1, 2}: those outputs
    are merged into one column (their atoms have identical (u, v), so every form's law is unchanged)."""
    from shufflesim.accounting.pairs.blanket import blanket_forms, dataset_forms

    kk = min(k, 4)
    # outputs beyond the first kk are all "a value neither 0, 1 nor c": one merged column of mass (k − kk + 1) γ/k
    # on the last column keeps every form's law of (u, v) and mass exact
    R = krr_matrix(kk, gamma)
    if k > kk:
        R = np.concatenate([krr_matrix(k, gamma)[:kk, :kk - 1], np.full((kk, 1), (k - kk + 1) * gamma / k)], axis=1)
        R[kk - 1, kk - 1] = 1.0 - gamma + (k - kk + 1) * gamma / k  # input kk − 1 (a third value c) reports itself
    ups = [f for f in blanket_forms(R, n) if (f.x, f.x2) == (0, 1)]
    lows = [f for f in dataset_forms(R, n, others=list(range(min(k, 3)))) if (f.x, f.x2) == (0, 1)]
    return MechanismForms.of(ups, lows)


@dataclass(frozen=True)
class FormsAnswer:
    """Per question value: (lower, upper) and the data set that gave the lower end."""

    lower: float
    upper: float
    lower_form: str


def answer_forms(mf: MechanismForms, *, eps=None, delta=None, eps_max: float = math.inf) -> list[FormsAnswer]:
    """The mechanism's certified intervals on δ(ε) per ``eps`` or ε(δ) per ``delta``: upper = max over the blanket
    forms, lower = max over the data-set forms (docs/theory.md#pairs-blanket)."""
    out = []
    if eps is not None:
        for e in eps:
            if e >= eps_max:  # the randomiser is eps_max-LDP: the shuffled view is (eps_max, 0)-DP
                out.append(FormsAnswer(0.0, 0.0, ""))
                continue
            if e > 700.0:  # e^eps overflows (eps0 > 700): the trivial bracket
                out.append(FormsAnswer(0.0, 1.0, ""))
                continue
            lo, up, flo, _ = delta_interval(mf, float(e))
            out.append(FormsAnswer(lo, up, "" if flo is None else flo.describe()))
    else:
        for d in delta:
            lo, up, best = eps_interval(mf, float(d), eps_max)
            out.append(FormsAnswer(lo, up, "" if best is None else best.describe()))
    return out


BLANKET_NOTE = ("upper end: the blanket pair of every ordered input pair (the optimal decomposition; Su, Cheng, "
                "Wang 2025, arXiv:2504.07414; docs/theory.md#pairs-blanket), evaluated as a sum form (exact "
                "enumeration at small n, else the certified split FFT); lower end: the largest exact delta "
                "of {what} (size-biased FFT, certified)")


def account_blanket(mf: MechanismForms, eps_l, delta_l, eps_max: float, method: str = "blanket"):
    """(results, notes) of the blanket method for one use: :class:`DeltaBound` per ε or :class:`EpsBound` per δ."""
    from shufflesim.accounting.model.results import DeltaBound, EpsBound

    from shufflesim.accounting.model.provenance import LowerEnd, Provenance

    got = answer_forms(mf, eps=eps_l, delta=delta_l, eps_max=eps_max)
    whats = "; ".join(dict.fromkeys(g.lower_form for g in got if g.lower_form)) or "(none)"
    out = []
    for v, g in zip(eps_l if eps_l is not None else delta_l, got):
        end = LowerEnd(f"{g.lower_form} (its exact delta: sum form, size-biased certified FFT)" if g.lower_form
                       else None)
        prov = Provenance(items=(end,))
        if eps_l is not None:
            out.append(DeltaBound(float(v), g.upper, g.lower, method, provenance=prov))
        else:
            out.append(EpsBound(float(v), g.upper, g.lower if g.lower > 0 else 0.0, method, provenance=prov))
    return [judged(r) for r in out], [BLANKET_NOTE.format(what=whats)]


#: relative width of a blanket answer that meets the accuracy target: TightAccountant's default target_accuracy
#: (1e-3, on (upper − lower)/upper of δ) and, for ε(δ), the same on (upper − lower)/upper of ε
BLANKET_RTOL = 1e-3


def relative_width(r) -> float:
    """(upper − lower)/upper of an answer's interval (0 when upper = 0: δ provably 0; 1 with no lower end)."""
    up = r.upper
    lo = r.lower if r.lower is not None else 0.0
    if up == 0:
        return 0.0
    return (up - lo) / up if math.isfinite(up) else math.inf


def judged(r):
    """``r`` with ``accuracy_met`` set from its relative width against :data:`BLANKET_RTOL` (TightAccountant's
    convention: met when (upper − lower) ≤ rtol · upper) and, when not met, a provenance line saying so."""
    from dataclasses import replace

    from shufflesim.accounting.model.results import DeltaBound

    w = relative_width(r)
    met = bool(w <= BLANKET_RTOL)
    prov = r.provenance
    if not met:
        scale = "delta" if isinstance(r, DeltaBound) else "eps"
        lo = r.lower if r.lower is not None else 0.0
        prov = prov.add(f"accuracy_met=false: relative width {w:.3g} in {scale} above {BLANKET_RTOL:g} at "
                        f"{'eps' if scale == 'delta' else 'delta'}={r.at:.6g}; the best certified interval "
                        f"[{lo:.6g}, {r.upper:.6g}] is reported")
    return replace(r, accuracy_met=met, provenance=prov)


def tighter_of(results: list, others: list, lows=None, what=None) -> tuple[list, bool]:
    """Per answer not meeting :data:`BLANKET_RTOL`: the smaller upper end of ``results`` and ``others`` (answers
    of a pair that also dominates the view, e.g. tight's stronger clones) and the larger lower end of ``results``
    and ``lows`` (genuine lower ends of the mechanism, from explicit data sets described by ``what``; never a
    dominating pair's own lower end), re-judged.  Returns (answers, whether any end moved)."""
    from dataclasses import replace

    from shufflesim.accounting.model.provenance import LowerEnd

    out, moved = [], False
    lows = lows if lows is not None else [None] * len(results)
    for r, o, lo in zip(results, others, lows):
        if r.accuracy_met:
            out.append(r)
            continue
        up = min(r.upper, o.upper) if o is not None and getattr(o, "upper", None) is not None else r.upper
        low = r.lower if r.lower is not None else 0.0
        items = []
        if up < r.upper:
            items.append("upper end (where smaller): the stronger clone pair at eps0 (tight), which also dominates "
                         "the view")
        prov = r.provenance
        if lo is not None and lo > low:
            low = lo
            items.append(what if isinstance(what, LowerEnd) else LowerEnd(what))
            prov = replace(prov, items=tuple(i for i in prov.items  # "no lower end" no longer holds
                                             if not (isinstance(i, LowerEnd) and i.data_sets is None)))
        low = min(low, up)
        if items:
            moved = True
            prov = prov.add(*items)
            r = r.with_ends(lower=low, upper=up).with_provenance(prov)
        out.append(rejudged(r) if items else r)
    return out, moved


def rejudged(r):
    """:func:`judged` again after an end moved (the earlier verdict's line dropped)."""
    from dataclasses import replace

    items = tuple(i for i in r.provenance.items if not (isinstance(i, str) and i.startswith("accuracy_met=false")))
    return judged(r.with_provenance(replace(r.provenance, items=items)))


FALLBACK_NOTE = ("blanket: accuracy target not met (relative width above {rtol:g}) at some value: where tighter, "
                 "the upper end of tight's stronger clone pair (it dominates the view) and the lower end of its "
                 "explicit data sets are taken")
