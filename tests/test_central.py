"""Central baselines: calibrations (docs/theory.md#central) and the histogram protocols' exact MSE."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from shufflesim import NotApplicableError
from shufflesim.pipeline import registry
from shufflesim.maths.central import analytic_gaussian_sigma, classical_gaussian_sigma, gaussian_delta, laplace_scale
from shufflesim.experiments.data import load_data
from shufflesim.experiments.montecarlo import run_trials, summarise
from shufflesim.experiments.stats import bonferroni_level


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (1.0, 1e-6), (4.0, 1e-10), (10.0, 1e-3)])
def test_analytic_gaussian_is_the_smallest_safe_sigma(eps, delta):
    s = analytic_gaussian_sigma(eps, delta)
    assert gaussian_delta(s, eps) <= delta
    assert gaussian_delta(s * (1 - 1e-6), eps) > delta


def test_gaussian_delta_against_direct_formula():
    s, eps = 1.3, 0.7
    direct = stats.norm.cdf(1 / (2 * s) - eps * s) - math.exp(eps) * stats.norm.cdf(-1 / (2 * s) - eps * s)
    assert gaussian_delta(s, eps) == pytest.approx(direct, rel=1e-10)


def test_analytic_beats_classical_where_both_apply():
    for eps in (0.1, 0.5, 0.9):
        assert analytic_gaussian_sigma(eps, 1e-6) < classical_gaussian_sigma(eps, 1e-6)


def test_classical_refuses_eps_at_least_one():
    with pytest.raises(NotApplicableError, match="eps < 1"):
        classical_gaussian_sigma(1.0, 1e-6)


def test_laplace_scale():
    assert laplace_scale(0.5, 2.0) == 4.0


def test_central_histogram_mse_intervals_cover_exact_values():
    cases = [("central-laplace-hist", {"eps": 1.0}), ("central-gaussian-hist", {"eps": 1.0, "delta": 1e-6}),
             ("central-gaussian-hist", {"eps": 0.5, "delta": 1e-5, "calibration": "classical",
                                        "neighbouring": "add-remove"})]
    level = bonferroni_level(1 - 1e-3, len(cases))
    x = load_data("zipf:1.0", data_kind="categorical", n=2000, k=6, rng=0)
    for i, (name, params) in enumerate(cases):
        proto = registry.create(name, 2000, k=6, **params)
        s = summarise(run_trials(proto, x, trials=400, rng=i).records, proto, x, level=level)
        assert s["mse_ci"][0] <= s["mse_expected"] <= s["mse_ci"][1], (name, s)


def test_sensitivity_by_neighbouring_relation():
    r = registry.create("central-laplace-hist", 10, k=3, eps=1.0)
    a = registry.create("central-laplace-hist", 10, k=3, eps=1.0, neighbouring="add-remove")
    assert r.params["scale"] == 2.0 and a.params["scale"] == 1.0
    g = registry.create("central-gaussian-hist", 10, k=3, eps=1.0, delta=1e-6)
    assert g.params["sigma"] == pytest.approx(analytic_gaussian_sigma(1.0, 1e-6, math.sqrt(2)))
