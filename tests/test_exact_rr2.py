"""Issue 17 items 2: the exact privacy of shuffled binary randomised response over every neighbouring data set
(shufflesim.accounting.exact.exact_rr2, rr2 --method exact), checked against oracles written here independently:

* an O(n^2) computation of the count's law R_k for every number k of ones among the n users (k = 0..n) by
  scipy.stats.binom and a stable recursion, and the hockey-stick divergence of every neighbouring pair
  (R_k, R_{k+1}) in both directions;
* brute-force enumeration of every neighbouring data set with the project's shuffle oracle for n <= 7,
  which checks both ends of every rr2 method.

Float tolerances: the O(n^2) oracle's rows agree with scipy's direct convolution to ROW_ATOL (asserted by
test_oracle_recursion_matches_scipy), so its δ is within oracle_atol = (n + 1) ROW_ATOL (1 + e^ε) of the
truth; the enumeration sums a few float terms (relative 1e-9 allowed, far above its round-off).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy.signal import lfilter
from scipy.stats import binom

from shufflesim.accounting.exact import exact_rr2 as X
from shufflesim.accounting.exact import shuffle_oracle as O
from shufflesim.accounting.account import account
from shufflesim.accounting.model.results import DeltaBound, EpsBound
from shufflesim.errors import ParameterError
from shufflesim.mechanisms.rr2 import RR2

TOL = 1e-9
#: absolute accuracy of the oracle's rows (asserted below)
ROW_ATOL = 1e-14


def oracle_atol(n: int, eps: float) -> float:
    return (n + 1) * ROW_ATOL * (1 + math.exp(eps))


# ---- the O(n^2) oracle -------------------------------------------------------------------------------


def count_laws(n: int, eps0: float) -> np.ndarray:
    """Row k: the law of the shuffled count of ones when k of the n users hold 1 (k = 0..n).

    R_0 = Bin(n, p) from scipy; R_{k+1} replaces one Bern(p) report by a Bern(q) one: the deconvolution
    g(y) = (R_k(y) - p g(y-1)) / q is stable (errors shrink by p/q < 1 per step), then R_{k+1} = g * Bern(q).
    Every row is checked against scipy's direct convolution at a few k by the tests."""
    p = 1.0 / (math.exp(eps0) + 1.0)
    q = 1.0 - p
    R = np.zeros((n + 1, n + 1))
    R[0] = binom.pmf(np.arange(n + 1), n, p)
    for k in range(n):
        # forward recursion as a linear filter: g(y) = R_k(y)/q - (p/q) g(y-1), y = 0..n-1
        g = lfilter([1.0 / q], [1.0, p / q], R[k][:n])
        R[k + 1, :n] += p * g
        R[k + 1, 1:] += q * g
        R[k + 1] = np.maximum(R[k + 1], 0.0)
    return R


def direct_law(n: int, eps0: float, k: int) -> np.ndarray:
    p = 1.0 / (math.exp(eps0) + 1.0)
    return np.convolve(binom.pmf(np.arange(k + 1), k, 1 - p), binom.pmf(np.arange(n - k + 1), n - k, p))


def oracle_delta(R: np.ndarray, eps: float) -> float:
    """max over neighbouring pairs (R_k, R_{k+1}), both directions, of the hockey-stick divergence."""
    e = math.exp(eps)
    a, b = R[:-1], R[1:]
    return float(max(np.maximum(a - e * b, 0).sum(axis=1).max(), np.maximum(b - e * a, 0).sum(axis=1).max()))


@pytest.fixture(scope="module")
def laws():
    cache = {}

    def get(n, eps0):
        if (n, eps0) not in cache:
            cache[(n, eps0)] = count_laws(n, eps0)
        return cache[(n, eps0)]

    return get


