"""Certified delta bounds from moment-generating functions, for deltas below the FFT's round-off floor.

Let S = L_1 + ... + L_r be the finite part of a composed privacy loss (independent components, each a
sub-probability measure over its finite atoms; seed 001 Theorem 5).  The finite part of delta is
E[(1 - e^{eps - S})_+].

Upper bound (Chernoff).  For every lam >= 0 and x real, (1 - e^{-x})_+ <= c(lam) e^{lam x} with

    c(lam) = sup_{x > 0} (1 - e^{-x}) e^{-lam x} = lam^lam / (lam + 1)^(lam + 1)

(the supremum is at e^{-x} = lam/(1 + lam)).  Taking expectations,

    E[(1 - e^{eps - S})_+] <= c(lam) e^{-lam eps} prod_i E_i[e^{lam L_i}],

so log delta_fin <= min_lam  sum_i log E_i[e^{lam L_i}] - lam eps + log c(lam).  The objective is
convex in lam (a sum of log-MGFs, which are convex, and log c, whose second derivative is
1/lam - 1/(1+lam) > 0), so the minimum is found by a bracketed scalar search.  Any lam gives a valid
bound; the search uses a cheap upper envelope of the MGF (:class:`~shufflesim.accounting.pld.mgf.MGFSketch`) and the final value is
evaluated exactly at the chosen lam.  If eps >= sum_i max L_i the finite part is exactly 0.

Lower bound (product event).  For any thresholds u_i with sum u_i > eps, the event {L_i >= u_i for all
i} implies S >= sum u_i, hence

    E[(1 - e^{eps - S})_+] >= (1 - e^{eps - sum u_i}) prod_i P_i(L_i >= u_i).

The thresholds are searched over a common tail level (every component at the same tail mass), and
over all atoms when all components are equal.  This lower bound is honest but can be far below the
truth for large compositions; results that rely on it are flagged in their notes.

Infinite-loss mass composes exactly as prod(f_i + m_i) - prod f_i (= 1 - prod(1 - m_i) for proper
distributions; seed 001 eq 2.3), dropped tails as prod(k_i + t_i) - prod k_i (upper bound only).
Both are computed in log space by :func:`~shufflesim.accounting.numerics.logspace.compose_log_extra`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from shufflesim.accounting.numerics.logspace import (NEG_INF, REL_SLACK, U, compose_log_extra, exp_down, exp_up, sum_down,
                                            sum_up)
from shufflesim.accounting.pld.mgf import log_c
from shufflesim.accounting.pld.distribution import LossAtoms

Components = Sequence[tuple[LossAtoms, int]]


# ---------------------------------------------------------------------------------------------
# composed infinite mass and tails
# ---------------------------------------------------------------------------------------------

def _expand(values: Sequence[float], counts: Sequence[int]) -> np.ndarray:
    return np.repeat(np.asarray(values, dtype=float), np.asarray(counts, dtype=np.int64))


def composed_log_inf_mass(components: Components) -> float:
    """log of the infinite-loss mass of the composition: prod(f_i + m_i) - prod f_i (seed 001 eq 2.3)."""
    counts = [c for _, c in components]
    return compose_log_extra(_expand([a.log_finite_mass for a, _ in components], counts),
                             _expand([a.log_inf_mass for a, _ in components], counts))


def composed_tail(components: Components) -> float:
    """Upper bound on the mass of product outcomes involving a dropped outcome: prod(k+t) - prod k."""
    if all(a.tail == 0.0 for a, _ in components):
        return 0.0
    counts = [c for _, c in components]
    with np.errstate(divide="ignore"):
        lt = [math.log(a.tail) if a.tail > 0 else NEG_INF for a, _ in components]
    v = exp_up(compose_log_extra(_expand([a.log_kept_mass for a, _ in components], counts),
                                 _expand(lt, counts)))
    return min(1.0, v * (1 + 1e-9))


# ---------------------------------------------------------------------------------------------
# Chernoff upper bound
# ---------------------------------------------------------------------------------------------

def _total_max_loss(components: Components) -> float:
    return float(sum(c * (a.max_loss + a.loss_tol) for a, c in components))


def _objective_sketch(components: Components, eps: float, lam: float) -> float:
    return float(sum(c * a.sketch.log_mgf_upper(lam) for a, c in components)) - lam * eps + log_c(lam)


def _objective_exact(components: Components, eps: float, lam: float) -> float:
    """Exact (rounded up) value of the Chernoff objective at lam: losses widened by their tolerance."""
    total = 0.0
    for a, c in components:
        total += c * (a.log_mgf(lam) + lam * a.loss_tol + math.log1p(REL_SLACK + a.mass_rel_err))
    return total - lam * eps + log_c(lam) + math.log1p(REL_SLACK)


def chernoff_log_delta(components: Components, eps: float, *, exact: bool = True) -> tuple[float, float]:
    """(log upper bound on the finite part of delta_dir(eps), lam used); see the module docstring.

    With ``exact=False`` the bound is evaluated on the MGF sketch only (still a valid upper bound,
    slightly looser, and much cheaper for large supports).
    """
    if not components or all(a.size == 0 for a, _ in components):
        return NEG_INF, 0.0
    if any(a.size == 0 for a, c in components if c > 0):
        return NEG_INF, 0.0  # some factor has no finite atoms: no finite product outcome
    if eps >= _total_max_loss(components):
        return NEG_INF, math.inf
    f = lambda lam: _objective_sketch(components, eps, lam)  # noqa: E731
    lam = 1.0
    f1 = f(lam)
    while lam < 1e9 and f(2 * lam) <= f1:
        lam *= 2
        f1 = f(lam)
    hi = 2 * lam
    from scipy.optimize import minimize_scalar  # imported here: heavy, needed only for this bound

    res = minimize_scalar(f, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-6 * hi})
    best = float(res.x)
    candidates = [best, 0.0]
    ev = _objective_exact if exact else (lambda c, e, x: _objective_sketch(c, e, x) + 1e-9)
    vals = [ev(components, eps, x) for x in candidates]
    i = int(np.argmin(vals))
    return float(vals[i]), float(candidates[i])


# ---------------------------------------------------------------------------------------------
# product-event lower bound
# ---------------------------------------------------------------------------------------------

def _suffix_log_mass(a: LossAtoms) -> np.ndarray:
    """log P(L >= losses[j]) over finite atoms, made slightly smaller to cover rounding."""
    sf = np.logaddexp.accumulate(a.log_mass[::-1])[::-1]
    return sf + math.log1p(-min(0.5, (a.size + 10) * 4 * U + REL_SLACK + a.mass_rel_err))


def product_lower_log_delta(components: Components, eps: float, levels: int = 2000) -> float:
    """log of a valid lower bound on the finite part of delta_dir(eps) (product-event bound)."""
    comps = [(a, c) for a, c in components if c > 0]
    if not comps or any(a.size == 0 for a, _ in comps):
        return NEG_INF
    if len(comps) == 1:
        a, c = comps[0]
        u = a.losses - a.loss_tol
        sf = _suffix_log_mass(a)
        gap = c * u - eps
        ok = gap > 0
        if not np.any(ok):
            return NEG_INF
        vals = c * sf[ok] + np.log(-np.expm1(-gap[ok]))
        return float(np.max(vals))
    sfs = [_suffix_log_mass(a) for a, _ in comps]
    top = min(float(s[0]) for s in sfs)
    bottom = max(float(s[-1]) for s in sfs)
    # common tail levels, from the total mass down to the smallest atom of the thinnest component
    lowest = min(float(s[-1]) for s in sfs)
    grid = np.linspace(top, lowest, levels)
    grid = np.unique(np.concatenate((grid, [bottom])))[::-1]
    total_u = np.zeros(grid.size)
    total_lp = np.zeros(grid.size)
    valid = np.ones(grid.size, dtype=bool)
    for (a, c), sf in zip(comps, sfs):
        # j = largest index with sf[j] >= level (sf is non-increasing)
        j = np.searchsorted(-sf, -grid, side="right") - 1
        valid &= j >= 0
        jj = np.maximum(j, 0)
        total_u += c * (a.losses[jj] - a.loss_tol)
        total_lp += c * sf[jj]
    gap = total_u - eps
    ok = valid & (gap > 0)
    if not np.any(ok):
        return NEG_INF
    vals = total_lp[ok] + np.log(-np.expm1(-gap[ok]))
    return float(np.max(vals))


# ---------------------------------------------------------------------------------------------
# bounds for one direction
# ---------------------------------------------------------------------------------------------

def tail_delta_interval(components: Components, eps) -> tuple[np.ndarray, np.ndarray]:
    """Certified (lower, upper) bounds on delta_dir(eps) from the Chernoff and product-event bounds."""
    eps_arr = np.atleast_1d(np.asarray(eps, dtype=float))
    log_inf = composed_log_inf_mass(components)
    inf_up = exp_up(log_inf + math.log1p(REL_SLACK))
    inf_lo = exp_down(log_inf + math.log1p(-REL_SLACK))
    tail = composed_tail(components)
    log_total = sum(c * a.log_finite_mass for a, c in components) + math.log1p(1e-12)
    lo = np.empty(eps_arr.shape)
    up = np.empty(eps_arr.shape)
    for i, e in enumerate(eps_arr):
        lup, _ = chernoff_log_delta(components, float(e))
        llo = product_lower_log_delta(components, float(e))
        fin_up = exp_up(min(lup, log_total))  # the finite part is also at most the total finite mass
        up[i] = min(1.0, sum_up(inf_up, fin_up, tail))
        lo[i] = min(up[i], sum_down(inf_lo, exp_down(llo)))
    return lo, up
