"""Single-use privacy loss distributions: exact delta(eps) and eps(delta) against brute force.

Oracles: the hockey-stick divergence sum_o max(0, P(o) - e^eps Q(o)) (docs/theory.md#hockey-stick; seed 001 eq 2.3)
evaluated in 60-digit arithmetic (mpmath) on the very same float log-probabilities, so that the
reference is exact for the pair as given and the certified interval must contain it.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from shufflesim.accounting.pld.distribution import LossAtoms, PrivacyLossDistribution
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.engines.tight import TightAccountant, tight_delta, tight_epsilon
from shufflesim.errors import DataError, ParameterError, ShufflesimError

mpmath.mp.dps = 60


# --------------------------------------------------------------------------- helpers
def rr2_pair(n: int, eps0: float) -> PMFPair:
    """Shuffled binary randomised response (seed 001 eq 4.1): P = Bin(n, p), Q = Bin(n-1, p) + Bern(1-p)."""
    p = 1.0 / (math.exp(eps0) + 1.0)
    k = np.arange(n + 1)
    lp = binom.logpmf(k, n, p)
    b = binom.logpmf(k, n - 1, p)
    b_shift = np.concatenate(([-np.inf], b[:-1]))
    lq = np.logaddexp(math.log(p) + b, math.log1p(-p) + b_shift)
    return PMFPair(lp, lq, "rr2-test", {"n": n, "eps0": eps0})


def _mp_exp(x: float):
    return mpmath.mpf(0) if x == -math.inf else mpmath.exp(mpmath.mpf(float(x)))


def mp_delta(log_p, log_q, eps: float, direction: str = "max"):
    """Exact hockey-stick divergence of the float log-PMFs (60 digits)."""
    E = mpmath.exp(mpmath.mpf(float(eps)))
    pq = mpmath.mpf(0)
    qp = mpmath.mpf(0)
    for a, b in zip(log_p, log_q):
        p, q = _mp_exp(a), _mp_exp(b)
        if p > E * q:
            pq += p - E * q
        if q > E * p:
            qp += q - E * p
    return {"pq": pq, "qp": qp, "max": max(pq, qp)}[direction]


def contains(lo: float, up: float, exact) -> bool:
    return mpmath.mpf(lo) <= exact <= mpmath.mpf(up)


# --------------------------------------------------------------------------- exact single use
@pytest.mark.parametrize("n,eps0", [(10, 1.0), (50, 0.5), (200, 2.0)])
def test_rr2_single_use_contains_brute_force(n, eps0):
    pair = rr2_pair(n, eps0)
    pld = PrivacyLossDistribution.from_pair(pair)
    for eps in [0.0, 0.01, 0.1, 0.3, 0.7, eps0 * 0.9]:
        b = pld.delta(eps)[0]
        exact = mp_delta(pair.log_p, pair.log_q, eps)
        assert contains(b.delta_lower, b.delta_upper, exact), (eps, b, exact)
        # certified to ~1e-12 relative (REL_SLACK) when positive
        if exact > 0:
            assert (b.delta_upper - b.delta_lower) <= 1e-11 * b.delta_upper
        assert 0.0 <= b.delta_lower <= b.delta_upper <= 1.0
        assert b.method == "tight" and "exact over" in b.notes[0]


@st.composite
def random_pairs(draw, max_size=12):
    """Random PMF pairs on a small support, with outcomes only one side can produce."""
    size = draw(st.integers(2, max_size))
    raw_p = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size)))
    raw_q = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size)))
    # zero some entries on one side (infinite loss) and keep at least one common outcome
    zp = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    zq = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    raw_p[zp & ~zq] = 0.0
    raw_q[zq & ~zp] = 0.0
    raw_p[0] += 0.1
    raw_q[0] += 0.1
    with np.errstate(divide="ignore"):
        lp = np.log(raw_p / raw_p.sum())
        lq = np.log(raw_q / raw_q.sum())
    return PMFPair(lp, lq, "random")


@given(pair=random_pairs(), eps=st.floats(0.0, 3.0))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_pairs_single_use_contains_brute_force(pair, eps):
    pld = PrivacyLossDistribution.from_pair(pair)
    lo, up = pld.delta_interval(eps)
    assert contains(lo[0], up[0], mp_delta(pair.log_p, pair.log_q, eps))
    for d, direction in ((pld.pq, "pq"), (pld.qp, "qp")):
        l1, u1 = d.delta_interval(eps)
        assert contains(l1[0], u1[0], mp_delta(pair.log_p, pair.log_q, eps, direction))


def test_infinite_loss_mass_is_the_limit():
    # outcome 2 only under P, outcome 3 only under Q
    lp = np.log([0.5, 0.3, 0.2, 0.0 + 1e-300])
    lp[3] = -np.inf
    lq = np.log([0.4, 0.5, 1e-300, 0.1])
    lq[2] = -np.inf
    pair = PMFPair(lp, lq, "inf")
    pld = PrivacyLossDistribution.from_pair(pair)
    assert pld.pq.inf_mass == pytest.approx(0.2, rel=1e-15)
    assert pld.qp.inf_mass == pytest.approx(0.1, rel=1e-15)
    b = pld.delta(50.0)[0]  # beyond every finite loss: only the infinite mass remains
    assert b.delta_lower <= 0.2 <= b.delta_upper
    assert b.delta_upper == pytest.approx(0.2, rel=1e-11)


def test_tails_are_added_to_the_upper_bound_only():
    base = rr2_pair(30, 1.0)
    tailed = PMFPair(base.log_p, base.log_q, "t", tail_p=1e-7, tail_q=3e-7)
    p0, p1 = PrivacyLossDistribution.from_pair(base), PrivacyLossDistribution.from_pair(tailed)
    for d0, d1, t in ((p0.pq, p1.pq, 1e-7), (p0.qp, p1.qp, 3e-7)):
        l0, u0 = d0.delta_interval(0.2)
        l1, u1 = d1.delta_interval(0.2)
        assert l1[0] == l0[0]
        assert u1[0] == pytest.approx(u0[0] + t, rel=1e-12)
    b0, b1 = p0.delta(0.2)[0], p1.delta(0.2)[0]
    assert b1.delta_lower == b0.delta_lower
    assert b1.delta_upper == pytest.approx(max(p0.pq.delta_interval(0.2)[1][0] + 1e-7,
                                               p0.qp.delta_interval(0.2)[1][0] + 3e-7), rel=1e-12)


def test_tiny_delta_single_use_in_log_space():
    """delta ~ 1e-191 and 1e-258: full relative precision against 60-digit arithmetic."""
    pair = rr2_pair(5000, 2.0)
    pld = PrivacyLossDistribution.from_pair(pair)
    for eps in (1.5, 1.9):
        b = pld.delta(eps)[0]
        exact = mp_delta(pair.log_p, pair.log_q, eps)
        assert exact < mpmath.mpf("1e-180")
        assert contains(b.delta_lower, b.delta_upper, exact)
        assert float(abs(mpmath.mpf(b.delta_upper) / exact - 1)) < 1e-10


def test_merge_does_not_change_the_answer():
    pair = rr2_pair(40, 1.0)
    # duplicate every outcome: the same losses appear twice with half the mass
    lp = np.concatenate((pair.log_p, pair.log_p)) - math.log(2)
    lq = np.concatenate((pair.log_q, pair.log_q)) - math.log(2)
    dup = PMFPair(lp, lq, "dup")
    a = PrivacyLossDistribution.from_pair(pair)
    m = PrivacyLossDistribution.from_pair(dup, merge=True)
    u = PrivacyLossDistribution.from_pair(dup, merge=False)
    assert m.pq.size == a.pq.size and u.pq.size == 2 * a.pq.size
    for eps in (0.05, 0.3):
        x, y, z = a.delta(eps)[0], m.delta(eps)[0], u.delta(eps)[0]
        assert y.delta_upper == pytest.approx(x.delta_upper, rel=1e-12)
        assert z.delta_upper == pytest.approx(x.delta_upper, rel=1e-12)


def test_monotone_in_eps():
    pld = PrivacyLossDistribution.from_pair(rr2_pair(100, 1.0))
    eps = np.linspace(0, 1.0, 41)
    res = pld.delta(eps)
    ups = np.array([r.delta_upper for r in res])
    los = np.array([r.delta_lower for r in res])
    assert np.all(np.diff(ups) <= 0) and np.all(np.diff(los) <= 0)


def test_monotone_in_n_at_fixed_eps0():
    # more users, more amplification: delta decreases in n
    vals = [PrivacyLossDistribution.from_pair(rr2_pair(n, 1.0)).delta(0.2)[0] for n in (50, 100, 200, 400)]
    for a, b in zip(vals, vals[1:]):
        assert b.delta_upper < a.delta_lower


# --------------------------------------------------------------------------- eps(delta)
@pytest.mark.parametrize("target", [1e-2, 1e-4, 1e-8])
def test_epsilon_interval_brackets_the_brute_force_root(target):
    pair = rr2_pair(200, 1.0)
    pld = PrivacyLossDistribution.from_pair(pair)
    e = pld.epsilon(target)[0]
    assert 0 < e.eps_lower <= e.eps_upper < 1.0
    assert e.eps_upper - e.eps_lower < 1e-7
    # never overshoots: delta at eps_upper is at most the target, at eps_lower it is above
    assert mp_delta(pair.log_p, pair.log_q, e.eps_upper) <= target
    assert mp_delta(pair.log_p, pair.log_q, e.eps_lower) > target


def test_epsilon_edge_cases():
    pld = PrivacyLossDistribution.from_pair(rr2_pair(20, 1.0))
    big = pld.epsilon(0.99)[0]
    assert big.eps_upper == 0.0 and big.eps_lower == 0.0
    # pure DP: delta = 0 needs eps = the largest loss (= eps0 for rr2)
    zero = pld.epsilon(0.0)[0]
    assert zero.eps_upper == pytest.approx(1.0, abs=1e-8)
    # infinite-loss mass above the target: no finite eps
    lp = np.log([0.5, 0.5])
    lq = np.array([0.0, -np.inf])
    inf_pair = PMFPair(lp, lq, "inf")
    r = PrivacyLossDistribution.from_pair(inf_pair).epsilon(0.1)[0]
    assert math.isinf(r.eps_upper)


# --------------------------------------------------------------------------- the user-facing functions
def test_tight_delta_single_use_is_exact_path():
    pair = rr2_pair(60, 1.0)
    res = tight_delta(pair, [0.1, 0.2])
    assert all("exact over" in r.notes[0] for r in res)
    acc = TightAccountant(pair)
    assert acc.mode == "exact"
    eps = tight_epsilon(pair, 1e-5)[0]
    assert mp_delta(pair.log_p, pair.log_q, eps.eps_upper) <= 1e-5


def test_list_eps_results_keep_input_order_and_invariants():
    pair = rr2_pair(60, 1.0)
    res = tight_delta(pair, [0.4, 0.1, 0.2], compositions=2)
    assert [r.eps for r in res] == [0.4, 0.1, 0.2]
    d = {r.eps: r for r in res}
    assert d[0.1].delta_upper >= d[0.2].delta_upper >= d[0.4].delta_upper
    for r in res:
        assert 0 <= r.delta_lower <= r.delta_upper <= 1


# --------------------------------------------------------------------------- validation
def test_bad_inputs_raise_one_line_errors():
    good = rr2_pair(10, 1.0)
    with pytest.raises(DataError) as e1:
        PrivacyLossDistribution.from_pair(PMFPair(good.log_p + 0.1, good.log_q, "bad"))
    with pytest.raises(DataError):
        PrivacyLossDistribution.from_pair(PMFPair(np.full(3, np.nan), np.zeros(3), "nan"))
    with pytest.raises(ParameterError) as e2:
        tight_delta(good, -0.5)
    with pytest.raises(ParameterError):
        tight_epsilon(good, 1.5)
    with pytest.raises(ParameterError):
        tight_delta(good, 0.1, compositions=0)
    with pytest.raises(ParameterError):
        tight_delta(good, 0.1, target_accuracy=2.0)
    with pytest.raises(ParameterError):
        tight_delta("not a pair", 0.1)
    for e in (e1, e2):
        assert isinstance(e.value, ShufflesimError) and "\n" not in str(e.value)


def test_loss_atoms_validation():
    with pytest.raises(DataError):
        LossAtoms(np.array([1.0, 0.0]), np.array([-1.0, -1.0]))
    with pytest.raises(DataError):
        LossAtoms(np.array([0.0, 1.0]), np.array([-1.0]))


def test_symmetric_pair_detected():
    # a pair and its mirror image: P(o) = Q(-o)
    lp = np.log([0.1, 0.2, 0.7])
    lq = lp[::-1].copy()
    pld = PrivacyLossDistribution.from_pair(PMFPair(lp, lq, "sym"))
    assert pld.symmetric
    assert not PrivacyLossDistribution.from_pair(rr2_pair(10, 1.0)).symmetric
