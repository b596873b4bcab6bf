"""The number of ones that binary randomised response reports for a data set of zeros and ones.

Every bit is reported flipped with probability f, independently.  When ``ones`` bits hold 1 and ``zeros``
hold 0 the count of reported ones is Bin(ones, 1 − f) + Bin(zeros, f); a shuffler releases nothing else
about binary reports, so this count is the sufficient statistic of shuffled binary randomised response
(seed 001 §4, f = 1/(e^{ε0}+1); docs/theory.md#pairs-rr2 and #sufficient-statistics) and of the single
shuffler of Cheu et al.'s unary summation protocol (seed 004 §1, f = γ/2; docs/theory.md#summation-cheu).

* :func:`rr_count_pmf` — the PMF of that count (:func:`rr_count_window`: only where it is non-zero);
* :func:`rr_count_pair` — the two PMFs when a target's ``bits`` bits all hold 0 (P) or all hold 1 (Q) on top
  of the others' ``zeros`` and ``ones`` (one bit: binary randomised response of a "mixed" data set;
  :func:`rr_count_pair_window`: only where they are non-zero);
* :func:`rr2_count_pmfs` — the same in seed 001 §4's parametrisation (n users, local privacy ε0, ``ones``
  of the other n − 1 users hold 1).

The binomial PMFs are restricted to their non-zero entries in double precision before the direct
convolution (products of non-negative terms: relative accuracy in the tails), so a count over 10⁶ bits
costs a convolution of two windows of a few thousand entries each.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.core.checks import check_int, check_real


def _binomial_window(n: int, f: float, *, complement: bool = False) -> tuple[int, np.ndarray]:
    """(first index, PMF over the indices where it is non-zero in double precision) of Bin(n, f), or of
    Bin(n, 1 − f) with ``complement`` — taken as the reversal of Bin(n, f), because 1 − f rounds where f is
    tiny (scipy's PMF at p = 1 − 1e-13 is off by 1e-4 relative in the tails)."""
    from scipy.stats import binom  # on use: importing scipy.stats costs ~0.3 s

    if n == 0 or f == 0.0 or f == 1.0:
        at_n = (f == 1.0) != complement
        return (n if at_n else 0), np.ones(1)
    sd = math.sqrt(n * f * (1.0 - f))
    # beyond 40 standard deviations (and 800 atoms) of the mean every mass is below 1e-320: scan only that
    half = int(40.0 * sd + 800)
    lo, hi = max(0, int(n * f) - half), min(n, int(n * f) + half)
    pmf = binom.pmf(np.arange(lo, hi + 1), n, f)
    nz = np.flatnonzero(pmf)
    first, pmf = lo + int(nz[0]), pmf[nz[0]: nz[-1] + 1]
    if complement:
        return n - (first + pmf.size - 1), pmf[::-1].copy()
    return first, pmf


def rr_count_window(zeros: int, ones: int, flip: float) -> tuple[int, np.ndarray]:
    """(c0, w): the PMF of the number of reported ones, Bin(ones, 1 − flip) + Bin(zeros, flip), is w[c − c0]
    for c in c0 … c0 + len(w) − 1 and below the smallest double (about 1e-320 relative) elsewhere."""
    zeros = check_int("zeros", zeros, minimum=0)
    ones = check_int("ones", ones, minimum=0)
    flip = check_real("flip", flip, low=0.0, high=1.0)
    a0, a = _binomial_window(ones, flip, complement=True)
    b0, b = _binomial_window(zeros, flip)
    return a0 + b0, np.convolve(a, b)


def rr_count_pmf(zeros: int, ones: int, flip: float) -> np.ndarray:
    """PMF over c = 0 … zeros + ones of the number of reported ones: Bin(ones, 1 − flip) + Bin(zeros, flip)."""
    c0, w = rr_count_window(zeros, ones, flip)
    out = np.zeros(zeros + ones + 1)
    out[c0: c0 + w.size] = w
    return out


def rr_count_pair_window(zeros: int, ones: int, flip: float, bits: int = 1) -> tuple[int, np.ndarray, np.ndarray]:
    """(c0, P, Q) of :func:`rr_count_pair` restricted to the counts c0 … c0 + len(P) − 1 outside which both
    PMFs are below the smallest double (for a count over many bits: arrays of a few thousand entries)."""
    bits = check_int("bits", bits, minimum=1)
    b0, base = rr_count_window(zeros, ones, flip)
    p0, tp = rr_count_window(bits, 0, flip)
    q0, tq = rr_count_window(0, bits, flip)
    P, Q = np.convolve(base, tp), np.convolve(base, tq)
    lo, hi = min(p0, q0), max(p0 + P.size, q0 + Q.size)
    outp, outq = np.zeros(hi - lo), np.zeros(hi - lo)
    outp[p0 - lo: p0 - lo + P.size] = P
    outq[q0 - lo: q0 - lo + Q.size] = Q
    return b0 + lo, outp, outq


def rr_count_pair(zeros: int, ones: int, flip: float, bits: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q): the count of ones over the others' ``zeros`` + ``ones`` bits and a target's ``bits`` bits, which
    all hold 0 under P and all hold 1 under Q.  Both arrays cover c = 0 … zeros + ones + bits."""
    c0, P, Q = rr_count_pair_window(zeros, ones, flip, bits)
    total = zeros + ones + bits + 1
    outp, outq = np.zeros(total), np.zeros(total)
    outp[c0: c0 + P.size] = P
    outq[c0: c0 + Q.size] = Q
    return outp, outq


def flip_probability(eps0: float) -> float:
    """1/(e^{ε0} + 1), the flip probability of ε0-LDP binary randomised response (finite for any ε0 ≥ 0)."""
    eps0 = check_real("eps0", eps0, low=0.0)
    t = math.exp(-eps0)
    return t / (1.0 + t)


def rr2_count_pmfs(n: int, eps0: float, ones: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Shuffled ε0-LDP binary randomised response among ``n`` users, ``ones`` of the other n − 1 holding 1 and
    the rest 0: the PMFs over c = 0 … n of the released count of ones when the target holds 0 (P) or 1 (Q)."""
    n = check_int("n", n, minimum=1)
    ones = check_int("ones", ones, minimum=0, maximum=n - 1)
    return rr_count_pair(n - 1 - ones, ones, flip_probability(eps0), 1)
