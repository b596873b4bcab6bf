"""Calibration never overshoots: the returned parameter is verified on the safe side of the target."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from shufflesim.accounting.numerics.invert import calibrate, eps_interval_for_delta
from shufflesim.accounting.pld.distribution import PrivacyLossDistribution
from shufflesim.accounting.pld.pmf_pair import PMFPair
from shufflesim.accounting.engines.tight import tight_delta
from shufflesim.errors import InfeasibleError, ParameterError


def rr2_pair(n: int, eps0: float) -> PMFPair:
    """Shuffled binary randomised response (seed 001 eq 4.1)."""
    p = 1.0 / (math.exp(eps0) + 1.0)
    k = np.arange(n + 1)
    lp = binom.logpmf(k, n, p)
    b = binom.logpmf(k, n - 1, p)
    lq = np.logaddexp(math.log(p) + b, math.log1p(-p) + np.concatenate(([-np.inf], b[:-1])))
    return PMFPair(lp, lq, "rr2-test", {"n": n, "eps0": eps0})


# --------------------------------------------------------------------------- generic behaviour
def test_increasing_function_returns_largest_feasible():
    cal = calibrate(lambda x: x**2, 2.0, 0.0, 10.0, increasing=True, xtol=1e-12)
    assert cal.x**2 <= 2.0 and cal.value <= 2.0
    assert cal.x_unsafe is not None and cal.x_unsafe**2 > 2.0
    assert math.sqrt(2) - cal.x <= 2e-12 + 1e-9 * math.sqrt(2)


def test_decreasing_function_returns_smallest_feasible():
    cal = calibrate(lambda x: math.exp(-x), 1e-6, 0.0, 100.0, increasing=False, xtol=1e-12)
    assert math.exp(-cal.x) <= 1e-6 and math.exp(-cal.x_unsafe) > 1e-6
    assert cal.x - (-math.log(1e-6)) <= 1e-8


def test_whole_interval_feasible_returns_the_far_end():
    cal = calibrate(lambda x: x, 5.0, 0.0, 1.0, increasing=True)
    assert cal.x == 1.0 and cal.x_unsafe is None


def test_infeasible_raises_one_line_message():
    with pytest.raises(InfeasibleError) as err:
        calibrate(lambda x: x + 10.0, 1.0, 0.0, 1.0, increasing=True)
    assert "\n" not in str(err.value) and "[0, 1]" in str(err.value)


def test_bad_arguments():
    with pytest.raises(ParameterError):
        calibrate(lambda x: x, 1.0, 1.0, 0.0, increasing=True)
    with pytest.raises(ParameterError):
        calibrate(lambda x: x, 1.0, 0.0, 1.0, increasing=True, xtol=0.0, rtol=0.0)
    with pytest.raises(ParameterError):
        calibrate(lambda x: float("nan"), 1.0, 0.0, 1.0, increasing=True)


def test_step_function_and_log_scale():
    # a step function: regula falsi must still converge to the jump from the safe side
    f = lambda x: 1.0 if x >= 0.3 else 0.0  # noqa: E731
    cal = calibrate(f, 0.5, 0.0, 1.0, increasing=True, xtol=1e-10)
    assert cal.x < 0.3 <= cal.x_unsafe and cal.x_unsafe - cal.x <= 1e-10 + 1e-9 * cal.x_unsafe
    cal = calibrate(lambda x: 1.0 / x, 1e3, 1e-9, 1.0, increasing=False, log_scale=True, xtol=1e-15, rtol=1e-10)
    assert 1.0 / cal.x <= 1e3 and cal.x == pytest.approx(1e-3, rel=1e-8)


@st.composite
def monotone_problems(draw):
    """A random strictly monotone piecewise-linear function, a target in its range, a direction."""
    k = draw(st.integers(2, 8))
    xs = np.sort(np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k, unique=True))))
    xs = np.concatenate(([0.0], xs[(xs > 0) & (xs < 1)], [1.0]))
    incs = np.array(draw(st.lists(st.floats(1e-6, 10.0), min_size=xs.size - 1, max_size=xs.size - 1)))
    ys = np.concatenate(([0.0], np.cumsum(incs)))
    increasing = draw(st.booleans())
    if not increasing:
        ys = ys[::-1]
    target = draw(st.floats(float(ys.min()), float(ys.max())))
    return xs, ys, increasing, target


@given(problem=monotone_problems(), xtol=st.sampled_from([1e-3, 1e-8, 1e-12]))
@settings(max_examples=200, deadline=None)
def test_calibration_never_overshoots(problem, xtol):
    xs, ys, increasing, target = problem
    f = lambda x: float(np.interp(x, xs, ys))  # noqa: E731
    cal = calibrate(f, target, 0.0, 1.0, increasing=increasing, xtol=xtol, rtol=0.0)
    assert f(cal.x) <= target  # verified, never overshoots
    # the true boundary x* of {f <= target}, found on a fine grid
    grid = np.linspace(0, 1, 200001)
    feas = np.interp(grid, xs, ys) <= target
    if increasing:
        assert cal.x <= grid[feas].max() + 1e-5
        if cal.x_unsafe is not None:
            assert f(cal.x_unsafe) > target and cal.x_unsafe - cal.x <= xtol + 1e-15
    else:
        assert cal.x >= grid[feas].min() - 1e-5
        if cal.x_unsafe is not None:
            assert f(cal.x_unsafe) > target and cal.x - cal.x_unsafe <= xtol + 1e-15


def test_eps_interval_for_a_known_profile():
    # delta(eps) = 0.5 e^{-eps}: eps(delta) = log(0.5/delta)
    up = lambda e: 0.5 * math.exp(-e) * (1 + 1e-12)  # noqa: E731
    lo = lambda e: 0.5 * math.exp(-e) * (1 - 1e-12)  # noqa: E731
    e_lo, e_up = eps_interval_for_delta(up, lo, 1e-6, 50.0, xtol=1e-12)
    truth = math.log(0.5 / 1e-6)
    assert e_lo < truth <= e_up and e_up - e_lo < 1e-9


# --------------------------------------------------------------------------- calibration of mechanisms
@given(target=st.sampled_from([1e-3, 1e-5, 1e-8]), eps=st.sampled_from([0.3, 0.6]))
@settings(max_examples=6, deadline=None)
def test_largest_eps0_for_shuffled_rr_never_overshoots(target, eps):
    """Largest local eps0 such that shuffled binary RR with n users is (eps, target)-DP (tight)."""
    n = 200

    def delta_up(eps0: float) -> float:
        return tight_delta(rr2_pair(n, eps0), eps)[0].delta_upper

    cal = calibrate(delta_up, target, 0.05, 8.0, increasing=True, xtol=1e-6)
    assert cal.value <= target
    # independent check: exact delta of the pair at the returned eps0 (brute-force sum in log space)
    pld = PrivacyLossDistribution.from_pair(rr2_pair(n, cal.x))
    assert pld.delta(eps)[0].delta_upper <= target
    assert cal.x_unsafe is not None and pld.delta(eps)[0].delta_upper > 0
    worse = PrivacyLossDistribution.from_pair(rr2_pair(n, cal.x_unsafe)).delta(eps)[0]
    assert worse.delta_lower > target and cal.x_unsafe - cal.x <= 1e-6 + 1e-9 * cal.x


def test_smallest_n_for_a_target_is_safe():
    """Calibration over an integer parameter: smallest n with delta_upper <= target (delta decreasing in n)."""
    target, eps = 1e-6, 0.5

    def delta_up(x: float) -> float:
        return tight_delta(rr2_pair(int(math.ceil(x)), 1.0), eps)[0].delta_upper

    cal = calibrate(delta_up, target, 10.0, 5000.0, increasing=False, xtol=0.5)
    n = int(math.ceil(cal.x))
    assert tight_delta(rr2_pair(n, 1.0), eps)[0].delta_upper <= target
    assert tight_delta(rr2_pair(n - 1, 1.0), eps)[0].delta_lower > target


# --------------------------------------------------------------------------- extreme targets, flat and step functions
#: targets at the ends of the float range (issue 18: delta = 1e-320 made the secant step divide by zero)
EXTREME = [0.0, 5e-324, 1e-320, 2.2e-308, 1e-300, 1e-30, 1.0, 1e300, 1.7e308]


@st.composite
def extreme_problems(draw):
    """A monotone step/flat/linear function whose values are scaled to sit near an extreme target.

    The values are ``scale * level(x)`` with ``level`` a non-decreasing staircase on [0, 1] (flat
    stretches, jumps, possibly one single value), so differences of values underflow to zero or to equal
    subnormals near tiny targets and overflow near huge ones."""
    target = draw(st.sampled_from(EXTREME) | st.floats(0.0, 1e308, allow_nan=False, allow_infinity=False))
    scale = draw(st.sampled_from([5e-324, 1e-322, 1e-320, 1e-310, 1e-300, 1.0, 1e300, 1e308]))
    k = draw(st.integers(1, 6))
    jumps = sorted(draw(st.lists(st.floats(0.0, 1.0), min_size=k, max_size=k)))
    heights = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=k + 1, max_size=k + 1))
    levels = np.maximum.accumulate(np.array(heights))  # non-decreasing staircase (flat where equal)
    shape = draw(st.sampled_from(["step", "linear", "exp"]))
    rate = draw(st.floats(1.0, 2000.0))
    increasing = draw(st.booleans())

    def level(x: float) -> float:
        if shape == "exp":  # exp(-rate (1 - x)) passes through the subnormals to exactly 0 (like delta(gamma))
            return scale * math.exp(-rate * (1.0 - x) * 800.0)
        v = float(levels[int(np.searchsorted(jumps, x, side="right"))]) + (x if shape == "linear" else 0.0)
        return scale * v

    f = level if increasing else (lambda x: level(1.0 - x))
    return f, target, increasing


@given(problem=extreme_problems(), log_scale=st.booleans())
@settings(max_examples=300, deadline=None)
def test_calibration_at_extreme_targets_and_flat_functions(problem, log_scale):
    """Whatever the target and however flat the function, calibrate either returns a verified safe point
    (fn(x) <= target evaluated at that x; the unsafe end evaluated above it) or refuses with
    InfeasibleError — never ZeroDivisionError, OverflowError or a point above the target."""
    f, target, increasing = problem
    lo = 1e-12 if log_scale else 0.0
    try:
        cal = calibrate(f, target, lo, 1.0, increasing=increasing, xtol=1e-12, rtol=0.0, log_scale=log_scale)
    except InfeasibleError:
        assert not f(lo if increasing else 1.0) <= target  # refused only when the favourable end fails
        return
    assert lo <= cal.x <= 1.0
    assert cal.value == f(cal.x) and cal.value <= target  # exact: the value returned is the one evaluated
    if cal.x_unsafe is not None:
        assert f(cal.x_unsafe) > target
        assert (cal.x_unsafe > cal.x) if increasing else (cal.x_unsafe < cal.x)


def test_subnormal_target_regression():
    """The issue-18 case distilled (blanket-sum at delta = 1e-320): a delta that falls through the subnormals to
    exactly 0, so the Illinois-halved differences underflow to equal values (ZeroDivisionError before)."""
    f = lambda x: math.exp(-800.0 * x)  # noqa: E731
    for log_scale, lo in ((False, 0.0), (True, 1e-12)):
        cal = calibrate(f, 1e-320, lo, 1.0, increasing=False, xtol=1e-12, rtol=0.0, log_scale=log_scale)
        assert f(cal.x) <= 1e-320 and f(cal.x_unsafe) > 1e-320
        assert cal.x - cal.x_unsafe <= 1e-12 + 1e-15  # and it still converges: the bracket is within xtol


# --- the short certified upper end of an eps(delta) search (h6 audit) ------------------------------------------
def test_shortest_decimal_in_is_the_shortest():
    from decimal import Decimal

    from shufflesim.accounting.numerics.invert import shortest_decimal_in, significant_digits

    assert shortest_decimal_in(0.9999999995, 1.0000000005) == 1.0  # exact: the point of the helper
    assert shortest_decimal_in(0.12, 0.13) == 0.13
    assert shortest_decimal_in(0.0, 3.7e-5) == 3e-5
    rng = np.random.default_rng(np.random.SeedSequence(66))
    for _ in range(300):
        b = float(10.0 ** rng.uniform(-8, 3))
        a = b * (1 - float(10.0 ** rng.uniform(-12, -1)))
        c = shortest_decimal_in(a, b)
        assert c is not None and a < c <= b
        # oracle: no decimal with fewer digits lies in (a, b] (each is at most b truncated to that many digits)
        top = Decimal(b).adjusted()
        for d in range(1, significant_digits(c)):
            t = float(Decimal(b).quantize(Decimal(1).scaleb(top - d + 1), rounding="ROUND_FLOOR"))
            assert not a < t <= b


def test_shortest_certified_keeps_only_evaluated_points():
    from shufflesim.accounting.numerics.invert import shortest_certified

    seen = []

    def fn(x):  # certified exactly from 1 on
        seen.append(x)
        return 0.5 if x >= 1.0 else 2.0

    assert shortest_certified(fn, 1.0, 0.9999999995, 1.0000000005) == 1.0 and seen == [1.0]
    # the boundary a hair above the short decimal: the short probe fails, the evaluated end stays
    seen.clear()
    g = lambda x: 0.5 if x >= 1.0000000001 else 2.0  # noqa: E731
    # (the next shortest, 1.0000000001, has more than SHORT_DIGITS digits and is not tried)
    assert shortest_certified(g, 1.0, 0.9999999995, 1.0000000005) == 1.0000000005
    # no short decimal (more than SHORT_DIGITS digits) in the bracket: nothing is evaluated
    assert shortest_certified(fn, 1.0, 1.2345678901, 1.2345678905) == 1.2345678905 and seen == []
