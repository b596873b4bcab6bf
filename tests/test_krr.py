"""k-ary randomised response: randomiser distribution, unbiasedness, exact MSE (docs/theory.md#randomised-response, docs/theory.md#rr-estimators).

Statistical tests use fixed seeds.  Within each test the family-wise significance level is 1e-3,
split over its individual tests by Bonferroni; so a correct implementation fails a given test with
probability at most 1e-3 (and, the seeds being fixed, either always or never).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from shufflesim import ParameterError
from shufflesim.pipeline import registry
from shufflesim.experiments.montecarlo import run_trials, summarise
from shufflesim.maths.rr import eps0_from_gamma, gamma_from_eps0
from shufflesim.protocols.krr import KRRRandomiser, krr_mse_expected
from shufflesim.experiments.stats import bonferroni_level

ALPHA = 1e-3


def test_parametrisations_coincide():
    for k in (2, 3, 10, 100):
        for eps0 in (0.1, 1.0, 4.0, 10.0):
            g = gamma_from_eps0(eps0, k)
            assert eps0_from_gamma(g, k) == pytest.approx(eps0, rel=1e-12)
            # P(true) = 1 - g + g/k must equal e^eps0/(e^eps0 + k - 1)
            assert 1 - g + g / k == pytest.approx(math.exp(eps0) / (math.exp(eps0) + k - 1), rel=1e-12)


def test_binary_rr_flip_probability():
    # k = 2: the flip probability is 1/(e^eps0 + 1) (docs/theory.md#randomised-response)
    g = gamma_from_eps0(1.3, 2)
    assert g / 2 == pytest.approx(1 / (math.exp(1.3) + 1), rel=1e-12)


@pytest.mark.parametrize("k,gamma", [(2, 0.3), (5, 0.4), (12, 0.9)])
def test_randomiser_output_distribution(k, gamma):
    rnd = KRRRandomiser(k, gamma)
    rng = np.random.default_rng([k, int(gamma * 100)])
    n = 20_000
    alpha_each = ALPHA / k
    for v in range(k):
        y = rnd.randomise(np.full(n, v), rng)[:, 0]
        obs = np.bincount(y, minlength=k)
        exp = n * rnd.report_probabilities(v)
        p = stats.chisquare(obs, exp).pvalue
        assert p > alpha_each, f"k={k} gamma={gamma} input {v}: chi-square p={p:.2e}"


def test_randomiser_shape_and_dtype():
    y = KRRRandomiser(300, 0.5).randomise(np.arange(300), np.random.default_rng(0))
    assert y.shape == (300, 1) and y.dtype == np.uint16 and y.max() < 300


@pytest.mark.parametrize("spec", ["zipf:1.2", "constant:2"])
def test_debiased_counts_unbiased(spec):
    from shufflesim.experiments.data import load_data

    k, gamma, n, T = 6, 0.6, 2_000, 400
    x = load_data(spec, data_kind="categorical", n=n, k=k, rng=1)
    proto = registry.create("krr", n, k=k, gamma=gamma)
    c = np.bincount(x, minlength=k)
    est = np.array([proto.run(x, np.random.SeedSequence(7, spawn_key=(t,))).estimate for t in range(T)])
    # exact per-category variance of c_hat_j: sum_i p_ij (1 - p_ij) / (1 - gamma)^2
    a, b = 1 - gamma + gamma / k, gamma / k
    var = (c * a * (1 - a) + (n - c) * b * (1 - b)) / (1 - gamma) ** 2
    z = (est.mean(axis=0) - c) / np.sqrt(var / T)
    zcrit = stats.norm.ppf(1 - ALPHA / (2 * k))
    assert np.all(np.abs(z) < zcrit), z


def test_mse_expected_formula_against_direct_sum():
    # Sigma_i Sigma_j p_ij (1 - p_ij) / (1 - gamma)^2 evaluated user by user
    k, gamma, n = 7, 0.35, 50
    x = np.random.default_rng(3).integers(0, k, n)
    rnd = KRRRandomiser(k, gamma)
    direct = sum(float((rnd.report_probabilities(v) * (1 - rnd.report_probabilities(v))).sum()) for v in x)
    assert krr_mse_expected(n, k, gamma) == pytest.approx(direct / (1 - gamma) ** 2, rel=1e-12)


CASES = [
    (1_000, 2, {"gamma": 0.5}, "uniform"),
    (5_000, 10, {"eps0": 1.0}, "zipf:1.1"),
    (2_000, 4, {"gamma": 0.9}, "constant:3"),
    (None, 8, {"eps0": 2.0}, "adult-age"),
]


def test_mse_confidence_interval_covers_exact_value():
    """The Student-t CI of the empirical MSE covers the exact expectation in every case.

    Joint level 1 - 1e-3 over the cases (Bonferroni), T = 400 trials each.
    """
    from shufflesim.experiments.data import load_data

    level = bonferroni_level(1 - ALPHA, len(CASES))
    for i, (n, k, params, spec) in enumerate(CASES):
        x = load_data(spec, data_kind="categorical", n=n, k=k, rng=10 + i)
        x = x[:3000] if n is None else x
        proto = registry.create("krr", len(x), k=k, **params)
        run = run_trials(proto, x, trials=400, rng=100 + i)
        s = summarise(run.records, proto, x, level=level)
        lo, hi = s["mse_ci"]
        assert lo <= s["mse_expected"] <= hi, (spec, s)


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        ({"k": 1, "gamma": 0.5}, "k must be"),
        ({"k": 3}, "exactly one of gamma"),
        ({"k": 3, "gamma": 0.5, "eps0": 1.0}, "exactly one of gamma"),
        ({"k": 3, "gamma": 0.0}, "gamma must be in"),
        ({"k": 3, "gamma": 1.5}, "gamma must be in"),
        ({"k": 3, "gamma": 1.0}, "cannot be debiased"),
        ({"k": 3, "eps0": 0.0}, "eps0 must be in"),
        ({"k": 3, "eps0": float("inf")}, "eps0 must be finite"),
        ({"k": 3, "gamma": float("nan")}, "gamma must be finite"),
    ],
)
def test_invalid_parameters(kwargs, msg):
    with pytest.raises(ParameterError, match=msg):
        registry.create("krr", 100, **kwargs)


def test_categories_outside_domain_rejected():
    from shufflesim import DataError

    proto = registry.create("krr", 3, k=3, gamma=0.5)
    with pytest.raises(DataError, match=r"\[0, 3\)"):
        proto.run(np.array([0, 1, 3]), 0)
    with pytest.raises(DataError, match="integers"):
        proto.run(np.array([0.0, 1.0, 2.0]), 0)
