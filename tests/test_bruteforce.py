"""Tests of the brute-force oracles and of the hockey-stick reference (shufflesim.accounting.exact.bruteforce).

The oracles are themselves checked against closed forms (single user = local randomiser, binomial
convolutions), against each other (information ordering of the adversaries: more side information can
only increase delta) and against invariances (the other users' inputs do not matter once the
adversary knows who randomised).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from shufflesim.accounting.exact import bruteforce as bf
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.errors import NotApplicableError, ParameterError

EPS_GRID = (0.01, 0.1, 0.3, 0.7, 1.5)


def hs(pair: PMFPair, eps: float) -> float:
    return bf.hockey_stick(pair.log_p, pair.log_q, eps)


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=float))


# --------------------------------------------------------------------------------------------------
# hockey stick
# --------------------------------------------------------------------------------------------------


def test_hockey_stick_two_point_closed_form():
    # P = Bern(a), Q = Bern(b): delta_{P||Q} = (a - e^eps b)_+ + ((1-a) - e^eps (1-b))_+
    for a, b in [(0.7, 0.4), (0.2, 0.6), (0.5, 0.5), (0.99, 0.01)]:
        for eps in EPS_GRID:
            e = math.exp(eps)
            pq = max(0, a - e * b) + max(0, (1 - a) - e * (1 - b))
            qp = max(0, b - e * a) + max(0, (1 - b) - e * (1 - a))
            got = bf.hockey_stick(_log([a, 1 - a]), _log([b, 1 - b]), eps)
            assert got == pytest.approx(max(pq, qp), rel=1e-13, abs=1e-16)


def test_hockey_stick_infinite_loss_counts_in_full():
    # outcome 2 has Q = 0: its P-mass counts in full for every eps (seed 001 eq 2.3)
    log_p = _log([0.5, 0.3, 0.2])
    log_q = _log([0.5, 0.5, 0.0])
    for eps in (0.1, 5.0, 50.0):
        assert math.exp(bf.log_hockey_stick(log_p, log_q, eps)) == pytest.approx(0.2, rel=1e-14)
    # and nothing in the other direction beyond the finite atoms
    assert bf.log_hockey_stick(log_q, log_p, 50.0) == -math.inf


def test_log_hockey_stick_far_below_double_range():
    # one atom with P = e^-800, Q = e^-900: delta_{P||Q}(eps) = e^-800 (1 - e^(eps-100)); not representable as a float
    log_p = np.array([-800.0, 0.0])
    log_q = np.array([-900.0, 0.0])
    got = bf.log_hockey_stick(log_p, log_q, 1.0)
    assert got == pytest.approx(-800.0 + math.log1p(-math.exp(1.0 - 100.0)), abs=1e-12)


def test_delta_interval_adds_tails():
    pair = PMFPair(_log([0.6, 0.4]), _log([0.4, 0.6]), "t", tail_p=1e-6, tail_q=2e-6)
    lo, hi = bf.delta_interval(pair, 0.1)
    assert lo == pytest.approx(hs(pair, 0.1))
    d_pq = math.exp(bf.log_hockey_stick(pair.log_p, pair.log_q, 0.1))
    d_qp = math.exp(bf.log_hockey_stick(pair.log_q, pair.log_p, 0.1))
    assert hi == pytest.approx(max(d_pq + 1e-6, d_qp + 2e-6))


# --------------------------------------------------------------------------------------------------
# oracles against closed forms
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k,gamma", [(2, 0.3), (3, 0.5), (5, 0.9)])
def test_single_user_is_the_local_randomiser(k, gamma):
    # n = 1, shuffler-only view: the view is the report; P(true) = 1 - gamma + gamma/k, P(other) = gamma/k
    pair = bf.krr_bruteforce(1, k, gamma, "shuffler")
    hi_, lo_ = 1 - gamma + gamma / k, gamma / k
    eps0 = math.log(hi_ / lo_)
    for eps in EPS_GRID:
        expect = max(0.0, hi_ - math.exp(eps) * lo_) + max(0.0, lo_ - math.exp(eps) * hi_)
        assert hs(pair, eps) == pytest.approx(expect, rel=1e-13, abs=1e-16)
    assert hs(pair, eps0 + 1e-9) == 0.0


@pytest.mark.parametrize("n,eps0,n_ones", [(3, 1.0, 0), (5, 2.0, 0), (5, 0.5, 2), (6, 1.5, 4)])
def test_rr2_bruteforce_matches_binomial_convolution(n, eps0, n_ones):
    # the count of ones is Bin(n-1-j, p) + Bin(j, 1-p) + Bern(p or 1-p)
    p = 1 / (math.exp(eps0) + 1)
    f = np.convolve(binom.pmf(np.arange(n - n_ones), n - 1 - n_ones, p), binom.pmf(np.arange(n_ones + 1), n_ones, 1 - p))
    P, Q = np.convolve(f, [1 - p, p]), np.convolve(f, [p, 1 - p])
    pair, views = bf.rr2_bruteforce(n, eps0, n_ones=n_ones, return_views=True)
    ones = views[:, 1]
    np.testing.assert_allclose(np.exp(pair.log_p), P[ones], rtol=1e-12, atol=1e-17)
    np.testing.assert_allclose(np.exp(pair.log_q), Q[ones], rtol=1e-12, atol=1e-17)


@pytest.mark.parametrize("n", [2, 4, 5])
def test_k2_shuffler_krr_is_rr2(n):
    # 2-RR with flip probability p is the blanket form with gamma = 2p
    eps0 = 1.3
    p = 1 / (math.exp(eps0) + 1)
    a = bf.krr_bruteforce(n, 2, 2 * p, "shuffler")
    b = bf.rr2_bruteforce(n, eps0)
    for eps in EPS_GRID:
        assert hs(a, eps) == pytest.approx(hs(b, eps), rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------------------------------
# oracles against each other and invariances
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,k,gamma", [(3, 2, 0.5), (4, 3, 0.4), (5, 3, 0.8), (4, 4, 0.25)])
def test_more_side_information_never_lowers_delta(n, k, gamma):
    # each view is a post-processing of the next: shuffler <= weak <= strong
    sh, wk, st = (bf.krr_bruteforce(n, k, gamma, a) for a in ("shuffler", "weak", "strong"))
    for eps in EPS_GRID:
        assert hs(sh, eps) <= hs(wk, eps) + 1e-15
        assert hs(wk, eps) <= hs(st, eps) + 1e-15


@pytest.mark.parametrize("adversary", ["weak", "strong"])
def test_other_inputs_do_not_matter_once_coins_are_known(adversary):
    n, k, gamma = 5, 3, 0.45
    base = bf.krr_bruteforce(n, k, gamma, adversary)
    for others in ([1, 1, 1, 1], [2, 0, 1, 2], [0, 2, 2, 0]):
        other = bf.krr_bruteforce(n, k, gamma, adversary, others=others)
        for eps in EPS_GRID:
            assert hs(other, eps) == pytest.approx(hs(base, eps), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("n,k,eps0,n_x0", [(4, 3, 1.0, 1), (5, 3, 2.0, 2), (5, 4, 0.7, 0), (4, 2, 1.5, 3)])
def test_histogram_delta_at_least_count_delta(n, k, eps0, n_x0):
    # the count of x0 is a function of the released histogram
    h = bf.biswas_histogram_exact(n, k, eps0, n_x0)
    c = bf.biswas_count_bruteforce(n, k, eps0, n_x0)
    for eps in EPS_GRID:
        assert hs(c, eps) <= hs(h, eps) + 1e-15


def test_histogram_worst_case_over_other_values():
    # the maximum is at least the default assignment, and is attained by the returned assignment
    n, k, eps0, n_x0, eps = 5, 3, 1.0, 1, 0.1
    worst, others = bf.biswas_histogram_worst(n, k, eps0, n_x0, eps)
    assert worst >= hs(bf.biswas_histogram_exact(n, k, eps0, n_x0), eps)
    assert worst == pytest.approx(hs(bf.biswas_histogram_exact(n, k, eps0, n_x0, others=list(others)), eps))
    assert len(others) == n - 1 - n_x0


def test_pmfs_of_oracles_sum_to_one():
    for pair in (
        bf.rr2_bruteforce(5, 1.0, n_ones=2),
        bf.krr_bruteforce(4, 3, 0.5, "strong"),
        bf.krr_bruteforce(4, 3, 0.5, "weak"),
        bf.clones_bruteforce(5, 1.2),
        bf.biswas_histogram_exact(4, 3, 1.0, 1),
    ):
        assert np.exp(pair.log_p).sum() == pytest.approx(1.0, abs=1e-13)
        assert np.exp(pair.log_q).sum() == pytest.approx(1.0, abs=1e-13)


# --------------------------------------------------------------------------------------------------
# refusals and validation
# --------------------------------------------------------------------------------------------------


def test_enumeration_refused_above_limit_with_the_limit_in_the_message():
    with pytest.raises(NotApplicableError) as e:
        bf.biswas_histogram_exact(12, 4, 1.0, 3)  # 4**12 = 16.8M joint outcomes
    msg = str(e.value)
    assert str(bf.MAX_JOINT_OUTCOMES) in msg and "n <= 10" in msg and "\n" not in msg
    with pytest.raises(NotApplicableError):
        bf.krr_bruteforce(9, 4, 0.5, "weak")


@pytest.mark.parametrize(
    "call",
    [
        lambda: bf.rr2_bruteforce(0, 1.0),
        lambda: bf.rr2_bruteforce(3, 0.0),
        lambda: bf.rr2_bruteforce(3, 1.0, n_ones=3),
        lambda: bf.krr_bruteforce(3, 1, 0.5, "weak"),
        lambda: bf.krr_bruteforce(3, 3, 0.0, "weak"),
        lambda: bf.krr_bruteforce(3, 3, 0.5, "nosy"),
        lambda: bf.krr_bruteforce(3, 3, 0.5, "weak", others=[0, 5]),
        lambda: bf.clones_bruteforce(3, float("inf")),
        lambda: bf.biswas_histogram_exact(3, 3, 1.0, 3),
        lambda: bf.biswas_histogram_exact(3, 3, 1.0, 0, others=[0, 1]),
    ],
)
def test_oracle_parameter_validation(call):
    with pytest.raises(ParameterError) as e:
        call()
    assert "\n" not in str(e.value)
