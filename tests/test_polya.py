"""Pólya and discrete Laplace noise, exact uniform sampling and additive sharing in Z_q (shufflesim.maths.polya).

Oracles: scipy's negative binomial at p = 1 − α and direct summation for the closed forms; chi-square
goodness of fit against the exact pmfs for the samplers; Python integers for every modular identity.

Statistical tests use fixed seeds and a per-test significance level of ALPHA_TEST = 1e-4; there are fewer
than ten such tests in this file, so the family-wise level is below 1e-3 (Bonferroni).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from shufflesim.errors import ParameterError
from shufflesim.maths.polya import (
    MAX_Q,
    add_mod,
    additive_shares,
    decode_centered,
    dlap_logpmf,
    dlap_upper_tail,
    dlap_upper_tail_second_moment,
    dlap_variance,
    dlap_variance_from_scale,
    polya_logpmf,
    polya_mean_var,
    reduce_mod,
    sample_dlap,
    sample_polya,
    sample_polya_difference,
    sub_mod,
    sum_mod,
    uniform_mod_q,
)

ALPHA_TEST = 1e-4
Q_NEAR_2_62 = 2**62 - 57  # the largest prime below 2^62
Q_MAX_PRIME = 2**64 - 59  # the largest prime below 2^64


def gof_pvalue(samples: np.ndarray, values: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square p-value of integer ``samples`` against pmf ``probs`` on ``values`` (rest = one cell).

    Cells with expected count below 5 (chosen from the pmf alone, before looking at the data) are pooled.
    """
    samples = np.asarray(samples)
    n = samples.size
    lo = int(values[0])
    idx = samples - lo
    inside = (idx >= 0) & (idx < values.size)
    counts = np.bincount(idx[inside], minlength=values.size).astype(float)
    obs_other = n - counts.sum()
    p_other = max(0.0, 1.0 - float(np.sum(probs)))
    exp = probs * n
    keep = exp >= 5
    obs = list(counts[keep])
    expv = list(exp[keep])
    pooled_obs = counts[~keep].sum() + obs_other
    pooled_exp = exp[~keep].sum() + p_other * n
    if pooled_exp >= 5:
        obs.append(pooled_obs)
        expv.append(pooled_exp)
    else:  # fold a tiny pooled cell into the smallest kept cell
        j = int(np.argmin(expv))
        obs[j] += pooled_obs
        expv[j] += pooled_exp
    obs, expv = np.array(obs), np.array(expv)
    expv *= obs.sum() / expv.sum()
    return float(stats.chisquare(obs, expv).pvalue)


# --- Pólya ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("r,alpha", [(0.1, 0.8), (1e-3, 0.99), (2.5, 0.3), (1.0, 0.5)])
def test_polya_logpmf_is_scipy_nbinom_at_p_one_minus_alpha(r, alpha):
    z = np.arange(0, 400)
    np.testing.assert_allclose(polya_logpmf(z, r, alpha), stats.nbinom.logpmf(z, r, 1.0 - alpha), rtol=1e-10)
    # r = 1 is the geometric α^z (1 − α)
    if r == 1.0:
        np.testing.assert_allclose(np.exp(polya_logpmf(z, r, alpha)), alpha**z * (1 - alpha), rtol=1e-12)
    assert polya_logpmf(-1, r, alpha) == -np.inf


def test_polya_moments_by_summation():
    r, alpha = 0.37, 0.9
    z = np.arange(0, 4000)
    pmf = np.exp(polya_logpmf(z, r, alpha))
    mean, var = polya_mean_var(r, alpha)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert (z * pmf).sum() == pytest.approx(mean, rel=1e-10)
    assert ((z - mean) ** 2 * pmf).sum() == pytest.approx(var, rel=1e-10)


@pytest.mark.parametrize("r,alpha,seed", [(0.1, 0.8, 1), (1e-3, 0.99, 2), (2.5, 0.3, 3)])
def test_polya_sampler_chisquare(r, alpha, seed):
    n = 200_000
    x = sample_polya(r, alpha, n, rng=seed)
    values = np.arange(0, 3000)
    probs = np.exp(polya_logpmf(values, r, alpha))
    assert gof_pvalue(x, values, probs) > ALPHA_TEST


def test_polya_chisquare_detects_the_wrong_parametrisation():
    """The goodness-of-fit test has power: numpy's negative binomial at p = α (not 1 − α) is rejected."""
    r, alpha = 0.5, 0.7
    wrong = np.random.default_rng(4).negative_binomial(r, alpha, size=50_000)
    values = np.arange(0, 500)
    assert gof_pvalue(wrong, values, np.exp(polya_logpmf(values, r, alpha))) < 1e-12


