"""Brute-force oracle for *real* randomisers: the exact law of the shuffled output (the histogram of the n
reports) of any finite local randomiser on two neighbouring data sets, and its exact δ(ε).

A randomiser is a matrix ``R`` (inputs x outputs) of probabilities; a data set is the list of the n users'
inputs.  The shuffled output is (a post-processing of, and a sufficient statistic for) the multiset of
reports, i.e. the histogram over outputs; its law is the convolution of the users' categorical laws,
computed exactly by dynamic programming over histograms.  Used by the tests to check that a claimed
dominating pair (stronger clones, variation ratio) bounds every enumerated neighbouring data set
(docs/theory.md#pairs-clone-mixture).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from shufflesim.errors import NotApplicableError

#: largest number of histograms the oracle holds (C(n + m - 1, m - 1) for n users and m outputs)
MAX_HISTOGRAMS = 200_000


def histogram_law(R, data) -> dict[tuple[int, ...], float]:
    """{histogram: probability} of the shuffled reports of users with inputs ``data`` under randomiser R."""
    R = np.asarray(R, dtype=float)
    m = R.shape[1]
    n = len(data)
    if math.comb(n + m - 1, m - 1) > MAX_HISTOGRAMS:
        raise NotApplicableError(f"{math.comb(n + m - 1, m - 1)} histograms exceed the oracle's limit")
    law: dict[tuple[int, ...], float] = {(0,) * m: 1.0}
    for x in data:
        row = R[x]
        nxt: dict[tuple[int, ...], float] = {}
        for h, p in law.items():
            for y in range(m):
                if row[y] == 0.0:
                    continue
                g = h[:y] + (h[y] + 1,) + h[y + 1:]
                nxt[g] = nxt.get(g, 0.0) + p * row[y]
        law = nxt
    return law


def neighbouring_delta(R, others, x0: int, x1: int, eps: float) -> float:
    """Exact δ(ε) = max of both hockey-stick divergences between the shuffled outputs on
    (x0, *others) and (x1, *others)."""
    lp = histogram_law(R, [x0, *others])
    lq = histogram_law(R, [x1, *others])
    keys = set(lp) | set(lq)
    ee = math.exp(eps)
    d_pq = sum(max(0.0, lp.get(h, 0.0) - ee * lq.get(h, 0.0)) for h in keys)
    d_qp = sum(max(0.0, lq.get(h, 0.0) - ee * lp.get(h, 0.0)) for h in keys)
    return max(d_pq, d_qp)


def worst_neighbouring_delta(R, n: int, eps: float) -> tuple[float, tuple]:
    """Largest exact δ(ε) over every neighbouring pair of data sets of n users (target inputs x0 != x1,
    every multiset of the other n - 1 inputs).  Returns (δ, (x0, x1, others))."""
    R = np.asarray(R, dtype=float)
    k = R.shape[0]
    best, arg = 0.0, ()
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        for x0, x1 in itertools.permutations(range(k), 2):
            d = neighbouring_delta(R, others, x0, x1, eps)
            if d > best:
                best, arg = d, (x0, x1, others)
    return best, arg


# ---- matrices of real randomisers ----

def krr_matrix(k: int, eps0: float) -> np.ndarray:
    """k-RR: report the true value with probability e^eps0/(e^eps0 + k - 1), each other value 1/(e^eps0 + k - 1)."""
    e = math.exp(eps0)
    return (np.ones((k, k)) + (e - 1.0) * np.eye(k)) / (e + k - 1.0)


def discrete_laplace_matrix(k_in: int, k_out: int, eps0: float) -> np.ndarray:
    """A Laplace-type randomiser discretised: input x in {0..k_in-1} mapped to u = x (k_out-1)/(k_in-1), output
    y in {0..k_out-1} with probability proportional to exp(-eps0 |y - u| / (k_out - 1)) (a discretised,
    truncated Laplace mechanism on [0, 1] with scale 1/eps0; its own local epsilon is at most 2 eps0 and is
    computed from the matrix by :func:`local_eps`)."""
    u = np.arange(k_in) * (k_out - 1) / (k_in - 1)
    y = np.arange(k_out)
    w = np.exp(-eps0 * np.abs(y[None, :] - u[:, None]) / (k_out - 1))
    return w / w.sum(axis=1, keepdims=True)


def local_eps(R) -> float:
    """The randomiser's local epsilon: max over inputs x, x' and outputs y of log R[x, y]/R[x', y]."""
    L = np.log(np.asarray(R, dtype=float))
    return float(np.max(L[:, None, :] - L[None, :, :]))
