"""The bound engine of Cheu et al.'s unary real summation (seed 004 §1, Table 3; ``cheu-sum``): the
blanket-binomial upper bound on δ(ε), its all-zeros lower end, and their inversion into ε(δ).

The mechanism (:class:`shufflesim.mechanisms.cheu.CheuSum`, the description): each of n users rounds x ∈ [0, 1]
to x̄ ∈ {0..r}, writes it in unary on r bits and sends every bit through binary blanket randomised response
(keep w.p. 1 − γ, else a uniform bit); all n·r bits go through one shuffler (Cheu, Smith, Ullman, Zeber,
Zhilyaev, EUROCRYPT 2019, arXiv:1808.01394; docs/theory.md#summation-cheu).

Upper bound ``blanket-binomial`` (docs/theory.md#summation-cheu, derived in docs/theory.md#summation-cheu-profile;
:func:`cheu_delta`): for the stronger adversary who also knows the others' rounded inputs and which of their bits
were blanketed, the view is the target's count of ones plus Bin(M, ½), M ~ Bin((n−1)r, γ) the others' blanketed
bits; the target's count is Bin(r, 1 − γ/2) (x̄ = r) against Bin(r, γ/2) (x̄ = 0), the worst pair (stochastic
order and monotone likelihood ratio; checked by brute force in tests/test_sum_baselines.py), so
δ = E_M[δ(P_M‖Q_M)]; δ(P_m‖Q_m) is non-increasing in m, so M is binned and each bin charged its smallest m, and
the masses outside the computed windows are added.  Each bin's δ is evaluated from tails at the certified
crossing of the likelihood ratio (issue 21; :func:`_crossings`, :func:`tail_sums`, :func:`_conv_hockey`), so its
cost does not grow with n·r.  Forgetting the coins is post-processing, so the bound holds for the analyser's view.

Lower end (docs/theory.md#summation-cheu-profile): the exact δ of the analyser's view for the neighbours "every
user holds 0" against "the target holds 1" (:func:`shufflesim.maths.rr_count.rr_count_pair_window`), less the
PMFs' round-off (:data:`PMF_RTOL` relative each, times 1 + e^ε); from tails (:func:`cheu_lower_delta`) above
n·r = :data:`MAX_CHEU_BITS`.

Validity: the description (:class:`~shufflesim.mechanisms.cheu.CheuSum`) accepts r <= 2000 and n·r <= 2e12, where
these error models were checked against mpmath (tests/test_cheu_scale.py).

Numerics: the binomial log-PMF, its windowed ratio recurrence and the Chernoff windows are those of
:mod:`shufflesim.accounting.numerics.binomial`; ε(δ) is inverted by
:func:`shufflesim.accounting.bounds.transforms.invert_delta_curve`.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.accounting.numerics.binomial import (BINOM_LOG_ERR, binom_log_kl_scalar, certified_tail, chernoff_window_scalar,
                                            log_binom_pmf, log_binom_window, log_ratio_pq)
from shufflesim.accounting.numerics.invert import eps_bracket
from shufflesim.accounting.numerics.logspace import U, exp_up, log_sum_rows

#: n·r up to which the lower end is the all-zeros pair from its mass functions and the bound uses 64 bins of M;
#: above, the lower end from tails and 16 bins (issue 21: no longer a refusal)
MAX_CHEU_BITS = 10**8
#: relative accuracy claimed for the PMFs of the lower bound (scipy's binomial PMF and a direct convolution
#: of non-negative terms are accurate to ~1e-13 relative; tests/test_audit_rr_count.py checks 2e-15 at small n)
PMF_RTOL = 1e-10


def hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    if eps <= 700.0:
        return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))
    # e^eps overflows: sum of p (1 - e^{eps + log q - log p}) over the atoms where that is positive
    with np.errstate(divide="ignore", invalid="ignore"):  # log 0 = -inf; -inf - -inf = nan is dropped below
        d = eps + np.log(q) - np.log(p)
    m = (p > 0) & (d < 0)
    return float(np.sum(p[m] * -np.expm1(d[m])))


# ---------------------------------------------------------------------------------------------------
# δ of T + N from tails (issue 21: the cost no longer grows with n)
# ---------------------------------------------------------------------------------------------------

#: log of the relative mass of Bin(m, p) left beyond a tail window, relative to the window's last needed atom
#: (the remainder is bounded by the Chernoff bound and added in full to the upper end)
_LOG_TAIL_REL = math.log(1e-18)


def log_err(logv, k=None, m: int = 0, p: float = 0.5, pc: float = 0.5) -> float:
    """Absolute error bound of log-PMF values of :func:`~shufflesim.accounting.numerics.binomial.log_binom_pmf` with
    magnitudes up to max |logv|: :data:`BINOM_LOG_ERR`·max(1, |log|/100) (its accuracy model, checked against
    mpmath in tests/test_pairs.py and at cheu-sum's population scale in tests/test_cheu_scale.py), doubled; plus,
    for Bin(m, p) with p ≠ ½ at the counts ``k``, 2u·|k − mp|: the complement 1 − p is a rounded double, and its
    rounding moves the deviance term by |k − mp|·u (1.6e-11 at m = 2e12, 12 standard deviations out)."""
    top = float(np.max(np.abs(np.where(np.isfinite(logv), logv, 0.0)), initial=0.0))
    err = 2.0 * BINOM_LOG_ERR * max(1.0, top / 100.0)
    if k is not None and not (p == 0.5 and pc == 0.5):
        err += 2.0 * U * float(np.max(np.abs(np.asarray(k, dtype=float) - float(m) * p), initial=0.0))
    return err


def _d_window(r: int, q: float, log_budget: float):
    """(dl, log D(dl..dh), certified mass outside) for D = Bin(r, q): the target's flipped bits.  The window
    keeps dl + dh <= r so that r − D (x̄ = r) and D (x̄ = 0) stay ordered intervals (monotone ratio)."""
    dl, dh, lt = chernoff_window_scalar(r, q, log_budget)
    if dl + dh > r:
        dl = 0
    d = np.arange(dl, dh + 1)
    return dl, log_binom_pmf(d, r, q), certified_tail(float(lt))


def _cond(lp, lq, thr):
    """log P(y) − log Q(y) >= thr, with −inf handled: no P mass -> False, P mass and no Q mass -> True."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isneginf(lp), False, np.where(np.isneginf(lq), True, lp - lq >= thr))


def _log_pq(y, m, p, pc, r, dl, logd):
    """(log P(y), log Q(y), error bound) for P = (r − D) + N, Q = D + N, N = Bin(m, p), D on its window."""
    d = np.arange(dl, dl + logd.size)
    y = np.asarray(y, dtype=np.int64)[:, None]
    mm = np.asarray(m, dtype=np.int64)[:, None]
    k = np.concatenate([y - r + d[None, :], y - d[None, :]], axis=1)
    ln = log_binom_pmf(k, mm, p, pc)
    lnp, lnq = ln[:, : d.size], ln[:, d.size:]
    lp, lq = log_sum_rows(lnp + logd[None, :]), log_sum_rows(lnq + logd[None, :])
    both = np.concatenate([lnp.ravel(), lnq.ravel(), logd, lp, lq])
    # log-PMF errors of N and D (each term), the sums' and logs' rounding (a few units of |log| each)
    err = log_err(both) + log_err(logd) + 2.0 * U * r  # D = Bin(r, q): its rounded complement, |k − rq| <= r
    if not (p == 0.5 and pc == 0.5):  # the rounded complement (see _log_err), at each finite count of each row
        dev = np.where(np.isfinite(ln), np.abs(k - mm.astype(float) * p), 0.0)
        err += 2.0 * U * float(np.max(dev, initial=0.0))
    err += 8.0 * U * (float(np.max(np.abs(both[np.isfinite(both)]), initial=0.0)) + logd.size)
    return lp, lq, err


def _crossings(m, p, pc, r, dl, logd, eps, eta_l, evalf=None):
    """Per bin: (y_lo, y_hi, err): bisection for the first y whose computed log P/Q is >= ε − η (y_lo) and >= ε + η
    (y_hi), η = ``eta_l``; err is the largest error bound of the computed log-ratios met.  When err <= η, every
    y < y_lo has log P/Q < ε and every y >= y_hi has log P/Q > ε, because P/Q is non-decreasing in y
    (docs/theory.md#summation-cheu-profile) and the bisection's final brackets were evaluated.  The search
    starts from the normal approximation's crossing and keeps the full bracket where that guess does not
    bracket it (only where the bisection looks, never what it accepts)."""
    m = np.asarray(m, dtype=np.int64)
    nb = m.size
    mm = np.concatenate([m, m])
    thr = np.concatenate([np.full(nb, eps - eta_l), np.full(nb, eps + eta_l)])
    a = np.full(2 * nb, -1, dtype=np.int64)  # cond false (virtual)
    b = mm + r + 1  # cond true (virtual: beyond the support, where the set is empty)
    # normal approximation: P, Q have variance s2 and means c ± Δ/2, so log P/Q ≈ Δ(y − c)/s2
    q = p * pc
    dmean = float(np.dot(np.exp(logd), np.arange(dl, dl + logd.size)))
    delta_m = max(r - 2.0 * dmean, 1e-300)
    s2 = mm * q + r * 0.25 + 1.0
    c = mm * p + r / 2.0
    # clipped to the bracket in floating point before the cast: where Δ underflows to its 1e-300 floor the guess
    # is ±inf, whose cast to int64 is undefined (it is only where the bisection looks, never what it accepts)
    guess = np.floor(np.clip(c + np.minimum(thr, 1e6) * s2 / delta_m, -1.0, (mm + r + 1).astype(float)))
    guess = guess.astype(np.int64)
    w = np.maximum(4, np.ceil(0.02 * np.sqrt(s2) + 1e-3 * np.abs(guess - c))).astype(np.int64)
    ga, gb = np.clip(guess - w, a + 1, b - 1), np.clip(guess + w, a + 1, b - 1)
    err = 0.0
    if evalf is None:
        def evalf(y, rows):
            return _log_pq(y, m[rows], p, pc, r, dl, logd)
    rows2 = np.concatenate([np.arange(nb), np.arange(nb)])
    lp, lq, e = evalf(np.concatenate([ga, gb]), np.concatenate([rows2, rows2]))
    err = max(err, e)
    ok = _cond(lp, lq, np.concatenate([thr, thr]))
    oka, okb = ok[: 2 * nb], ok[2 * nb:]
    a = np.where(~oka, ga, a)
    b = np.where(oka, np.minimum(b, ga), b)
    b = np.where(okb, np.minimum(b, gb), b)
    a = np.where(~okb, np.maximum(a, gb), a)
    bad = a >= b  # the computed ratio not monotone across the guess (round-off): the full bracket there
    a = np.where(bad, -1, a)
    b = np.where(bad, mm + r + 1, b)
    for _ in range(80):
        act = np.flatnonzero(b - a > 1)
        if act.size == 0:
            break
        mid = (a[act] + b[act]) // 2
        lp, lq, e = evalf(mid, act % nb)
        err = max(err, e)
        ok = _cond(lp, lq, thr[act])
        a[act] = np.where(ok, a[act], mid)
        b[act] = np.where(ok, mid, b[act])
    return b[:nb], b[nb:], err


#: largest full window of Bin(m, p) (atoms) a bin sums once (and keeps across evaluations at many ε, the
#: accountant's ε(δ) inversion, when given a cache); larger bins sum the window each ε needs
_FULL_WINDOW_MAX = 1 << 15


def _full_size(m: int, p: float, pc: float) -> float:
    """An upper estimate of the full window's atoms: 80 standard deviations of Bin(m, p) (the 1e-300 Chernoff
    window spans ~75), plus 64."""
    return 80.0 * math.sqrt(m * p * pc) + 64.0


def _full_tail(m: int, p: float, pc: float):
    """(k0, log scale s, S(k0..K)·e^{-s}, R, η, ea) over the Chernoff window [k0, K] of Bin(m, p) outside which
    at most R <= 1e-300 lies (both sides)."""
    k0, K, lt = chernoff_window_scalar(m, p, math.log(1e-300), pc)
    s, sf, eta, ea, logn = _window_sums(m, p, pc, k0, K, keep_logs=True)
    return k0, s, sf, certified_tail(float(lt)), eta, ea, logn


def _window_sums(m: int, p: float, pc: float, k0: int, K: int, keep_logs: bool = False):
    """(log scale s, S'(k0..K)·e^{-s}, η, ea): S'(k) = Σ_{j=k}^{K} P(Bin(m, p) = j) from the window's log-PMF
    (:func:`~shufflesim.accounting.numerics.binomial.log_binom_window` anchored at k0); η bounds the relative error apart
    from the anchor's error ea (common to all).  η is this module's own allowance for the recurrence, exp and
    the sums (looser than the window's ``varying`` bound, kept so that no certified number moves)."""
    logs, anchor, _, _ = log_binom_window(m, p, k0, K, anchor=k0, q=pc, errors=False)
    lpq = log_ratio_pq(p, pc)
    lmin = float(logs.min())
    shift = float(logs.max())
    logn = logs + anchor if keep_logs else None
    logs -= shift
    vals = np.exp(logs, out=logs)
    sf = np.cumsum(vals[::-1])[::-1]
    W = vals.size
    big = abs(lmin) + 2.0 * abs(shift)  # bounds the running sums' magnitudes
    # recurrence (each step's quotient and log, the running sum), exp and the tail sums' rounding, doubled
    eta = 2.0 * ((W + 2) * U * (6.0 + big + abs(lpq)) + (W + 2) * 1.01 * U)
    ea = log_err(np.array([anchor]), np.array([k0]), m, p, pc)
    if keep_logs:
        return anchor + shift, sf, eta, ea, logn
    return anchor + shift, sf, eta, ea


def tail_sums(m: int, p: float, pc: float, ks: np.ndarray, cache: dict | None = None):
    """(log scale s, S(ks)·e^{-s}, R, η): S(k) = P(Bin(m, p) >= k) summed exactly over a window [min ks, K] by
    the ratio recurrence anchored at log_binom_pmf, R a Chernoff bound on P(N > K) (the remainder the sums
    miss), η the sums' relative error bound apart from the anchor's (common to every sum of the bin)."""
    # a small bin always reads its full window (the result does not depend on ε's path or on ``cache``, which only
    # keeps the windows between evaluations); a large one sums the window this ε needs
    key = (m, p, pc)
    full = cache.get(key, False) if cache is not None else False
    if full is False:
        full = _full_tail(m, p, pc) if _full_size(m, p, pc) <= _FULL_WINDOW_MAX else None
        if cache is not None:
            cache[key] = full
    if full is not None:  # lookups in the bin's full window; outside it, the mass beyond (<= R) is charged
        k0f, sfull, sff, Rf, etaf, eaf, _ = full
        idx = ks - k0f
        val = np.where(idx >= sff.size, 0.0, sff[np.clip(idx, 0, sff.size - 1)])
        return sfull, val, Rf, etaf, eaf
    k0 = max(0, int(ks.min()))
    kmax = min(m, int(ks.max()))
    if k0 > m:  # every k beyond the support: the sums are 0
        return 0.0, np.zeros(ks.size), 0.0, 0.0, 0.0
    l_top, anchor = (float(v) for v in log_binom_pmf(np.array([kmax, k0]), m, p, pc))
    mean, var = m * p, m * p * pc
    # K: beyond it the Chernoff bound exp(-m KL) on P(N > K) is below 1e-18 of the last needed atom (or K = m);
    # the normal approximation's K first, moved up by a tenth of its distance until the bound holds
    need = -(l_top + _LOG_TAIL_REL)
    K = int(mean + math.sqrt(2.0 * var * max(need, 1.0)))
    K = min(m, max(K, kmax))
    while K < m and not (K + 1 > mean and binom_log_kl_scalar(K + 1, m, p, pc) >= need):
        K = min(m, K + max(16, (K - kmax) // 10))
    R = 0.0 if K >= m else certified_tail(-binom_log_kl_scalar(K + 1, m, p, pc))
    shift, sf, eta, ea = _window_sums(m, p, pc, k0, K)
    W = sf.size
    idx = np.clip(ks - k0, 0, None)
    val = np.where(ks > m, 0.0, sf[np.minimum(idx, W - 1)])
    return shift, val, R, eta, ea


def _conv_hockey(m: int, p: float, pc: float, r: int, dl: int, logd: np.ndarray, y_lo: int, y_hi: int,
                 eta_l: float, eps: float, cache: dict | None = None) -> tuple[float, float]:
    """(upper, lower) bounds on δ(P‖Q)(ε), P = (r − D) + N, Q = D + N, N = Bin(m, p), D truncated to its window
    (the dropped mass is added by the caller), given the crossing y_lo <= y_hi of :func:`_crossings`."""
    d = np.arange(dl, dl + logd.size)
    dd = np.exp(logd)
    ts = np.array([y_lo, y_hi])
    kp = ts[:, None] - r + d[None, :]
    kq = ts[:, None] - d[None, :]
    ks = np.concatenate([kp.ravel(), kq.ravel()])
    s, val, R, eta_t, ea = tail_sums(m, p, pc, ks, cache)
    sp = val[: kp.size].reshape(kp.shape) @ dd
    sq = val[kp.size:].reshape(kq.shape) @ dd
    eta = eta_t + log_err(logd) + (logd.size + 2) * U  # the D weights and the dot products
    cf = math.expm1(3.0 * ea)  # the anchor: every sum of the bin shares its factor e^{±ea}
    big = 1.0 + cf

    def term(pv, qv):  # pv − e^eps qv in logs, >= 0 part
        if pv <= 0.0:
            return 0.0
        if qv <= 0.0:
            return pv
        x = eps + math.log(qv) - math.log(pv)
        return 0.0 if x >= 0.0 else pv * -math.expm1(x)  # x >= 0: no positive part (and e^x may overflow)

    def scaled(x):
        return 0.0 if x <= 0.0 else math.exp(s + math.log(x))

    up_hi = term(sp[1] * (1 + eta), sq[1] * (1 - eta))
    band = 2.0 * eta_l * sp[0] * (1 + eta) if y_lo < y_hi else 0.0
    upper = scaled((up_hi + band) * big * (1 + 4 * U)) + 2.0 * R
    if upper == 0.0 and (up_hi + band) > 0.0:
        upper = 5e-324  # the scaled value underflows: the smallest positive double is still above it
    low_core = term(sp[1] * (1 - eta) / big, (sq[1] * (1 + eta) * big) + (R * math.exp(-s) if R else 0.0))
    lower = scaled(low_core * (1 - 4 * U))
    return upper, lower


def default_tail(n: int) -> float:
    """Mass of M ~ Bin((n − 1)r, γ) below the first bin, charged δ = 1: 10⁻¹⁶ (as before issue 21) and at most
    10⁻⁶/n², a millionth of the default δ = 1/n², so that the charge never dominates at population scale."""
    return min(1e-16, 1e-6 / (float(n) * float(n)))


#: bins of M at population scale (n·r above :data:`MAX_CHEU_BITS`): there M's window is ±9 standard deviations of
#: ~1e9, across which δ(P_m‖Q_m) moves by a fraction of a percent, so 16 bins cost ~0.1% of δ and a quarter
#: of the time (below, the 64 bins of the bound as first published)
BINS_AT_SCALE = 16


def cheu_components(n: int, r: int, gamma: float, *, bins: int | None = None, tail: float | None = None):
    """Everything of :func:`cheu_delta` that does not depend on ε (many ε are evaluated at the cost of the
    per-ε crossing searches and tail sums only): a dict with ``below`` (mass of M below the first bin, charged
    δ = 1), the bins' left ends ``ms`` and ``cdf``, upper bounds on P(M < ms[b + 1]), and the target's flipped bits D = Bin(r, γ/2) on
    its window (``dl``, ``logd``) with the certified mass outside it, ``tau_d``."""
    from scipy import stats


    tail = default_tail(n) if tail is None else float(tail)
    q = gamma / 2.0
    n0 = (n - 1) * r
    if bins is None:
        bins = 64 if n * r <= MAX_CHEU_BITS else BINS_AT_SCALE
    dl, logd, tau_d = _d_window(r, q, math.log(tail))
    base = {"r": r, "q": q, "dl": dl, "logd": logd, "tau_d": tau_d}
    if n0 == 0:
        return {**base, "below": 0.0, "ms": np.zeros(1, dtype=np.int64), "cdf": np.zeros(0)}
    # the window of M from the Chernoff bound (scipy's binomial quantiles fail beyond n·r ~ 1e11): the mass below
    # it is certified below ``tail``/2, the mass above goes to the last bin
    lo, hi, lt = chernoff_window_scalar(n0, gamma, math.log(tail))
    m_lo, m_hi = lo, hi + 1
    edges = np.unique(np.linspace(m_lo, m_hi, bins + 1).round().astype(np.int64))
    cdf = stats.binom.cdf(edges[1:] - 1, n0, gamma)  # G_b = P(M < edges[b + 1])
    return {**base, "below": certified_tail(float(lt)), "ms": edges,
            "cdf": np.minimum(1.0, cdf * (1.0 + cdf_rtol(n0)))}


#: relative accuracy allowed to scipy's binomial CDF (boost's incomplete beta; the bins' weights): the bound is
#: summed in Abel's form with the CDF rounded up, so that an error of that size cannot undercut it.  Measured
#: against mpmath (36 digits) in the bins' range (down to ~-9 standard deviations): <= 1.3e-12 up to n·r = 1e9,
#: but 4.3e-10 (gamma = 0.3) and 2.4e-10 (gamma = 0.05) at 1e11, 4e-11 at 2e12 (gamma = 1e-3): 1e-10 up to
#: n·r = 1e9, 1e-6 above (the bound moves by ~1e-9 relative; tests/test_cheu_scale.py)
_CDF_RTOL_SMALL_N0 = 10**9


def cdf_rtol(n0: int) -> float:
    return 1e-10 if n0 <= _CDF_RTOL_SMALL_N0 else 1e-6


#: the computed log-ratio's error allowance: thresholds ε ± this bracket the crossing (checked against the
#: error bound of each evaluation, :func:`_log_pq`; a larger bound widens it)
_ETA_L = 1e-10


def _indexed_evalf(fulls, r, dl, logd, m, p, pc):
    """An evaluator for :func:`_crossings` reading log N from the bins' full windows (:func:`_full_tail`): their
    values carry the anchor's and the recurrence's errors (ea + η); counts outside a window are evaluated by
    :func:`_log_pq` (Loader's form) instead."""
    offs = np.cumsum([0] + [f[6].size for f in fulls])
    flat = np.concatenate([f[6] for f in fulls])
    k0s = np.array([f[0] for f in fulls], dtype=np.int64)
    sizes = np.array([f[6].size for f in fulls], dtype=np.int64)
    e_win = max(f[4] + f[5] for f in fulls)
    d = np.arange(dl, dl + logd.size)

    def evalf(y, rows):
        y = np.asarray(y, dtype=np.int64)[:, None]
        k = np.concatenate([y - r + d[None, :], y - d[None, :]], axis=1)
        rel = k - k0s[rows][:, None]
        inside = (rel >= 0) & (rel < sizes[rows][:, None])
        if not np.all(inside[np.asarray(k >= 0) & np.asarray(k <= m[rows][:, None])]):
            return _log_pq(y[:, 0], m[rows], p, pc, r, dl, logd)  # a count outside a window: Loader's form
        ln = np.where(inside, flat[offs[rows][:, None] + np.clip(rel, 0, None) * inside], -np.inf)
        lnp, lnq = ln[:, : d.size], ln[:, d.size:]
        lp, lq = log_sum_rows(lnp + logd[None, :]), log_sum_rows(lnq + logd[None, :])
        both = np.concatenate([ln[np.isfinite(ln)], logd])
        err = 2.0 * e_win + 2.0 * log_err(logd) + 4.0 * U * r
        err += 8.0 * U * (float(np.max(np.abs(both), initial=0.0)) + logd.size)
        return lp, lq, err

    return evalf


def _bin_deltas(c, eps: float, p: float = 0.5, pc: float = 0.5, lower: bool = False) -> np.ndarray:
    """Per bin: the upper (``lower=False``) or lower bound on δ(P_m‖Q_m)(ε) with N = Bin(m, p)."""
    ms, r, dl, logd = c["ms"], c["r"], c["dl"], c["logd"]
    eta_l = _ETA_L
    evalf = None
    if all(_full_size(int(m), p, pc) <= _FULL_WINDOW_MAX for m in ms.tolist()):  # small bins: read their windows
        cache = c.get("_tails")
        cache = {} if cache is None else cache
        for m in ms.tolist():
            if (m, p, pc) not in cache or cache[(m, p, pc)] is None:
                cache[(m, p, pc)] = _full_tail(m, p, pc)
        c_local = cache
        evalf = _indexed_evalf([c_local[(m, p, pc)] for m in ms.tolist()], r, dl, logd, ms, p, pc)
    while True:
        y_lo, y_hi, err = _crossings(ms, p, pc, r, dl, logd, eps, eta_l, evalf)
        if err <= eta_l:
            break
        eta_l = 2.0 * err
    out = np.empty(ms.size)
    for i, m in enumerate(ms.tolist()):
        lo_i, hi_i = int(min(y_lo[i], y_hi[i])), int(y_hi[i])
        up, low = _conv_hockey(m, p, pc, r, dl, logd, lo_i, hi_i, eta_l, eps,
                               c_local if evalf is not None else c.get("_tails"))
        out[i] = low if lower else up
    return out


def cheu_delta_from(components, eps: float) -> float:
    """:func:`cheu_delta` at ``eps`` from :func:`cheu_components`."""
    c = components
    if c["logd"].size == 0:
        return 1.0
    # u_b >= δ(P_m‖Q_m) at the bin's left end m_b; δ is non-increasing in m, so the running minimum is a
    # non-increasing upper bound, and Σ_b w_b u_b = u_B + Σ_{b<B} G_b (u_b − u_{b+1}) + below·(1 − u_0) needs
    # only upper bounds on G_b = P(M < m_{b+1}) (the CDF rounded up) and on the mass below (charged δ = 1)
    u = np.minimum.accumulate(np.minimum(1.0, _bin_deltas(c, eps) + c["tau_d"]))
    total = u[-1] + float(np.dot(c["cdf"], u[:-1] - u[1:])) + c["below"] * (1.0 - u[0])
    return float(min(1.0, total * (1.0 + (u.size + 4) * U)))


def cheu_delta(n: int, r: int, gamma: float, eps: float, *, bins: int | None = None,
               tail: float | None = None) -> float:
    """Certified upper bound on δ(ε) of Cheu et al.'s protocol ("blanket-binomial", module docstring)."""
    if gamma >= 1.0:
        return 0.0
    return cheu_delta_from(cheu_components(n, r, gamma, bins=bins, tail=tail), eps)


def cheu_lower_delta(n: int, r: int, gamma: float, eps: float) -> float:
    """The all-zeros lower bound (module docstring) from tails: the count Bin((n − 1)r, γ/2) of the others'
    flipped zeros plus the target's r bits all 1 (r − D) against all 0 (D), both directions (the second by the
    reflection c ↦ (n − 1)r + r − c, which maps Bin((n − 1)r, f) to Bin((n − 1)r, 1 − f)), each at the
    threshold of the computed crossing (any threshold gives a lower bound), less the dropped mass of D."""
    q = gamma / 2.0
    n0 = (n - 1) * r
    dl, logd, tau_d = _d_window(r, q, math.log(1e-300))
    c = {"ms": np.array([n0], dtype=np.int64), "r": r, "dl": dl, "logd": logd}
    best = 0.0
    for p, pc in ((q, 1.0 - q), (1.0 - q, q)):
        low = float(_bin_deltas(c, eps, p, pc, lower=True)[0])
        # the dropped mass counts e^eps times: with e^eps beyond the doubles (eps >= 709) nothing is certified
        best = max(best, low - (exp_up(eps) * tau_d if tau_d > 0 else 0.0))
    return max(0.0, best)


def lower_pair(n: int, r: int, gamma: float):
    """(P, Q): the analyser's count of ones when every other user holds 0, the target's x̄ = r against x̄ = 0
    (:func:`shufflesim.maths.rr_count.rr_count_pair_window`), from its mass functions."""
    from shufflesim.maths.rr_count import rr_count_pair_window

    return rr_count_pair_window((n - 1) * r, 0, gamma / 2.0, r)[1:]


class CheuCurves:
    """δ(ε) and ε(δ) of Cheu et al.'s summation with ``n`` users, ``r`` bits each and blanket probability
    ``gamma`` (``tail``: the mass of M below the first bin, :func:`default_tail` when None), both ends: the
    blanket-binomial upper bound and the all-zeros lower end (module docstring).  What does not depend on ε
    (the bins, their full tail windows, the lower pair's mass functions) is computed once, on first use."""

    def __init__(self, n: int, r: int, gamma: float, tail: float | None = None):
        self.n, self.r, self.gamma, self.tail = n, r, gamma, tail
        self._ready = False

    def _prepare(self) -> None:
        if self._ready:
            return
        self._c = cheu_components(self.n, self.r, self.gamma, tail=self.tail) if self.gamma < 1.0 else None
        if self._c is not None:  # many ε: keep each bin's full tail window (small bins only)
            self._c["_tails"] = {}
        # the lower pair from its mass functions up to n·r = MAX_CHEU_BITS, from tails above
        self._pq = lower_pair(self.n, self.r, self.gamma) if self.n * self.r <= MAX_CHEU_BITS else None
        self._ready = True

    def delta_upper(self, eps: float) -> float:
        """The blanket-binomial upper bound on δ(ε)."""
        self._prepare()
        return 0.0 if self._c is None else cheu_delta_from(self._c, eps)

    def delta_lower(self, eps: float) -> float:
        """The all-zeros lower end on δ(ε), never above the upper bound."""
        self._prepare()
        if self._pq is None:
            low = cheu_lower_delta(self.n, self.r, self.gamma, eps)
        else:
            P, Q = self._pq
            exact = max(hockey(P, Q, eps), hockey(Q, P, eps))
            low = max(0.0, exact - PMF_RTOL * (1.0 + exp_up(eps)))  # e^eps rounded up (inf beyond the doubles)
        return min(low, self.delta_upper(eps))

    def delta(self, eps: float) -> tuple[float, float]:
        """(upper, lower) bounds on δ(ε), lower <= upper."""
        return self.delta_upper(eps), self.delta_lower(eps)

    def eps(self, delta: float, eps_max: float) -> tuple[float, float]:
        """(upper, lower) bounds on ε(δ) over [0, ``eps_max``], beyond which δ(ε) = 0 (the local guarantee), by the
        one inverter's bracket of a closed-form profile (:func:`~shufflesim.accounting.numerics.invert.eps_bracket`):
        the upper end inf when even ``eps_max`` leaves more than δ in the bound's truncated mass, the lower end
        ``eps_max`` when the lower curve still exceeds δ there."""
        low, up = eps_bracket(self.delta_upper, self.delta_lower, delta, hi=eps_max, rtol=1e-9)
        return up, min(low, up)