@pytest.mark.parametrize("n_users,alpha,reps,seed", [(50, 0.8, 40_000, 5), (200, 0.98, 20_000, 6)])
def test_sum_of_n_polya_differences_is_dlap(n_users, alpha, reps, seed):
    z = sample_polya_difference(n_users, alpha, (reps, n_users), rng=seed).sum(axis=1)
    values = np.arange(-3000, 3001)
    assert gof_pvalue(z, values, np.exp(dlap_logpmf(values, alpha))) > ALPHA_TEST
    # and a single user's share is not DLap (the test would notice)
    one = sample_polya_difference(n_users, alpha, reps, rng=seed + 100)
    assert gof_pvalue(one, values, np.exp(dlap_logpmf(values, alpha))) < 1e-12


# --- discrete Laplace -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.2, 0.9, math.exp(-1e-3)])
def test_dlap_closed_forms_by_summation(alpha):
    k = int(math.ceil(60 / -math.log(alpha)))  # α^k < e^-60
    z = np.arange(-k, k + 1)
    pmf = np.exp(dlap_logpmf(z, alpha))
    assert math.fsum(pmf) == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(z.astype(float) ** 2 * pmf) == pytest.approx(dlap_variance(alpha), rel=1e-9)
    t = -math.log(alpha)
    assert dlap_variance_from_scale(t) == pytest.approx(dlap_variance(alpha), rel=1e-9)
    for a in (0, 1, 7, k // 3):
        tail = pmf[z >= a]
        assert dlap_upper_tail(a, alpha) == pytest.approx(math.fsum(tail), rel=1e-9)
        m2 = math.fsum((z[z >= a].astype(float) ** 2 * tail))
        assert dlap_upper_tail_second_moment(a, alpha) == pytest.approx(m2, rel=1e-9)
    assert dlap_upper_tail(-3, alpha) == pytest.approx(math.fsum(pmf[z >= -3]), rel=1e-9)


def test_dlap_sampler_chisquare():
    alpha = 0.85
    x = sample_dlap(alpha, 200_000, rng=7)
    values = np.arange(-300, 301)
    assert gof_pvalue(x, values, np.exp(dlap_logpmf(values, alpha))) > ALPHA_TEST


def test_parameter_checks():
    with pytest.raises(ParameterError):
        sample_polya(0.0, 0.5, 3)
    with pytest.raises(ParameterError):
        sample_polya(1.0, 1.0, 3)
    with pytest.raises(ParameterError):
        uniform_mod_q(1, 3)
    with pytest.raises(ParameterError):
        uniform_mod_q(2**64, 3)


# --- uniform sampling mod q ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("q,seed", [(7, 8), (10, 9), (2**5, 10)])
def test_uniform_mod_q_small_chisquare(q, seed):
    x = uniform_mod_q(q, 70_000, rng=seed)
    assert x.dtype == np.uint64 and int(x.max()) < q
    assert stats.chisquare(np.bincount(x.astype(np.int64), minlength=q)).pvalue > ALPHA_TEST


@pytest.mark.parametrize("q", [Q_NEAR_2_62, 3 * 2**62, Q_MAX_PRIME])
def test_uniform_mod_q_large_has_no_modulo_bias(q):
    """Eight equal-width buckets of [0, q); their exact probabilities are computed with Python ints.

    For q = 3·2⁶², reducing a 64-bit word mod q without rejection would put mass 1/2 on [0, 2⁶²) instead
    of 1/3: the test would see it.
    """
    n = 80_000
    x = uniform_mod_q(q, n, rng=11)
    assert int(x.max()) < q
    width = q // 8
    bucket = np.minimum(x // np.uint64(width), np.uint64(7)).astype(np.int64)
    obs = np.bincount(bucket, minlength=8)
    probs = np.array([width] * 7 + [q - 7 * width], dtype=float) / q
    assert stats.chisquare(obs, probs * n).pvalue > ALPHA_TEST
    if q == 3 * 2**62:
        naive = np.random.default_rng(11).integers(0, 2**64, size=n, dtype=np.uint64) % np.uint64(q)
        lowq = (naive < np.uint64(2**62)).mean()
        assert abs(lowq - 0.5) < 0.01  # what the naive reduction gives (1/2, not 1/3)
        assert abs((x < np.uint64(2**62)).mean() - 1 / 3) < 4 * math.sqrt(2 / 9 / n)


def test_uniform_mod_q_is_reproducible_and_power_of_two_path():
    a = uniform_mod_q(2**40, (3, 1000), rng=12)
    b = uniform_mod_q(2**40, (3, 1000), rng=12)
    assert a.shape == (3, 1000) and np.array_equal(a, b)
    assert int(a.max()) < 2**40


# --- modular arithmetic -------------------------------------------------------------------------------------------
MODULI = [2, 3, 7, 2**31 - 1, Q_NEAR_2_62, 2**63, Q_MAX_PRIME, MAX_Q]


@pytest.mark.parametrize("q", MODULI)
def test_reduce_add_sub_mod_agree_with_python_ints(q):
    g = np.random.default_rng(13)
    v = g.integers(-(2**63), 2**63 - 1, size=2000, dtype=np.int64, endpoint=True)
    v[:4] = [-(2**63), 2**63 - 1, 0, -1]
    r = reduce_mod(v, q)
    assert r.dtype == np.uint64
    assert [int(t) for t in r] == [int(t) % q for t in v]
    a, b = uniform_mod_q(q, 2000, rng=14), uniform_mod_q(q, 2000, rng=15)
    a[:2], b[:2] = q - 1, q - 1
    assert [int(t) for t in add_mod(a, b, q)] == [(int(s) + int(t)) % q for s, t in zip(a, b)]
    assert [int(t) for t in sub_mod(a, b, q)] == [(int(s) - int(t)) % q for s, t in zip(a, b)]
    assert sum_mod(a, q) == sum(int(t) for t in a) % q


@pytest.mark.parametrize("q", [2, 7, 10, 1001, 2**20])
def test_decode_round_trips_every_value_of_the_window(q):
    """Every v with −q/2 < v ≤ q/2, negative ones included, survives reduction, sharing, summing, decoding."""
    v = np.arange(-((q - 1) // 2), q // 2 + 1, dtype=np.int64)
    assert v.size == q
    shares = additive_shares(reduce_mod(v, q), 5, q, rng=16)
    # the row sums in int64 are exact here (5 shares below q <= 2^20: below 2^23), the same as Python ints
    assert q <= 2**20 and np.asarray(shares).shape == (q, 5)
    totals = np.asarray(shares).astype(np.int64).sum(axis=1) % q
    decoded = [decode_centered(t, q) for t in totals.tolist()]
    assert decoded == v.tolist()


@pytest.mark.parametrize("q", [Q_NEAR_2_62, Q_MAX_PRIME])
def test_decode_round_trip_near_the_largest_moduli(q):
    g = np.random.default_rng(17)
    half = (q - 1) // 2  # the window is −half ≤ v ≤ q − 1 − half
    v = g.integers(-half, half, size=500, dtype=np.int64, endpoint=True)
    v[:4] = [-1, 0, -half, half]
    shares = additive_shares(reduce_mod(v, q), 9, q, rng=18)  # 8·(q − 1) ≥ 2⁶⁴: the exact add_mod path
    totals = shares.astype(object).sum(axis=1) % q
    assert [decode_centered(t, q) for t in totals] == v.tolist()
    # the sum of many noisy values (small enough to stay in the window) decodes to their exact sum
    w = g.integers(-(2**48), 2**40, size=5000, dtype=np.int64)
    shares = additive_shares(reduce_mod(w, q), 9, q, rng=19)
    total = sum_mod(shares.reshape(-1), q)
    assert decode_centered(total, q) == int(w.astype(object).sum()) < 0


# --- additive shares ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("q,m", [(5, 4), (1000, 3), (Q_NEAR_2_62, 10), (MAX_Q, 4)])
def test_shares_sum_to_the_value(q, m):
    vals = uniform_mod_q(q, 3000, rng=19)
    sh = additive_shares(vals, m, q, rng=20)
    assert sh.shape == (3000, m) and sh.dtype == np.uint64
    assert np.all(sh < np.uint64(q))
    assert np.array_equal(sh.astype(object).sum(axis=1) % q, vals.astype(object))
    # each share index is contiguous in memory (one shuffler's channel)
    assert sh[:, 0].flags["C_CONTIGUOUS"]


def test_each_share_alone_and_any_m_minus_1_jointly_are_uniform():
    """q = 5, m = 3, every user holds 2: each share is uniform on Z_5 and every pair is uniform on Z_5²."""
    q, m, n = 5, 3, 50_000
    sh = additive_shares(np.full(n, 2, dtype=np.uint64), m, q, rng=21).astype(np.int64)
    assert np.all(sh.sum(axis=1) % q == 2)
    for j in range(m):
        assert stats.chisquare(np.bincount(sh[:, j], minlength=q)).pvalue > ALPHA_TEST / 6
    for j, k in ((0, 1), (0, 2), (1, 2)):
        cells = np.bincount(sh[:, j] * q + sh[:, k], minlength=q * q)
        assert stats.chisquare(cells).pvalue > ALPHA_TEST / 6
