"""MSE validation (issue 10): the bootstrap-t test's level on skewed data, Holm, verdicts on k-RR."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom

from shufflesim.experiments.data import load_data
from shufflesim.pipeline import registry
from shufflesim.validation.mse import validate_errors, validate_protocol
from shufflesim.validation.stats import bootstrap_t, holm, normal_power, trials_for_power


def _not_above(rejections: int, runs: int, level: float) -> bool:
    """One-sided binomial test: the rejection count is not significantly above ``level`` (p > 0.001)."""
    return binom.sf(rejections - 1, runs, level) > 1e-3


def test_bootstrap_t_level_on_skewed_data():
    # chi-square(1) data (skewness 2.8, heavier than a k-RR squared error): two-sided and one-sided levels
    g = np.random.default_rng(11)
    runs, T, alpha = 300, 150, 0.05
    two = upper = 0
    for r in range(runs):
        x = g.chisquare(1, size=T)
        b = bootstrap_t(x, 1.0, resamples=999, rng=r)
        two += b["p_two"] <= alpha
        upper += b["p_greater"] <= alpha
    assert _not_above(two, runs, alpha) and _not_above(upper, runs, alpha)
    assert two > 0  # not a test that never rejects


def _krr_sq_errors(n, k, gamma, counts, trials, g):
    """Squared errors of the debiased k-RR counts, drawn directly from the histogram's exact law."""
    probs = np.full((k, k), gamma / k) + (1 - gamma) * np.eye(k)
    h = sum(g.multinomial(int(c), probs[v], size=trials) for v, c in enumerate(counts) if c)
    est = (h - n * gamma / k) / (1 - gamma)
    return ((est - np.asarray(counts)) ** 2).sum(axis=1)


def test_right_expected_not_flagged_more_than_level_wrong_one_flagged():
    n, k, gamma = 60, 4, 0.6
    counts = [40, 15, 5, 0]
    right = registry.create("krr", n, k=k, gamma=gamma).mse_expected(None)
    g = np.random.default_rng(5)
    runs, alpha = 200, 0.05
    flagged_right = flagged_wrong = 0
    for r in range(runs):
        x = _krr_sq_errors(n, k, gamma, counts, 300, g)
        flagged_right += validate_errors(x, expected=right, alpha=alpha, resamples=999, rng=r)["verdict"] == "violated"
        flagged_wrong += validate_errors(x, expected=1.25 * right, alpha=alpha, resamples=999, rng=r)["verdict"] == "violated"
    assert _not_above(flagged_right, runs, alpha)
    assert flagged_wrong >= 0.9 * runs


def test_validate_protocol_end_to_end_flags_a_wrong_expectation():
    x = load_data("zipf:1.1", data_kind="categorical", n=100, k=5, rng=0)
    proto = registry.create("krr", 100, k=5, eps0=1.0)
    good = validate_protocol(proto, x, trials=600, rng=3)
    assert {c["check"] for c in good["checks"]} == {"mse_expected", "mse_worst"}
    assert all(c["verdict"] != "violated" for c in good["checks"])
    wrong = 1.3 * proto.mse_expected(x)
    proto.mse_expected = lambda data: wrong  # a deliberately wrong theory value
    bad = validate_protocol(proto, x, trials=600, rng=3)
    (c,) = [c for c in bad["checks"] if c["check"] == "mse_expected"]
    assert c["verdict"] == "violated" and c["p_value"] < 0.01 and bad["verdict"] == "violated"


def test_inconclusive_reports_power_and_trials_needed():
    g = np.random.default_rng(0)
    x = g.chisquare(3, size=40)
    res = validate_errors(x, expected=3.0, alpha=0.05, rel_effect=0.01, resamples=500, rng=1)
    (c,) = res["checks"]
    assert c["verdict"] == "inconclusive" and c["power"] < 0.8
    assert c["trials_needed"] == trials_for_power(0.03, res["sd"], 0.05, 0.8)
    assert normal_power(0.03, res["sd"], c["trials_needed"], 0.05) >= 0.8


def test_holm():
    assert holm([0.01, 0.04, 0.03], 0.05) == [True, False, False]
    assert holm([0.01, 0.02, 0.03], 0.05) == [True, True, True]
    assert holm([0.5], 0.05) == [False]


def test_cli_validate_json():
    out = subprocess.run([sys.executable, "-P", "-m", "shufflesim", "validate", "krr", "--n", "50", "--k", "3", "--eps0", "1",
                          "--data", "uniform", "--trials", "200", "--seed", "1", "--json"],
                         capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    assert d["correction"] == "holm" and d["trials"] == 200 and d["verdict"] in ("consistent", "inconclusive")
    for c in d["checks"]:
        assert {"check", "p_value", "interval", "power", "verdict", "alternative"} <= set(c)


def test_cli_validate_bad_alpha_is_one_line():
    out = subprocess.run([sys.executable, "-P", "-m", "shufflesim", "validate", "krr", "--n", "50", "--k", "3", "--eps0", "1",
                          "--trials", "20", "--alpha", "2"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "alpha" in out.stderr
