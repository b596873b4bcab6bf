"""Certified floating-point helpers in log space, shared by every engine of the accountant.

Masses and deltas are handled as natural logarithms so that values down to ~1e-300 keep full relative
precision; converting back to a float is done with a direction (:func:`exp_up` for upper bounds,
:func:`exp_down` for lower bounds), so a certified interval stays certified after rounding.

Error model (IEEE double, unit round-off :data:`U` = 2^-53): a log-space sum of N non-negative terms,
max-shifted and summed pairwise (:func:`log_sum`), is within (log2 N + 4)u plus one exp/log per term
of the exact value; :data:`REL_SLACK` = 1e-12 covers that for N <= 2^60 terms whose logs are at most
~747 in size (terms below e^-745 underflow).  The derivation is in the module docstring of
:mod:`.pld`, which uses these helpers for the hockey-stick divergence of Koskela, Heikkilä, Honkela
(2021, arXiv:2106.00477, eq 2.3).
"""

from __future__ import annotations

import math
import sys
from typing import Sequence

import numpy as np

#: unit round-off of IEEE double precision
U = float(np.finfo(float).eps) / 2.0
#: relative slack covering rounding in a log-space sum of non-negative terms (see module docstring)
REL_SLACK = 1e-12
#: smallest positive double; an upper bound that underflows is reported as this value
TINY = float(np.nextafter(0.0, 1.0))

NEG_INF = -math.inf


def log_sum(values: np.ndarray) -> float:
    """log(sum(exp(values))) for a 1-D array, -inf for an empty array or all -inf.

    Shifted by the maximum, so the relative error is that of a pairwise sum of numbers in [0, 1]
    plus one exp/log per term (within REL_SLACK, see the module docstring).
    """
    if values.size == 0:
        return NEG_INF
    m = float(np.max(values))
    if m == NEG_INF or m == math.inf:
        return m
    return m + math.log(float(np.sum(np.exp(values - m))))


def log_sum_rows(x: np.ndarray) -> np.ndarray:
    """:func:`log_sum` along the last axis of an array (−inf for an all −inf row), max-shifted per row."""
    top = np.max(x, axis=-1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(x - safe[..., None]), axis=-1)) + safe


