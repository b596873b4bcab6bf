"""Genuine lower ends for shuffled k-RR's analyser view: the exact δ of explicit neighbouring data sets.

The shuffled reports of k-RR (``krr --adversary shuffled``; what the protocols release) are only bounded
from above by the dominating pairs (stronger clones, weak, strong; docs/theory.md#adversaries).  A lower end
on the *mechanism's* δ(ε) must be the δ of some neighbouring pair of data sets the mechanism really
meets (issue 17).  This module evaluates such data sets (docs/theory.md#krr-shuffled-lower):

* the target switches its value a → b; of the other n − 1 users, N_a hold a, N_b hold b and
  R = n − 1 − N_a − N_b hold values other than a and b;
* the statistic is (h_a, h_b), the numbers of reports equal to a and to b (the rest are n − h_a − h_b).
  Each other user contributes one report to a, to b or to the rest with probabilities
  (p, p̄, (k−2)p̄) if it holds a, (p̄, p, (k−2)p̄) if it holds b and (p̄, p̄, 1 − 2p̄) otherwise
  (p = e^{ε0}/(e^{ε0}+k−1), p̄ = 1/(e^{ε0}+k−1)); so the others' (h_a, h_b) is the convolution F of three
  trinomials, and the target adds e_a, e_b or nothing:
  P = p F(·−e_a) + p̄ F(·−e_b) + (k−2)p̄ F,  Q the same with p and p̄ exchanged.
* (h_a, h_b) is a post-processing of the histogram, so δ_{P‖Q}(ε) ≤ δ of the histogram for that data set
  ≤ δ of the mechanism: every value here is a lower bound on the mechanism's δ whatever the data set.
  It is the data set's exact δ when R = 0 or k = 3 (then (h_a, h_b) determines the histogram); for k ≥ 4
  and R > 0 it can be below it (the split of the rest over the k − 2 other values carries information when
  the others' values among them are not exchangeable), which is why it is a lower bound, not the exact δ.

Certification: every cell's log-probability is evaluated with Loader's binomial log-PMF (absolute error
~1e-13) or by a direct (not FFT) convolution of non-negative arrays, so each computed cell is within a
relative ``REL_ERR`` of the true one; the δ of an event E is then at least P̂(E)(1 − τ) − e^ε Q̂(E)(1 + τ).
Cells are dropped (never added) outside a window of ±``WINDOW_SD`` standard deviations and where either
side is below 1e-280 (underflow): restricting an event only lowers P(E) − e^ε Q(E)'s claim, it never makes
it exceed the hockey-stick divergence, which is the maximum over all events.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.accounting.numerics.binomial import log_binom_pmf
from shufflesim.accounting.numerics.logspace import exp_or_inf

#: relative error allowed for each computed cell probability and cumulative sum (Loader's log-PMF: ~1e-13
#: absolute in the log; direct convolution of non-negative terms and the cumulative sums: below cells · u)
REL_ERR = 1e-8
#: half-width of the window of the others' counts, in standard deviations (cells outside are dropped)
WINDOW_SD = 14.0
#: all (N_a, N_b) are enumerated up to this n (direct 2-D convolutions, O(n^4) each)
EXHAUSTIVE_N = 12
#: cells below this probability on either side are dropped (their relative accuracy is not claimed)
TINY = 1e-280


def krr_probs(k: int, gamma: float) -> tuple[float, float, float]:
    """(p, p̄, (k−2)p̄): the probabilities that a k-RR report (blanket probability γ) equals the input, one
    given other value, and one of the k − 2 remaining values: (1 − γ + γ/k, γ/k, (k − 2)γ/k)."""
    g = gamma / k
    return 1.0 - gamma + g, g, (k - 2) * g


def _trinomial_log(N: int, u: float, v: float, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """log P(X = x, Y = y) for (X, Y, rest) ~ Mult(N; u, v, 1 − u − v) on the grid xs × ys (−inf off support)."""
    x = xs[:, None]
    y = ys[None, :]
    ok = (x >= 0) & (y >= 0) & (x + y <= N)
    xc = np.clip(x, 0, N)
    rem = np.clip(N - xc, 0, N)
    yc = np.clip(y, 0, None)
    yc = np.minimum(yc, rem)
    vv = v / (1.0 - u) if u < 1.0 else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = log_binom_pmf(xc, N, u) + (log_binom_pmf(yc, rem, min(vv, 1.0)) if vv > 0 else np.where(yc == 0, 0.0, -np.inf))
    return np.where(ok, out, -np.inf)


def _window(N: int, q: float) -> tuple[int, int]:
    m, sd = N * q, math.sqrt(max(N * q * (1.0 - q), 0.0))
    return max(0, int(math.floor(m - WINDOW_SD * sd - 2))), min(N, int(math.ceil(m + WINDOW_SD * sd + 2)))


def _target(logF: np.ndarray, p: float, pb: float, rest: float) -> tuple[np.ndarray, np.ndarray]:
    """log P and log Q on the grid of logF shifted by one (logF has one extra leading row and column)."""
    f00 = logF[1:, 1:]   # F(x, y)
    fa = logF[:-1, 1:]   # F(x − 1, y)
    fb = logF[1:, :-1]   # F(x, y − 1)
    lp, lpb = math.log(p), math.log(pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        P = np.logaddexp(lp + fa, lpb + fb)
        Q = np.logaddexp(lpb + fa, lp + fb)
        if rest > 0:
            lr = math.log(rest)
            P = np.logaddexp(P, lr + f00)
            Q = np.logaddexp(Q, lr + f00)
    return P, Q


def single_type_cells(n: int, k: int, gamma: float, holder: str) -> tuple[np.ndarray, np.ndarray]:
    """log P, log Q (flattened, windowed) for the data set whose n − 1 others all hold ``holder``: "a" (the
    target's value under X), "b" (its value under X′) or "rest" (some third value; k ≥ 3)."""
    p, pb, rest = krr_probs(k, gamma)
    N = n - 1
    u, v = {"a": (p, pb), "b": (pb, p), "rest": (pb, pb)}[holder]
    x0, x1 = _window(N, u)
    y0, y1 = _window(N, v)
    xs = np.arange(x0 - 1, x1 + 2)  # one row/column before (the target's shift) and after (its landing)
    ys = np.arange(y0 - 1, y1 + 2)
    logF = _trinomial_log(N, u, v, xs, ys)
    lP, lQ = _target(logF, p, pb, rest)
    return lP.ravel(), lQ.ravel()


def _direct_conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.signal import convolve

    return convolve(a, b, method="direct")  # non-negative terms: relative accuracy (no FFT cancellation)


def mixed_cells(n: int, k: int, gamma: float, n_a: int, n_b: int) -> tuple[np.ndarray, np.ndarray]:
    """log P, log Q (flattened, full grid) for the data set with N_a = ``n_a``, N_b = ``n_b`` and the other
    n − 1 − N_a − N_b users holding values other than a and b (small n: direct 2-D convolutions)."""
    p, pb, rest = krr_probs(k, gamma)
    r = n - 1 - n_a - n_b
    F = np.ones((1, 1))
    for N, (u, v) in ((n_a, (p, pb)), (n_b, (pb, p)), (r, (pb, pb))):
        if N == 0:
            continue
        ax = np.arange(N + 1)
        F = _direct_conv(F, np.exp(_trinomial_log(N, u, v, ax, ax)))
    Fp = np.zeros((n + 2, n + 2))  # F on 0..n−1 with a zero row/column before and after
    Fp[1:n + 1, 1:n + 1] = F[:n, :n]
    with np.errstate(divide="ignore"):
        lP, lQ = _target(np.log(Fp), p, pb, rest)
    return lP.ravel(), lQ.ravel()


class Curve:
    """The cumulative (P̂(E_j), Q̂(E_j)) of the likelihood-ratio events E_j of one pair, both directions."""

    def __init__(self, lP: np.ndarray, lQ: np.ndarray) -> None:
        keep = (lP > math.log(TINY)) & (lQ > math.log(TINY))
        lP, lQ = lP[keep], lQ[keep]
        order = np.argsort(lQ - lP)  # decreasing loss log P − log Q
        P, Q = np.exp(lP[order]), np.exp(lQ[order])
        self.fwd = (np.cumsum(P), np.cumsum(Q))
        self.bwd = (np.cumsum(Q[::-1]), np.cumsum(P[::-1]))

    def delta_lower(self, eps: float) -> float:
        """A certified lower bound on max(δ_{P‖Q}(ε), δ_{Q‖P}(ε))."""
        ee = exp_or_inf(eps)  # beyond the doubles: inf
        best = 0.0
        for cp, cq in (self.fwd, self.bwd):
            if cp.size:
                with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 where the cumulated Q is 0
                    t = cp * (1.0 - REL_ERR) - np.where(cq > 0, ee * cq * (1.0 + REL_ERR), 0.0)
                best = max(best, float(np.max(t)))
        return best

    def eps_lower(self, delta: float) -> float:
        """A certified lower bound on ε(δ): the largest ε at which some event still has P(E) − e^ε Q(E) > δ
        (0 when none does)."""
        best = 0.0
        for cp, cq in (self.fwd, self.bwd):
            num = cp * (1.0 - REL_ERR) - delta
            ok = num > 0
            if np.any(ok):
                with np.errstate(divide="ignore"):
                    best = max(best, float(np.max(np.log(num[ok]) - np.log(cq[ok] * (1.0 + REL_ERR)))))
        return best


def data_sets(n: int, k: int) -> list[tuple[str, object]]:
    """The explicit data sets evaluated: every (N_a, N_b) for n ≤ EXHAUSTIVE_N, else the three single-value
    data sets (all others hold a, all hold b, all hold one third value)."""
    if n <= EXHAUSTIVE_N:
        out = []
        for na in range(n):
            for nb in range(n - na):
                if k == 2 and na + nb != n - 1:
                    continue  # no third value
                out.append((f"N_a={na}, N_b={nb}, rest={n - 1 - na - nb}", (na, nb)))
        return out
    holders = ("a", "b") if k == 2 else ("a", "b", "rest")
    return [(f"all {n - 1} others hold {h if h != 'rest' else 'a third value'}", h) for h in holders]


def curves(n: int, k: int, gamma: float):
    """Yield (description, Curve) for every data set of :func:`data_sets`."""
    for desc, spec in data_sets(n, k):
        cells = mixed_cells(n, k, gamma, *spec) if isinstance(spec, tuple) else single_type_cells(n, k, gamma, spec)
        yield desc, Curve(*cells)


def krr_shuffled_lower(n: int, k: int, gamma: float, *, eps=None, delta=None) -> tuple[list[float], list[str]]:
    """Per value of ``eps`` (δ lower ends) or ``delta`` (ε lower ends): the largest certified lower bound over
    :func:`data_sets`, and the data set that gave it."""
    vals = list(eps if eps is not None else delta)
    best = [0.0] * len(vals)
    arg = ["none"] * len(vals)
    for desc, c in curves(n, k, gamma):
        for i, v in enumerate(vals):
            x = c.delta_lower(v) if eps is not None else c.eps_lower(v)
            if x > best[i]:
                best[i], arg[i] = x, desc
    return best, arg
