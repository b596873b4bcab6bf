"""Shuffled binary randomised response: the pair of Koskela et al. (seed 001 §4, eq 4.1)."""

from __future__ import annotations

import math

import numpy as np

from shufflesim.core.checks import check_int, check_positive
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.numerics.binomial import certified_tail, chernoff_window, log_binom_pmf
from shufflesim.accounting.pairs.common import (
    DEFAULT_TAIL_BOUND_1D,
    check_tail_bound,
    flip_probabilities,
    log_budget,
)

REFERENCE_RR2 = "Koskela, Heikkila, Honkela (seed 001) §4, eq 4.1; docs/theory.md#pairs-rr2"


def rr2_pair(n, eps0, *, tail_bound: float = DEFAULT_TAIL_BOUND_1D) -> PMFPair:
    """The neighbouring pair of shuffled binary randomised response (seed 001 §4, eq 4.1).

    Each of n users flips its bit with probability p = 1/(e^eps0 + 1).  For X = (0, ..., 0) and X' with
    the target's bit set to 1, the shuffled output is equivalent to the number of ones:

        P = Bin(n, p),    Q = Bin(n-1, p) + Bern(1-p).

    Outcome i in [0, n].  Closed forms (seed 001 §4.1, f_P and f_Q): with B(i) = P(Bin(n-1, p) = i),
    P(i) = p B(i-1) + (1-p) B(i) and Q(i) = (1-p) B(i-1) + p B(i).  Both sides have full support, so
    there is no infinite-loss mass (delta_{P/Q}(inf) = 0, seed 001 §4.1).

    Caveat (a finding, see tests/test_pairs.py): seed 001 calls this data set pair the worst case, but
    enumerating the other users' bits (:func:`~shufflesim.accounting.exact.bruteforce.rr2_bruteforce` with
    ``n_ones``) finds data sets with a larger delta (e.g. +9% at n = 6, eps0 = 2, eps = 0.05; +19% at
    n = 10, eps0 = 2, eps = 0.2), so this pair's delta is tight for these data sets, not a bound for
    the mechanism over all data sets.

    Truncation: the others' count Y ~ Bin(n-1, p) is restricted to a Chernoff window of mass
    >= 1 - tail_bound; outcomes [lo, hi+1] are kept with exact probabilities and the certified bound on
    the dropped mass is stored in ``tail_p`` = ``tail_q``.  ``tail_bound = 0`` keeps all n+1 outcomes.
    """
    n = check_int("n", n, minimum=1)
    eps0 = check_positive("eps0", eps0)
    tail_bound = check_tail_bound(tail_bound)
    p, q = flip_probabilities(eps0)  # p = 1/(e^eps0+1), q = 1 - p, both without rounding loss
    lo, hi, log_tail = chernoff_window(n - 1, p, log_budget(tail_bound), q)
    lo, hi, log_tail = int(lo), int(hi), float(log_tail)
    i = np.arange(lo, hi + 2)
    lb_prev = log_binom_pmf(i - 1, n - 1, p, q)  # B(i-1)
    lb_here = log_binom_pmf(i, n - 1, p, q)  # B(i)
    lp_, lq_ = math.log(p), math.log(q)
    log_p = np.logaddexp(lp_ + lb_prev, lq_ + lb_here)
    log_q = np.logaddexp(lq_ + lb_prev, lp_ + lb_here)
    tail = certified_tail(log_tail)
    return PMFPair(
        log_p=log_p,
        log_q=log_q,
        name="rr2",
        params={"n": n, "eps0": eps0, "p_flip": p, "tail_bound": tail_bound, "support": (lo, hi + 1)},
        reference=REFERENCE_RR2,
        tail_p=tail,
        tail_q=tail,
    )
