"""Issue 28 item 1: one binomial log-PMF, one Chernoff window, one windowed recurrence.

The scalar entry points of :mod:`shufflesim.accounting.numerics.binomial` (used per window by the exact binary-RR engine and
by Cheu et al.'s bound) are the vectorised functions' kernels without their array bookkeeping: they must give the
*same* values (asserted bit for bit on random draws) and so stay under the same accuracy model, checked here
against mpmath at 50 digits up to n = 1e10 and 11 standard deviations out -- where exact_rr2's former scalar
port, which lacked the compensation of the rounded mean n·p, exceeded the model (5.4x at 1e8, 45x at 1e10; it
was only ever called at the mode, where it stayed within 0.001 of it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.accounting.numerics.binomial import (BINOM_LOG_ERR, binom_log_kl, binom_log_kl_scalar, chernoff_window,
                                            chernoff_window_scalar, log_binom_pmf, log_binom_pmf_scalar,
                                            log_binom_window)


def _draw_p(rng) -> float:
    p = float(10 ** rng.uniform(-8, 0))
    return 0.5 if p >= 1.0 or rng.random() < 0.1 else p


def test_scalar_log_pmf_is_the_vectorised_one():
    rng = np.random.default_rng(11)
    for _ in range(4000):
        n = int(10 ** rng.uniform(0, 10))
        k = int(rng.integers(-1, n + 2))
        p = _draw_p(rng)
        q = None if rng.random() < 0.5 else 1.0 - p
        assert log_binom_pmf_scalar(k, n, p, q) == float(log_binom_pmf(k, n, p, q)), (k, n, p, q)
    for p, q in ((0.0, 1.0), (1.0, 0.0)):
        for k in (0, 3, 5):
            assert log_binom_pmf_scalar(k, 5, p, q) == float(log_binom_pmf(k, 5, p, q))


def test_scalar_kl_is_the_vectorised_one():
    rng = np.random.default_rng(12)
    for _ in range(2000):
        n = int(10 ** rng.uniform(0, 10))
        x = int(rng.integers(0, n + 1))
        p = _draw_p(rng)
        assert binom_log_kl_scalar(x, n, p) == float(binom_log_kl(x, n, p)), (x, n, p)


def test_scalar_chernoff_window_is_the_vectorised_one():
    rng = np.random.default_rng(13)
    budgets = (0.0, 5.0, -math.inf, math.inf)
    for i in range(1500):
        n = int(10 ** rng.uniform(0, 9.5)) if i % 50 else int(rng.integers(0, 3))
        p = _draw_p(rng)
        q = None if rng.random() < 0.5 else 1.0 - p
        lb = float(-10 ** rng.uniform(-2, 3)) if rng.random() < 0.95 else float(rng.choice(budgets))
        lo, hi, lt = chernoff_window(n, p, lb, q)
        got = chernoff_window_scalar(n, p, lb, q)
        assert got[:2] == (int(lo), int(hi)), (n, p, q, lb, got, (lo, hi))
        assert got[2] == float(lt) or (math.isnan(got[2]) and math.isnan(float(lt))), (n, p, q, lb)


@pytest.mark.parametrize("n", [10**6, 10**8, 10**10])
def test_scalar_log_pmf_within_the_model_against_mpmath(n):
    mp = pytest.importorskip("mpmath")
    rng = np.random.default_rng(n % 997)
    with mp.workdps(50):
        for _ in range(25):
            p = round(float(rng.uniform(0.01, 0.99)) * 2**40) / 2**40  # 1 - p exact: the log-PMF's own error
            sd = math.sqrt(n * p * (1 - p))
            for k in (int(math.floor((n + 1) * p)), int(n * p + 11 * sd), int(n * p - 11 * sd)):
                pm = mp.mpf(p)
                exact = float(mp.loggamma(n + 1) - mp.loggamma(k + 1) - mp.loggamma(n - k + 1) + k * mp.log(pm)
                              + (n - k) * mp.log(1 - pm))
                got = log_binom_pmf_scalar(k, n, p, 1 - p)
                assert abs(got - exact) <= BINOM_LOG_ERR * max(1.0, abs(exact) / 100.0), (n, k, p, got - exact)


@pytest.mark.parametrize("n,p,lo,hi,anchor", [(1000, 0.3, 200, 420, None), (10**6, 0.119, 118000, 120500, None),
                                              (5 * 10**7, 0.5, 24_990_000, 25_003_000, 24_990_000),
                                              (60, 0.9, 0, 60, 3)])
def test_window_recurrence_within_its_stated_errors(n, p, lo, hi, anchor):
    rel, l_anchor, common, varying = log_binom_window(n, p, lo, hi, anchor=anchor, q=1 - p)
    k = np.arange(lo, hi + 1)
    direct = log_binom_pmf(k, n, p, 1 - p)  # each within BINOM_LOG_ERR (its model)
    model = BINOM_LOG_ERR * np.maximum(1.0, np.abs(direct) / 100.0)
    a = min(max(int(math.floor((n + 1) * p)) if anchor is None else anchor, lo), hi)
    assert rel[a - lo] == 0.0 and l_anchor == log_binom_pmf_scalar(a, n, p, 1 - p)
    assert np.all(np.abs(l_anchor + rel - direct) <= common + varying + model)
    assert varying > 0 and common >= BINOM_LOG_ERR


def test_point_mass_window_and_exact_rr2_at_an_underflowing_tilt():
    """A tilted flip probability that underflows to 0 (eps0 = 699, delta = 1e-300) is a point mass: the window
    has no ratio to recur by.  The former port raised ZeroDivisionError here (its own KL divided by n p = 0)."""
    from shufflesim.accounting.exact import exact_rr2 as X

    rel, l0, common, varying = log_binom_window(40, 0.0, 0, 0, q=1.0)
    assert rel.tolist() == [0.0] and l0 == 0.0 and varying == 0.0
    rel, l0, _, _ = log_binom_window(40, 1.0, 38, 40, q=0.0)
    assert rel.tolist() == [-math.inf, -math.inf, 0.0] and l0 == 0.0
    b = X.eps_bracket(1000, 699.0, 1e-300)
    assert 0.0 < b.lower <= b.upper <= 699.0
    d = X.delta_bracket(1000, 699.0, b.upper)
    assert d.upper <= 1e-300


def test_scalar_window_skips_the_mean_only_where_it_cannot_hold():
    # the scalar window does not evaluate n KL at floor/ceil(mean) when 1.01/x + 1.01/(n - x) + 1e-6 < need proves it
    # below need (bd0(x, m) <= (x - m)^2 / x for x/m <= 3); the windows equal the vectorised ones either way, and the
    # bound itself holds where the skip applies (checked against the kernel at the mean for many n, p)
    import math

    from shufflesim.accounting.numerics import binomial as B

    rng = np.random.default_rng(28)
    for n in rng.integers(4, 10**7, size=300):
        p = float(rng.uniform(1e-6, 1 - 1e-6))
        for x in (math.floor(n * p), math.ceil(n * p)):
            if 2 <= x <= n - 2:
                assert B.binom_log_kl_scalar(x, int(n), p) < 1.01 / x + 1.01 / (n - x)
        lo, hi, lt = B.chernoff_window_scalar(int(n), p, -40.0)
        vlo, vhi, vlt = B.chernoff_window(np.array([n]), p, -40.0)
        assert (lo, hi) == (int(vlo[0]), int(vhi[0])) and lt == float(vlt[0])