def group_log_sum(keys: np.ndarray, log_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Merge equal consecutive ``keys`` (already sorted) by log-sum-exp of their ``log_values``.

    Returns (unique keys, merged log-values, relative error bound of the merged masses).  Each group
    is summed as max + log(sum exp(x - max)): c terms in (0, 1] summed sequentially are within
    (c + 2)u relative, plus exp/log rounding; the bound returned, 2(c + 4)u, uses the largest group."""
    n = keys.size
    if n < 2:
        return keys, log_values, 0.0
    same = np.empty(n, dtype=bool)  # same[i]: keys[i] equals keys[i - 1]
    same[0] = False
    np.equal(keys[1:], keys[:-1], out=same[1:])
    n_dup = int(np.count_nonzero(same))
    if n_dup == 0:
        return keys, log_values, 0.0
    if n_dup * 8 < n:
        # few duplicates: merge only the runs that have them, then drop the merged-away entries
        d = np.flatnonzero(same)
        run_start = np.flatnonzero(~same[d - 1])  # indices into d where a run of duplicates begins
        heads = d[run_start] - 1  # first element of each group with duplicates
        sizes = np.diff(np.append(run_start, d.size)) + 1
        sub_idx = np.repeat(heads, sizes) + (np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes))
        _, merged, err = group_log_sum(keys[sub_idx], log_values[sub_idx])
        keep = ~same
        out_vals = log_values[keep]
        out_vals[heads - np.searchsorted(d, heads)] = merged  # heads shift left by the drops before them
        return keys[keep], out_vals, err
    new_group = ~same
    starts = np.flatnonzero(new_group)
    counts = np.empty(starts.size, dtype=np.int64)
    counts[:-1] = np.diff(starts)
    counts[-1] = n - starts[-1]
    out = log_values[starts]
    multi = counts > 1
    if 2 * int(np.count_nonzero(multi)) < starts.size:
        # mostly singletons: work on the elements of the multi-element groups only
        sel = np.repeat(multi, counts)
        vals = log_values[sel]
        c = counts[multi]
        st = np.zeros(c.size, dtype=np.int64)
        np.cumsum(c[:-1], out=st[1:])
    else:
        vals, c, st = log_values, counts, starts
    gmax = np.maximum.reduceat(vals, st)
    safe = np.where(gmax > NEG_INF, gmax, 0.0)
    sums = np.add.reduceat(np.exp(vals - np.repeat(safe, c)), st)
    with np.errstate(divide="ignore"):
        merged = safe + np.log(sums)
    merged[gmax == NEG_INF] = NEG_INF
    if vals is log_values:
        out = merged
    else:
        out[multi] = merged
    return keys[starts], out, 2.0 * (int(counts.max()) + 4) * U


def log_diff_exp(a: float, b: float) -> float:
    """log(e^a - e^b) for a >= b (``-inf`` when equal)."""
    if b == NEG_INF:
        return a
    if b >= a:
        return NEG_INF
    return a + math.log(-math.expm1(b - a))


def log1pexp(x: float) -> float:
    """log(1 + e^x) without overflow or cancellation (e.g. −log of the flip probability 1/(e^ε0 + 1))."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def log_expm1(x: float) -> float:
    """log(e^x − 1) for x > 0, without overflow or cancellation."""
    return x + math.log1p(-math.exp(-x)) if x > 1.0 else math.log(math.expm1(x))


#: largest x whose e^x is a finite double (log of the largest double, ~709.78)
EXP_OVERFLOW = math.log(sys.float_info.max)


def exp_or_inf(x: float) -> float:
    """e^x, or +inf where it exceeds the doubles (x >= :data:`EXP_OVERFLOW`): the one place a formula with e^eps
    meets a huge eps; callers handle inf exactly (a lower end loses its allowance, an upper end turns vacuous)."""
    return math.exp(x) if x < EXP_OVERFLOW else math.inf


def exp_up(log_value: float) -> float:
    """exp for an *upper* bound: one ulp above the rounded value (>= the exact value, also for
    subnormal results, where relative slack would not help); +inf on overflow, 0 only for -inf."""
    if log_value == NEG_INF:
        return 0.0
    if log_value >= 709.7:
        return math.inf
    return math.nextafter(math.exp(log_value), math.inf)


def exp_down(log_value: float) -> float:
    """exp for a *lower* bound: one ulp below the rounded value (<= the exact value)."""
    if log_value == NEG_INF:
        return 0.0
    return math.nextafter(math.exp(min(log_value, 709.7)), 0.0)


def sum_up(*terms: float) -> float:
    """A float >= the exact sum of the terms (correctly rounded sum, then one ulp up)."""
    s = math.fsum(terms)
    return math.nextafter(s, math.inf) if any(terms) else 0.0


def sum_down(*terms: float) -> float:
    """A float <= the exact sum of non-negative terms (clipped at 0)."""
    s = math.fsum(terms)
    return max(math.nextafter(s, 0.0), 0.0) if s > 0 else 0.0



def exp_clamped(log_value: float) -> float:
    """exp(log_value) clamped at e^700 (no overflow), 0 for -inf; a plain estimate, not a bound.

    Used where a magnitude is needed for a heuristic (e.g. the starting point of a search), never
    for a certified bound (use :func:`exp_up` / :func:`exp_down` there)."""
    return 0.0 if log_value == NEG_INF else math.exp(min(log_value, 700.0))


def compose_log_extra(log_finite: Sequence[float], log_other: Sequence[float]) -> float:
    """log( prod_i (f_i + m_i) - prod_i f_i ): mass of product outcomes with >= 1 'other' component.

    Used for the infinite-loss mass of a composition (seed 001 Theorem 5 gives 1 - (1 - m)^{n_c} when
    f + m = 1) and for dropped tails.  Computed as prod f · expm1(sum log1p(m/f)) to avoid
    cancellation when the m_i are tiny.
    """
    lf = np.asarray(log_finite, dtype=float)
    lm = np.asarray(log_other, dtype=float)
    if lm.size == 0 or np.all(lm == NEG_INF):
        return NEG_INF
    if np.any(lf == NEG_INF):
        # some factor has no finite mass: prod f = 0, the answer is prod (f + m)
        return float(np.sum(np.logaddexp(lf, lm)))
    ratio = np.exp(np.minimum(lm - lf, 700.0))
    s = float(np.sum(np.log1p(ratio)))
    if s > 700:
        return float(np.sum(np.logaddexp(lf, lm)))
    val = math.expm1(s)
    if val <= 0:
        return NEG_INF
    return float(np.sum(lf)) + math.log(val)
