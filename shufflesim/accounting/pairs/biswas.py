"""Biswas, Jung and Palamidessi's fixed-data set setting: the released count of x0 (seed 003 §IV)."""

from __future__ import annotations

import math

import numpy as np

from shufflesim.core.checks import check_int, check_positive, check_real
from shufflesim.errors import ParameterError
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.numerics.binomial import certified_tail, chernoff_window, log_binom_pmf
from shufflesim.accounting.pairs.common import finish

REFERENCE_BISWAS = (
    "Biswas, Jung, Palamidessi (seed 003) Definition IV.2, Theorem IV.1, Appendix A eqs 11-13; "
    "docs/theory.md#pairs-biswas"
)

#: Default and smallest allowed ``tail_bound`` of :func:`biswas_count_pair`.  The count's pmf is a
#: convolution computed in scaled double precision; outcomes below ~1e-280 cannot be computed to full
#: relative accuracy, so they are dropped and counted in the tail.
DEFAULT_TAIL_BOUND_BISWAS = 1e-250
MIN_TAIL_BOUND_BISWAS = 1e-270
_KEEP_LOG_FLOOR = math.log(1e-280)
_LATENT_FACTOR = math.log(1e-20)  # latent windows: 1e-20 of the budget (kept masses exact to that)
_UNDERFLOW = 2.3e-308  # a scaled product below this may be lost to underflow


def krr_eps0_probabilities(k: int, eps0: float) -> tuple[float, float]:
    """(p, pbar) = (e^eps0/(e^eps0+k-1), 1/(e^eps0+k-1)) of k-RR in eps0 form (seed 003 Def III.5)."""
    t = math.exp(-eps0)
    den = 1.0 + (k - 1) * t
    return 1.0 / den, t / den


def check_biswas(n, k, eps0, n_x0):
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    eps0 = check_positive("eps0", eps0)
    n_x0 = check_int("n_x0", n_x0, minimum=0)
    if n_x0 > n - 1:
        raise ParameterError(f"n_x0 (other users holding x0) must be in [0, n-1] = [0, {n - 1}]; got {n_x0}")
    return n, k, eps0, n_x0


def _window(n: int, p: float, log_budget: float, q: float | None = None) -> tuple[int, int, float]:
    lo, hi, lt = chernoff_window(n, p, log_budget, q)
    return int(lo), int(hi), float(lt)


def biswas_count_pair(n, k, eps0, n_x0, *, tail_bound: float = DEFAULT_TAIL_BOUND_BISWAS) -> PMFPair:
    """The released count of x0 when the target user u holds x0 (P) or x1 != x0 (Q).

    Seed 003 §IV-C and Appendix A: n users in all, including u; n_x0 of the *other* n-1 users hold x0
    (Table I: "number of occurrences of x0 in D(x0) except for u") and the remaining n-1-n_x0 hold
    values other than x0.  Each user applies eps0-k-RR: report the true value w.p.
    p = e^eps0/(e^eps0+k-1), each other value w.p. pbar = 1/(e^eps0+k-1).  The released count of x0 is

        P: S = Bin(n_x0, p) + Bin(n-1-n_x0, pbar) + Bern(p)
        Q: S = Bin(n_x0, p) + Bin(n-1-n_x0, pbar) + Bern(pbar)

    (Appendix A eqs 11 and 13 are these sums written out).  With F the pmf of the first two terms,
    P(s) = (1-p) F(s) + p F(s-1) and Q(s) = (1-pbar) F(s) + pbar F(s-1).  Only the count of x0 is
    released here; the full histogram (which also moves the count of x1) is
    :func:`shufflesim.accounting.exact.bruteforce.biswas_histogram_exact`.

    Numerics: F is the direct (not FFT) convolution of the two binomial pmfs, each restricted to a
    Chernoff window of mass >= 1 - 1e-20 * tail_bound and scaled by its maximum; outcomes whose mass is
    below 1e-280 are dropped.  tail_p / tail_q hold a certified bound on the dropped mass plus the
    latent-window and underflow deficits (so kept masses are exact up to an absolute 1e-20*tail_bound).
    ``tail_bound`` must be >= 1e-270.
    """
    n, k, eps0, n_x0 = check_biswas(n, k, eps0, n_x0)
    tail_bound = check_real("tail_bound", tail_bound, low=MIN_TAIL_BOUND_BISWAS, high=0.1)
    p, pbar = krr_eps0_probabilities(k, eps0)
    n_other = n - 1 - n_x0
    lb = math.log(tail_bound) + _LATENT_FACTOR - math.log(2.0)
    lo1, hi1, lt1 = _window(n_x0, p, lb, (k - 1) * pbar)
    lo2, hi2, lt2 = _window(n_other, pbar, lb)
    l1 = log_binom_pmf(np.arange(lo1, hi1 + 1), n_x0, p, (k - 1) * pbar)
    l2 = log_binom_pmf(np.arange(lo2, hi2 + 1), n_other, pbar)
    m1, m2 = float(l1.max()), float(l2.max())
    f = np.convolve(np.exp(l1 - m1), np.exp(l2 - m2))  # direct summation: no cancellation
    with np.errstate(divide="ignore"):
        log_f = np.log(f) + m1 + m2  # F on s = lo1 + lo2 .. hi1 + hi2
    s = np.arange(lo1 + lo2, hi1 + hi2 + 2)
    lf_here = np.concatenate([log_f, [-np.inf]])
    lf_prev = np.concatenate([[-np.inf], log_f])
    log_p = np.logaddexp(math.log1p(-p) + lf_here, math.log(p) + lf_prev)
    log_q = np.logaddexp(math.log1p(-pbar) + lf_here, math.log(pbar) + lf_prev)
    keep = np.maximum(log_p, log_q) >= _KEEP_LOG_FLOOR
    lo_k, hi_k = np.flatnonzero(keep)[[0, -1]]
    dropped = np.concatenate([np.maximum(log_p, log_q)[:lo_k], np.maximum(log_p, log_q)[hi_k + 1 :]])
    # a contiguous range is kept (the pmfs are log-concave); the dropped ones are each < 1e-280
    smallest = float((l1 - m1).min() + (l2 - m2).min())  # log of the smallest scaled product
    underflow = smallest < math.log(1e4 * _UNDERFLOW)
    deficit = (hi1 - lo1 + 1) * (hi2 - lo2 + 2) * _UNDERFLOW * math.exp(m1 + m2) if underflow else 0.0
    tail = (
        certified_tail(float(np.logaddexp(lt1, lt2)))
        + (dropped.size * (1e-280 + deficit) if dropped.size else 0.0)
        + deficit
    )
    sl = slice(lo_k, hi_k + 1)
    log_p, log_q, s = finish(log_p[sl], log_q[sl], s[sl])
    return PMFPair(
        log_p=log_p,
        log_q=log_q,
        name="biswas-count",
        params={
            "n": n,
            "k": k,
            "eps0": eps0,
            "n_x0": n_x0,
            "p_true": p,
            "p_other": pbar,
            "tail_bound": tail_bound,
            "support": (int(s[0]), int(s[-1])),
        },
        reference=REFERENCE_BISWAS,
        tail_p=tail,
        tail_q=tail,
    )
