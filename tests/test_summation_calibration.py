"""Issue 21 (3): the blanket and recursive summation protocols' calibrations at n = 1e9 in seconds, still certified.

What changed (protocols/_blanket.py, protocols/recursive_sum.py): the certified δ's are evaluated at points placed
by secant steps on log(−log δ) (:func:`calibrate_near`), finished by the one safe-side calibrator on the bracket
found; the level accountings skip the mechanism-level lower end nobody reads; the optimised search's scan skips
prefixes that cannot enter its 4 best candidates.  Oracles: the plain calibrator on the same functions (the old
path), closed-form roots, the accountant's own upper end, and at n = 1e9 the protocols' exact MSE through the
fast engine from counts (tests/test_population.py's pattern: |mean − exact| <= z·s/sqrt(T), z = 3.29, fixed
seeds).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from shufflesim.accounting.account import account
from shufflesim.accounting.bounds.balle import KRRBlanket, bennett_delta, bennett_gamma
from shufflesim.accounting.numerics.invert import calibrate
from shufflesim.errors import InfeasibleError
from shufflesim.experiments.data import real_counts
from shufflesim.experiments.montecarlo import run_trials
from shufflesim.mechanisms.krr import KRR
from shufflesim.pipeline import registry
from shufflesim.pipeline.fast import mse_expected_of
from shufflesim.accounting.numerics.invert import calibrate_near
from shufflesim.protocols._blanket import bennett_gamma_near, level_delta, level_gamma
from shufflesim.protocols import recursive_sum as R

Z = 3.29  # two-sided 1e-3 for the normal approximation of a trial mean


def _agrees(values: np.ndarray, exact: float) -> bool:
    return abs(values.mean() - exact) <= Z * values.std(ddof=1) / np.sqrt(values.size)


# ----------------------------------------------------------------------------------------- calibrate_near


def _tail(c: float, a: float):
    return lambda x: math.exp(-c * x**a)  # decreasing; root of exp(-c x^a) = t is (log(1/t)/c)^(1/a)


@pytest.mark.parametrize("c,a,target", [(1e4, 1.0, 1e-12), (3e2, 0.5, 1e-6), (50.0, 2.0, 1e-18), (1e6, 1.3, 1e-300)])
def test_calibrate_near_is_safe_within_rtol_and_few_evaluations(c, a, target):
    root = (math.log(1.0 / target) / c) ** (1.0 / a)
    fn = _tail(c, a)
    rtol = 1e-4
    cal = calibrate_near(fn, target, (3.0 * root, 2.5 * root), root * 1e-3, root * 1e3, rtol=rtol)
    assert fn(cal.x) <= target  # the returned point was evaluated feasible
    assert root * (1 - 1e-12) <= cal.x <= root * (1 + 2 * rtol)  # never on the unsafe side; within tolerance
    assert cal.evaluations <= 8  # the model is exact here (log(-log delta) linear in log x)
    plain = calibrate(fn, target, root * 1e-3, root * 1e3, increasing=False, xtol=0.0, rtol=rtol, log_scale=True)
    assert plain.evaluations > cal.evaluations


def test_calibrate_near_safe_where_the_model_fails():
    # a staircase (flat pieces, jumps, delta = 1 and delta = 0 regions): the model steps are useless, the result
    # must still be an evaluated feasible point within rtol of the boundary x* = 0.3
    def fn(x: float) -> float:
        if x < 0.1:
            return 1.0
        if x >= 0.3:
            return 0.0 if x > 0.5 else 1e-9 * (1.0 - x)
        return 10.0 ** (-math.floor(20 * x))

    cal = calibrate_near(fn, 1e-8, (0.2, 0.15), 1e-3, 1.0, rtol=1e-6, max_evals=200)
    assert fn(cal.x) <= 1e-8 and 0.3 <= cal.x <= 0.3 * (1 + 2e-6)


def test_calibrate_near_refusals_and_whole_interval():
    with pytest.raises(InfeasibleError):
        calibrate_near(_tail(1.0, 1.0), 1e-12, (0.5,), 0.1, 1.0, rtol=1e-4)  # exp(-1) > 1e-12 everywhere
    cal = calibrate_near(_tail(100.0, 1.0), 0.5, (2.0, 1.5), 1.0, 10.0, rtol=1e-4)  # all of [1, 10] certifies
    assert cal.x == 1.0 and cal.x_unsafe is None  # exactly the interval's end: exactness is the point


# ------------------------------------------------------------------------------ the blanket level calibrations


def test_bennett_gamma_near_agrees_with_bennett_gamma_and_certifies():
    cases = itertools.product([100, 10**4, 10**6, 10**9], [2, 17, 8001], [0.05, 1.0, 8.0], [1e-3, 1e-18])
    for n, v, e, d in cases:
        try:
            ref = bennett_gamma(n, v, e, d)
        except InfeasibleError:
            with pytest.raises(InfeasibleError):
                bennett_gamma_near(n, v, e, d)
            continue
        got = bennett_gamma_near(n, v, e, d)
        # both are evaluated feasible points within rtol 1e-9 above the same boundary
        assert got == pytest.approx(ref, rel=2e-9, abs=0.0), (n, v, e, d)
        assert bennett_delta(e, n=n, randomiser=KRRBlanket(k=v, gamma=got)).delta_upper <= d


def test_level_delta_is_the_accountants_upper_end():
    # level_delta drops only the lower end: the upper end is the same computation (exact equality is the point)
    n, v, g, e = 20_000, 11, 0.02, 0.8
    full = account(KRR(n, v, g, "shuffled"), eps=[e], method="tight", numerics={"target_accuracy": None, "max_grid_size": 2**20})
    assert level_delta("tight", n, v, g, e) == full.results[0].delta_upper


@pytest.mark.parametrize("n,values", [(10**4, 8), (10**5, 31)])
def test_level_gamma_tight_matches_the_plain_calibration(n, values):
    eps, delta = 1.0, 1.0 / n**2
    got = level_gamma("tight", n, values, eps, delta)
    fn = lambda x: level_delta("tight", n, values, x, eps)  # noqa: E731
    hi = bennett_gamma(n, values, eps, delta)
    hi = hi if fn(hi) <= delta else 1.0
    ref = calibrate(fn, delta, hi * 1e-3, hi, increasing=False, xtol=0.0, rtol=1e-4, log_scale=True).x  # the old path
    assert fn(got) <= delta
    assert got == pytest.approx(ref, rel=1e-4, abs=0.0)  # both within rtol 1e-4 above the same boundary


# ------------------------------------------------------------------------------ the recursive tight calibration


def test_recursive_nu_calibration_matches_the_plain_calibration():
    n, eps, ps = 2000, 1.0, (3, 6)
    delta = 1.0 / n**2
    base = R.level_gammas("bennett", n, ps, (0.5, 0.5), delta / 2, "fixed")
    nu_good = R._nu_scale(n, ps, base)
    nu, gs = R._calibrate_nu(n, ps, eps, delta, "shuffled", nu_good)
    f = lambda x: R.composed_delta(n, ps, R._surrogate_gammas(n, ps, x), eps, "shuffled")  # noqa: E731
    ref = calibrate(f, delta, nu_good * 1e-3, nu_good, increasing=False, xtol=0.0, rtol=3e-3, log_scale=True).x
    assert R.composed_delta(n, ps, gs, eps, "shuffled") <= delta
    assert nu == pytest.approx(ref, rel=3e-3, abs=0.0)  # both within rtol 3e-3 above the same boundary


def test_recursive_tight_mode_certifies_at_moderate_n():
    n, eps = 20_000, 1.0  # test_recursive_sum's modes test: shares the memoised search when run in one session
    p = registry.create("recursive-sum", n, eps=eps, messages=2, mode="tight")
    assert p.privacy().delta <= 1.0 / n**2
    # the reported delta is the certified composed delta of the reported gammas (memoised: exactly the same value)
    assert R.composed_delta(n, p.precisions, p.gammas, eps, "shuffled") == p.privacy().delta
    R._composed_delta.cache_clear()  # and recomputed from scratch it is the same computation
    assert R.composed_delta(n, p.precisions, p.gammas, eps, "shuffled") == p.privacy().delta
    opt = registry.create("recursive-sum", n, eps=eps, messages=2, mode="optimised")
    assert p.mse_worst() < opt.mse_worst()


# ------------------------------------------------------------------------------------------------ n = 1e9


@pytest.mark.slow  # ~10-30 s each on the 2-core machine (was 20 s and > 9 min)
@pytest.mark.parametrize("name", ["blanket-sum", "recursive-sum"])
def test_default_creation_at_1e9_certifies_and_fast_engine_matches_exact_mse(name):
    n = 10**9
    proto = registry.create(name, n, eps=1.0)
    pr = proto.privacy()
    assert pr.eps == 1.0 and pr.delta <= 1.0 / (float(n) * n)  # the default delta 1/n^2, certified
    assert proto.params["mode"] == "tight"  # auto picked the tight mode (the smallest certified worst MSE)
    data = real_counts("uniform", n=n, rng=1)
    run = run_trials(proto, data, trials=1000, rng=2, engine="fast")
    assert run.complete and run.engine == "fast"
    exact = mse_expected_of(proto, data)
    assert exact is not None and 0 < exact <= proto.mse_worst()
    assert _agrees(run.records["sq_error"].to_numpy(), exact)
    assert _agrees(run.records["error"].to_numpy(), 0.0)