@pytest.mark.parametrize("n,eps0", [(100, 1.0), (1000, 2.0), (3000, 2.0)])
def test_oracle_recursion_matches_scipy(laws, n, eps0):
    R = laws(n, eps0)
    for k in sorted(set(range(0, n + 1, max(1, n // 50))) | {1, n - 1, n}):
        np.testing.assert_allclose(R[k], direct_law(n, eps0, k), rtol=0, atol=ROW_ATOL)


@pytest.mark.parametrize("n,eps0,eps", [(100, 1.0, 0.2), (100, 1.0, 0.45), (1000, 2.0, 0.1), (1000, 2.0, 0.3),
                                        (3000, 2.0, 0.05), (3000, 2.0, 0.15)])
def test_delta_against_quadratic_oracle(laws, n, eps0, eps):
    truth = oracle_delta(laws(n, eps0), eps)
    atol = oracle_atol(n, eps)
    assert atol < 1e-4 * truth  # the comparison is meaningful at these values
    b = X.delta_bracket(n, eps0, eps)
    assert b.lower <= truth + atol and truth <= b.upper + atol
    assert b.upper - b.lower <= 1e-7 * truth  # exact, not merely bracketed
    r = account(RR2(n, eps0), eps=[eps], method="exact").results[0]
    assert (r.delta_lower, r.delta_upper) == (b.lower, b.upper)  # the method returns the module's bracket


@pytest.mark.parametrize("n,eps0,delta", [(100, 1.0, 1e-3), (1000, 2.0, 1e-6), (3000, 2.0, 1e-5)])
def test_eps_against_quadratic_oracle(laws, n, eps0, delta):
    R = laws(n, eps0)
    b = X.eps_bracket(n, eps0, delta)
    # both ends are checked through the oracle: delta(eps_upper) <= delta <= delta(eps_lower)
    atol = oracle_atol(n, b.lower)
    assert atol < 1e-4 * delta
    assert oracle_delta(R, b.upper) <= delta + atol
    assert oracle_delta(R, b.lower) >= delta - atol  # so the true eps(delta) is in [lower, upper]
    assert b.upper - b.lower <= 1e-8 * b.upper
    r = account(RR2(n, eps0), delta=[delta]).results[0]  # exact is rr2's default method
    assert r.method == "exact" and (r.eps_lower, r.eps_upper) == (b.lower, b.upper)


def test_issue_figures(laws):
    """The issue's figures, from the oracles: n = 4 at eps = 0.1 (the enumeration) and the done-criterion
    eps <= 0.3234 at n = 1000, eps0 = 2, delta = 1e-6 (the O(n^2) oracle gives 0.32332)."""
    worst, _ = O.worst_neighbouring_delta(O.krr_matrix(2, 2.0), 4, 0.1)
    r = account(RR2(4, 2.0), eps=[0.1], method="exact").results[0]
    assert r.delta_lower <= worst * (1 + TOL) and worst <= r.delta_upper * (1 + TOL)
    r = account(RR2(1000, 2.0), delta=[1e-6]).results[0]
    assert r.eps_upper <= 0.3234
    R = laws(1000, 2.0)
    atol = oracle_atol(1000, r.eps_lower)
    assert oracle_delta(R, r.eps_upper) <= 1e-6 + atol and oracle_delta(R, r.eps_lower) >= 1e-6 - atol


# ---- brute force over every neighbouring data set, every method -----------------------------------


def _brute_eps(R, n, delta, eps0):
    lo, hi = 0.0, eps0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if O.worst_neighbouring_delta(R, n, mid)[0] > delta:
            lo = mid
        else:
            hi = mid
    return lo, hi


@pytest.mark.parametrize("n,eps0", [(2, 1.0), (3, 1.0), (4, 2.0), (5, 0.5), (7, 1.5), (7, 3.0)])
def test_every_method_against_brute_force(n, eps0):
    R = O.krr_matrix(2, eps0)
    mech = RR2(n, eps0)
    for f in (0.0, 0.05, 0.3, 0.7):
        eps = f * eps0
        truth, _ = O.worst_neighbouring_delta(R, n, eps)
        for method in RR2.methods:
            r = account(mech, eps=[eps], method=method).results[0]
            if not isinstance(r, DeltaBound):
                continue  # not applicable at this n
            assert truth <= r.delta_upper * (1 + TOL) + 1e-15, (method, n, eps0, eps)
            if r.delta_lower is not None:
                assert r.delta_lower <= truth * (1 + TOL) + 1e-15, (method, n, eps0, eps)
    for delta in (1e-3, 0.05):
        t_lo, t_hi = _brute_eps(R, n, delta, eps0)
        for method in RR2.methods:
            r = account(mech, delta=[delta], method=method).results[0]
            if not isinstance(r, EpsBound):
                continue
            assert t_lo <= r.eps_upper * (1 + TOL) + 1e-12, (method, n, eps0, delta)
            if r.eps_lower is not None:
                assert r.eps_lower <= t_hi * (1 + TOL) + 1e-12, (method, n, eps0, delta)


def test_exact_is_the_enumerated_worst_case():
    for n, eps0, eps in [(3, 1.0, 0.1), (4, 2.0, 0.1), (6, 1.0, 0.2), (7, 2.5, 0.5)]:
        truth, _ = O.worst_neighbouring_delta(O.krr_matrix(2, eps0), n, eps)
        b = X.delta_bracket(n, eps0, eps)
        assert b.lower <= truth * (1 + TOL) and truth <= b.upper * (1 + TOL)
        assert b.upper - b.lower <= 1e-9 * truth


def test_one_direction_suffices():
    """δ(Q_m‖P_m) = δ(P_{n-1-m}‖Q_{n-1-m}) (the module docstring's symmetry), checked by the shuffle oracle."""
    R = O.krr_matrix(2, 1.3)
    n = 6
    for m in range(n):
        others = [1] * m + [0] * (n - 1 - m)
        mirror = [1] * (n - 1 - m) + [0] * m
        lp = O.histogram_law(R, [0, *others])
        lq = O.histogram_law(R, [1, *others])
        lp2 = O.histogram_law(R, [0, *mirror])
        lq2 = O.histogram_law(R, [1, *mirror])
        e = math.exp(0.4)
        d_qp = sum(max(0.0, lq.get(h, 0) - e * lp.get(h, 0)) for h in set(lp) | set(lq))
        d_pq_mirror = sum(max(0.0, lp2.get(h, 0) - e * lq2.get(h, 0)) for h in set(lp2) | set(lq2))
        assert d_qp == pytest.approx(d_pq_mirror, rel=1e-12)
        lo, hi = X.pair_bracket(n - 1, n - 1 - m, 1.3, 0.4)
        assert lo <= d_qp * (1 + TOL) and d_qp <= hi * (1 + TOL)


# ---- compositions ---------------------------------------------------------------------------------------


def _composed_truth(n, eps0, eps, k):
    """The k-fold δ on the same data, maximised over every data set: products of the exact per-data-set laws."""
    R = count_laws(n, eps0)
    best = 0.0
    e = math.exp(eps)
    for j in range(n):
        a, b = R[j], R[j + 1]
        pa, pb = a, b
        for _ in range(k - 1):
            pa = np.multiply.outer(pa, a).ravel()
            pb = np.multiply.outer(pb, b).ravel()
        best = max(best, np.maximum(pa - e * pb, 0).sum(), np.maximum(pb - e * pa, 0).sum())
    return best


@pytest.mark.parametrize("n,eps0,eps,k", [(6, 1.0, 0.3, 2), (12, 2.0, 0.8, 3), (40, 1.0, 0.2, 2)])
def test_compositions_bracket(n, eps0, eps, k):
    """compositions > 1: lower end (composed worst single-use data sets) <= the same-data composed worst case
    (enumerated) <= upper end (stronger clone pair composed, valid even for adaptive composition)."""
    truth = _composed_truth(n, eps0, eps, k)
    (b,) = account(RR2(n, eps0), eps=[eps], method="exact", compositions=k).results
    assert b.delta_lower <= truth * (1 + TOL) and truth <= b.delta_upper * (1 + TOL)
    assert b.delta_lower > 0.5 * truth  # the lower end is a real construction, not 0
    with pytest.raises(ParameterError, match="exact_engine"):  # one home for the composed bracket (issue 28)
        X.delta_bracket(n, eps0, eps, compositions=k)
    (r,) = account(RR2(n, eps0), eps=[eps], method="tight", compositions=k).results  # exact's is b, above
    assert r.delta_lower <= truth * (1 + TOL) and truth <= r.delta_upper * (1 + TOL)


def _stronger_clones_composed_truth(n, eps0, eps, k):
    """The k-fold δ(ε) of Feldman, McMillan, Talwar's stronger clone pair, enumerated independently of the
    library: C ~ Bin(n-1, 2/(e^eps0+1)), A | C ~ Bin(C, 1/2), D ~ Bern(e^eps0/(e^eps0+1)); P puts the mass at
    (A + D, C - A + 1 - D), Q at (A + 1 - D, C - A + D) (docs/theory.md#pairs-stronger-clones), composed as
    products of outcome probabilities."""
    pk, qk = _stronger_clones_composed(n, eps0, k)
    e = math.exp(eps)
    return max(np.maximum(pk - e * qk, 0).sum(), np.maximum(qk - e * pk, 0).sum())


@functools.lru_cache(maxsize=4)
def _stronger_clones_composed(n, eps0, k):
    lo, hi = 1.0 / (math.exp(eps0) + 1.0), math.exp(eps0) / (math.exp(eps0) + 1.0)
    P, Q = np.zeros((n + 1, n + 1)), np.zeros((n + 1, n + 1))
    for c in range(n):
        wc = binom.pmf(c, n - 1, 2.0 * lo)
        for a in range(c + 1):
            w = wc * binom.pmf(a, c, 0.5)
            P[a + 1, c - a] += w * hi
            P[a, c - a + 1] += w * lo
            Q[a, c - a + 1] += w * hi
            Q[a + 1, c - a] += w * lo
    p, q = P.ravel(), Q.ravel()
    keep = (p > 0) | (q > 0)
    p, q = p[keep], q[keep]
    pk, qk = p, q
    for _ in range(k - 1):
        pk, qk = np.multiply.outer(pk, p).ravel(), np.multiply.outer(qk, q).ravel()
    return pk, qk


def _eps_of(delta_of, delta, hi):
    """The smallest ε with delta_of(ε) <= delta (delta_of non-increasing), by bisection to 1e-12 relative."""
    lo = 0.0
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delta_of(mid) > delta else (lo, mid)
    return hi


def test_compositions_eps_bracket():
    """Both ends against brute force, and each end within its stated accuracy of what it computes: the lower end
    is the composed ε of the worst data set to relative precision LOWER_EPS_RTOL (minus the 2kη correction of
    the log-probabilities' error), the upper end the stronger clone pair's composed ε, certified by the PLD
    engine to its default accuracy (target_accuracy, relative in δ, at the answer)."""
    from shufflesim.accounting.engines.tight import Numerics

    n, eps0, k, delta = 40, 1.0, 2, 1e-3
    (r,) = account(RR2(n, eps0), delta=[delta], method="exact", compositions=k).results
    lower, upper, m = r.eps_lower, r.eps_upper, r.provenance.worst_data_set
    assert _composed_truth(n, eps0, lower, k) >= delta * (1 - TOL)
    assert _composed_truth(n, eps0, upper, k) <= delta * (1 + TOL)
    # lower end: the worst data set's exact composed eps (every data set is enumerated by _composed_truth)
    truth = _eps_of(lambda e: _composed_truth(n, eps0, e, k), delta, eps0 * k)
    eta = X.data_set_pair(n, eps0, m).params["log_err"] * k
    assert lower >= truth * (1 - X.LOWER_EPS_RTOL) - 2 * eta - 1e-12 * truth, (lower, truth)
    # upper end: the pair's certified eps, whose delta is within target_accuracy of the target
    pair_truth = _eps_of(lambda e: _stronger_clones_composed_truth(n, eps0, e, k), delta, eps0 * k)
    assert pair_truth <= upper * (1 + TOL)
    assert _stronger_clones_composed_truth(n, eps0, upper, k) >= delta * (1 - Numerics.target_accuracy), \
        (upper, pair_truth)


# ---- the API --------------------------------------------------------------------------------------------


def test_bracket_api():
    b = X.delta_bracket(50, 1.0, 1.0)
    assert (b.lower, b.upper) == (0.0, 0.0)  # exactly 0: every loss is in [-eps0, eps0]
    b = X.delta_bracket(50, 1.0, 0.2)
    with pytest.raises(AttributeError):
        b.lower = 0.0  # frozen
    assert 0 <= b.m < 50 and b.notes
    for bad in [dict(n=0, eps0=1.0, eps=0.1), dict(n=5, eps0=-1.0, eps=0.1), dict(n=5, eps0=1.0, eps=-0.1)]:
        with pytest.raises(ParameterError):
            X.delta_bracket(**bad)
    with pytest.raises(ParameterError):
        X.eps_bracket(5, 1.0, 0.0)


def test_worst_m_moves_with_eps():
    """docs/theory.md#exact-rr2: at small n the worst data set is interior (n = 4, eps0 = 2, eps = 0.1: one of
    the three others holds 1), at larger eps it is m = 0 (or n - 1); the branch and bound reports it and the
    enumeration agrees."""
    R = O.krr_matrix(2, 2.0)
    for eps, want_interior in [(0.1, True), (1.0, False)]:
        _, (x0, x1, others) = O.worst_neighbouring_delta(R, 4, eps)
        m = X.delta_bracket(4, 2.0, eps).m
        interior = 0 < m < 3
        assert interior == want_interior
        ones = sum(others)
        assert (0 < ones < 3) == want_interior


def test_far_interior_worst_m():
    """docs/theory.md#exact-rr2 (iii): at n = 100, eps0 = 4, eps = 0.08 the worst data set is far inside
    (m = 44 ones among the others in the direction P_m || Q_m): every m evaluated one by one agrees with the
    branch and bound, which needs far fewer evaluations."""
    n, eps0, eps = 100, 4.0, 0.08
    each = [X.pair_bracket(n - 1, m, eps0, eps) for m in range(n)]
    best = max(range(n), key=lambda m: each[m][0])
    b = X.delta_bracket(n, eps0, eps)
    assert b.m == best and 10 < best < n - 10
    assert b.lower <= each[best][1] and each[best][0] <= b.upper
    assert max(hi for _, hi in each) <= b.upper  # no m escapes the certified upper end
    assert b.evaluations < n


def test_krr_k2_shuffled_exact_is_binary_rr_and_brackets_brute_force():
    # k-RR with k = 2 releases binary RR at eps0 = log(2/gamma - 1): `exact` for the shuffled reports is rr2's
    # exact value, both ends certified against every enumerated data set
    from shufflesim.accounting import account
    from shufflesim.accounting.exact.shuffle_oracle import krr_matrix, worst_neighbouring_delta
    from shufflesim.mechanisms import KRR, RR2
    from shufflesim.maths.rr import eps0_from_gamma

    for n, gamma, eps in ((4, 0.3, 0.1), (6, 0.5, 0.4), (5, 0.2, 1.0)):
        mech = KRR(n, 2, gamma, "shuffled")
        (r,) = account(mech, eps=[eps], method="exact").results
        e0 = eps0_from_gamma(gamma, 2)
        truth = worst_neighbouring_delta(krr_matrix(2, e0), n, eps)[0]
        assert r.delta_lower <= truth * (1 + 1e-9) and truth <= r.delta_upper * (1 + 1e-9)
        (b,) = account(RR2(n, e0), eps=[eps]).results
        assert r.delta_upper == pytest.approx(b.delta_upper, rel=1e-9)
        (best,) = account(mech, eps=[eps], method="best").results
        assert best.delta_upper <= r.delta_upper * (1 + 1e-12)
