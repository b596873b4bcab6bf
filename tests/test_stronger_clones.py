"""Issue 9: the stronger clone pair (FMT 2023) and the variation-ratio pairs (Wang et al. 2024) against
brute-force enumeration of real randomisers' shuffled outputs (docs/theory.md#pairs-clone-mixture)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.accounting.exact import shuffle_oracle as O
from shufflesim.accounting.exact.bruteforce import delta_interval
from shufflesim.accounting.pairs import clones_pair
from shufflesim.accounting.pairs.variation import (
    clone_mixture_pair,
    stronger_clones_pair,
    variation_ratio_pair,
    vr_params_blanket,
    vr_params_krr,
    vr_params_ldp,
    vr_params_matrix,
)
from shufflesim.accounting.engines.tight import tight_delta, tight_epsilon
from shufflesim.errors import NotApplicableError


def _upper(pair, eps):
    return delta_interval(pair, eps)[1]


def _blanket_matrix(k_values: int, gamma: float, inputs: int = 4) -> np.ndarray:
    """The summation protocols' blanket randomiser: uniform over k_values with probability gamma, else the
    randomised rounding of x in [0, 1] onto {0, .., k_values - 1}."""
    R = np.zeros((inputs, k_values))
    for i, x in enumerate(np.linspace(0.0, 1.0, inputs)):
        s = x * (k_values - 1)
        lo = int(math.floor(s))
        fr = s - lo
        R[i] += gamma / k_values
        R[i, lo] += (1 - gamma) * (1 - fr)
        if fr > 0:
            R[i, lo + 1] += (1 - gamma) * fr
    return R


RANDOMISERS = {
    "rr2 eps0=1": O.krr_matrix(2, 1.0),
    "krr k=3 eps0=1.5": O.krr_matrix(3, 1.5),
    "krr k=4 gamma=0.25": O.krr_matrix(4, math.log(13.0)),
    "laplace 3->5 eps=1.5": O.discrete_laplace_matrix(3, 5, 1.5),
    "laplace 2->4 eps=2": O.discrete_laplace_matrix(2, 4, 2.0),
    "blanket k=3 gamma=0.3": _blanket_matrix(3, 0.3),
}


@pytest.mark.parametrize("name", sorted(RANDOMISERS))
@pytest.mark.parametrize("n", [2, 3, 5])
def test_stronger_clones_dominates_every_neighbouring_data_set(name, n):
    R = RANDOMISERS[name]
    e0 = O.local_eps(R)
    pair = stronger_clones_pair(n, e0, tail_bound=0.0, as_rows=False)
    for f in (0.0, 0.1, 0.3, 0.6, 0.9):
        worst, arg = O.worst_neighbouring_delta(R, n, f * e0)
        assert worst <= _upper(pair, f * e0) * (1 + 1e-9), (name, n, f, arg)


def test_stronger_clones_dominates_random_ldp_randomisers():
    rng = np.random.default_rng(3)
    for _ in range(25):
        k, m = int(rng.integers(2, 5)), int(rng.integers(2, 5))
        R = np.exp(rng.uniform(0.0, rng.uniform(0.3, 3.0), size=(k, m)))
        R /= R.sum(axis=1, keepdims=True)
        e0 = O.local_eps(R)
        for n in (2, 3):
            pair = stronger_clones_pair(n, e0, tail_bound=0.0, as_rows=False)
            for f in (0.0, 0.3, 0.7):
                worst, _ = O.worst_neighbouring_delta(R, n, f * e0)
                assert worst <= _upper(pair, f * e0) * (1 + 1e-9)


def test_stronger_clones_bounds_binary_rr_but_is_not_attained():
    """Issue 17: the pair bounds binary RR's worst case over every neighbouring data set (enumerated), but binary
    RR does not attain it in general (the adversary of the pair knows which reports are clones; the analyser
    of shuffled binary RR sees only the count).  At n = 3, eps0 = 1, eps = 0.6 the two coincide; elsewhere the
    enumerated worst case is strictly below (n = 4, eps0 = 2, eps = 0.1: 0.5209 vs 0.5351)."""
    below = []
    for n, e0 in [(3, 1.0), (4, 2.0), (5, 1.0), (6, 3.0)]:
        R = O.krr_matrix(2, e0)
        pair = stronger_clones_pair(n, e0, tail_bound=0.0, as_rows=False)
        for f in (0.05, 0.1, 0.3, 0.6, 0.9):
            worst, arg = O.worst_neighbouring_delta(R, n, f * e0)
            bound = _upper(pair, f * e0)
            assert worst <= bound * (1 + 1e-9), (n, e0, f, arg)
            below.append(worst < bound * (1 - 1e-3))
    assert any(below) and not all(below)  # strictly below in general; equal at some points
    R = O.krr_matrix(2, 2.0)
    worst, _ = O.worst_neighbouring_delta(R, 4, 0.1)
    assert worst < _upper(stronger_clones_pair(4, 2.0, tail_bound=0.0, as_rows=False), 0.1) * (1 - 0.02)


def test_stronger_clones_below_koskela_pair():
    for n, e0 in [(5, 1.0), (50, 2.0), (200, 0.5)]:
        sc = stronger_clones_pair(n, e0, tail_bound=0.0, as_rows=False)
        ko = clones_pair(n, e0, tail_bound=0.0)
        for e in (0.1, 0.5):
            assert _upper(sc, e) <= _upper(ko, e) * (1 + 1e-12)


def test_row_form_equals_enumerated_mixture():
    """The row form's atoms are the mixture of the module docstring, computed directly."""
    from scipy.stats import binom

    n, e0 = 6, 1.3
    pair = stronger_clones_pair(n, e0, tail_bound=0.0, as_rows=True)
    lp, lq, r, x = pair.expand(with_outcomes=True)
    t = pair.N[r]
    a = math.exp(e0) / (math.exp(e0) + 1)
    rc = 2 / (math.exp(e0) + 1)
    # P: C = t - 1 clones, A ~ Bin(C, 1/2); target adds to side 0 w.p. a (x - 1 from clones) else side 1
    w = binom.pmf(t - 1, n - 1, rc)
    P = w * (a * binom.pmf(x - 1, t - 1, 0.5) + (1 - a) * binom.pmf(x, t - 1, 0.5))
    Q = w * ((1 - a) * binom.pmf(x - 1, t - 1, 0.5) + a * binom.pmf(x, t - 1, 0.5))
    np.testing.assert_allclose(np.exp(lp), P, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(np.exp(lq), Q, rtol=1e-12, atol=1e-300)
    assert np.exp(lp).sum() == pytest.approx(1.0, rel=1e-12)
    # every loss is at most eps0 (the target's own ratio)
    assert np.max(lp - lq) <= e0 * (1 + 1e-12)


def test_general_variation_ratio_is_stronger_clones():
    vr = variation_ratio_pair(40, *vr_params_ldp(1.5), tail_bound=0.0, as_rows=False)
    sc = stronger_clones_pair(40, 1.5, tail_bound=0.0, as_rows=False)
    np.testing.assert_allclose(vr.log_p, sc.log_p, rtol=1e-12)


def test_koskela_pair_is_a_clone_mixture():
    e0 = 1.2
    a = math.exp(e0) / (math.exp(e0) + 1)
    mix = clone_mixture_pair(30, math.exp(-e0), a, 0.0, tail_bound=0.0, as_rows=False)
    ko = clones_pair(30, e0, tail_bound=0.0)
    for e in (0.2, 0.6):
        assert _upper(mix, e) == pytest.approx(_upper(ko, e), rel=1e-10)


@pytest.mark.parametrize("params,R,n,eps", [
    (vr_params_krr(4, math.log(13.0)), O.krr_matrix(4, math.log(13.0)), 7, 2.0),
    (vr_params_blanket(3, 0.8), _blanket_matrix(3, 0.8), 3, 0.3),
])
def test_variation_ratio_with_residual_is_refuted(params, R, n, eps):
    """With a + b < 1 the variation-ratio pair is below a real data set's exact delta: not offered."""
    with pytest.raises(NotApplicableError):
        variation_ratio_pair(n, *params)
    pair = variation_ratio_pair(n, *params, tail_bound=0.0, as_rows=False, unverified=True)
    worst, _ = O.worst_neighbouring_delta(R, n, eps)
    assert worst > _upper(pair, eps) * 1.05


def test_vr_params_matrix_of_krr():
    p, beta, q = vr_params_matrix(O.krr_matrix(5, 1.0))
    assert (p, beta, q) == pytest.approx(vr_params_krr(5, 1.0), rel=1e-12)


@pytest.mark.parametrize("n,e0,want", [(10**4, 4.0, 0.4108), (10**6, 4.0, 0.0343), (10**6, 9.0, 0.5286)])
def test_issue_table_values(n, e0, want):
    """The issue's table: stronger clones at delta = 1e-6 within 0.1 % of (or below) the published values."""
    (r,) = tight_epsilon(stronger_clones_pair(n, e0), [1e-6])
    assert r.eps_upper <= want * 1.001
    # and not far below either: the issue asks for agreement within 0.1 % with these published values
    assert r.eps_upper >= want * 0.999
    assert r.eps_lower <= r.eps_upper


def test_composition_certified_interval_contains_exact():
    """FFT composition of the new pair: the certified interval contains the exact 2-fold delta."""
    from shufflesim.accounting.exact.bruteforce import hockey_stick

    pair = stronger_clones_pair(60, 1.0, tail_bound=0.0, as_rows=False)
    lp = (pair.log_p[:, None] + pair.log_p[None, :]).ravel()
    lq = (pair.log_q[:, None] + pair.log_q[None, :]).ravel()
    exact = hockey_stick(lp, lq, 0.5)
    (r,) = tight_delta(stronger_clones_pair(60, 1.0), [0.5], compositions=2, exact_max_atoms=1)
    assert r.delta_lower * (1 - 1e-9) <= exact <= r.delta_upper * (1 + 1e-9)


@pytest.mark.parametrize("n,k,gamma", [
    pytest.param(n, k, gamma, marks=pytest.mark.slow) if (n, k) == (4, 6) else (n, k, gamma)  # 6^4 outputs: ~5 s
    for n in (2, 3, 4) for k, gamma in [(2, 0.4), (3, 0.3), (4, 0.25), (6, 0.7)]])
def test_krr_shuffled_view_dominates_every_data_set(k, gamma, n):
    """``KRR(..., "shuffled")`` through account() (the protocols' default view) bounds the exact delta of the
    shuffled k-RR reports for the worst neighbouring data set, found by enumeration."""
    from shufflesim.accounting.account import account
    from shufflesim.maths.rr import eps0_from_gamma
    from shufflesim.mechanisms.krr import KRR

    R = O.krr_matrix(k, eps0_from_gamma(gamma, k))
    e0 = O.local_eps(R)
    for f in (0.05, 0.3, 0.7):
        worst, arg = O.worst_neighbouring_delta(R, n, f * e0)
        got = account(KRR(n, k, gamma, "shuffled"), eps=[f * e0]).results[0]
        assert worst <= got.delta_upper * (1 + 1e-9), (k, gamma, n, f, arg)


@pytest.mark.parametrize("n,k,gamma", [(1000, 5, 0.3), (1000, 20, 0.9), (20000, 5, 0.05), (20000, 60, 0.3)])
def test_shuffled_view_is_below_the_strong_pair(n, k, gamma):
    """Why the protocols certify ``shuffled`` by default: on these settings its pair gives a smaller eps than
    the strong adversary's pair (the default view before; docs/theory.md#adversaries)."""
    from shufflesim.accounting.account import account
    from shufflesim.mechanisms.krr import KRR

    e = {rel: account(KRR(n, k, gamma, rel), delta=[1e-8]).results[0].eps_upper for rel in ("shuffled", "strong")}
    assert e["shuffled"] < e["strong"]
