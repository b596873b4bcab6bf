"""The one safe-side inverter (issue 28 item 1, shufflesim.accounting.numerics.invert): every search turns a monotone
certified curve into its inverse with the same contract and the same edge handling (NaN, targets no point meets,
curves that are 0 / 1 / inf, a target of 0)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from shufflesim.errors import InfeasibleError, ParameterError

#: the inverter's module (the package's attribute ``calibrate`` is the function of that name)
inv = importlib.import_module("shufflesim.accounting.numerics.invert")

#: a certified pair of curves around delta(eps) = exp(-3 eps) (lower 1e-9 relative below it)
UP = lambda e: math.exp(-3.0 * e)  # noqa: E731
LO = lambda e: math.exp(-3.0 * e) * (1 - 1e-9)  # noqa: E731


def _up_vec(x):
    x = np.asarray(x, dtype=float)
    return np.exp(-3.0 * x) * (1 - 1e-9), np.exp(-3.0 * x)


def _all_searches(up, lo, delta, eps_max):
    """(eps_lower, eps_upper) of every eps(delta) search of the inverter for the same curves."""
    both_vec = lambda x: (np.array([lo(v) for v in np.atleast_1d(x)]), np.array([up(v) for v in np.atleast_1d(x)]))  # noqa: E731
    return {
        "secant": inv.eps_interval(up, lo, delta, eps_max, search="secant"),
        "log": inv.eps_interval(up, lo, delta, eps_max, search="log"),
        "grid": inv.eps_interval_grid(both_vec, delta, eps_max, 1e-9),
        "bisect": inv.eps_bracket(up, lo, delta, hi=eps_max)}


@pytest.mark.parametrize("delta", [0.5, 1e-3, 1e-12, 1e-300])
def test_every_search_brackets_the_root_on_its_safe_side(delta):
    root = -math.log(delta) / 3.0
    for name, (lo_e, up_e) in _all_searches(UP, LO, delta, 300.0).items():
        assert UP(up_e) <= delta, name  # evaluated and certified: never below the root
        assert lo_e <= root <= up_e, name
        # each end within xtol + rtol eps (1e-9, 1e-9: the searches' defaults, the widest) of its own curve's crossing;
        # LO crosses 1e-9/3 below UP's root
        assert up_e - lo_e <= 2 * (1e-9 + 1e-9 * up_e) + 1e-9 / 3 * 1.01, (name, lo_e, up_e)


@pytest.mark.parametrize("curve, delta, expect", [
    (lambda e: 0.0, 1e-6, (0.0, 0.0)),           # a curve exactly 0: met at eps = 0
    (lambda e: 1.0, 1e-6, (math.inf, math.inf)),  # never met: no finite eps
    (lambda e: math.inf, 1e-6, (math.inf, math.inf)),
    (lambda e: 1e-9, 1e-6, (0.0, 0.0)),          # met at the favourable end
])
def test_every_search_handles_the_flat_curves_alike(curve, delta, expect):
    got = _all_searches(curve, curve, delta, 10.0)
    if expect[0] == math.inf:
        # eps_bracket's hi is where its search ends, not where the curve stops changing: its certified lower end
        # is that evaluated end (the curve is above delta there), the others' eps_max is the curve's end
        assert got.pop("bisect") == (10.0, math.inf)
    for name, ends in got.items():
        assert tuple(ends) == expect, (name, ends)


def test_a_target_of_zero_is_an_ordinary_target():
    """delta(eps) = max(0, 1 - eps): exactly 0 from eps = 1 on.  The log-space search bisects (log 0 is undefined;
    before the inverter was one, tight's exact path ended in a math domain error here)."""
    f = lambda e: max(0.0, 1.0 - e)  # noqa: E731
    for name, (lo_e, up_e) in _all_searches(f, f, 0.0, 5.0).items():
        assert f(up_e) == 0.0 and lo_e <= 1.0 <= up_e and up_e - 1.0 < 1e-6, (name, lo_e, up_e)
    bad, good = inv.illinois_log(f, 0.0, 0.0, 1.0, 5.0, 0.0, 1e-9, 1e-9)
    assert f(bad) > 0.0 and f(good) == 0.0 and good - bad <= 1e-8


def test_nan_is_refused_in_one_line_by_every_search():
    nan = lambda e: math.nan  # noqa: E731
    calls = [
        lambda: inv.calibrate(nan, 1.0, 0.0, 1.0, increasing=True),
        lambda: inv.calibrate_near(nan, 1e-6, (0.5,), 0.1, 1.0, rtol=1e-3),
        lambda: inv.eps_interval(nan, nan, 1e-6, 1.0, search="secant"),
        lambda: inv.eps_interval(nan, nan, 1e-6, 1.0, search="log"),
        lambda: inv.eps_bracket(nan, nan, 1e-6, hi=1.0),
        lambda: inv.invert_delta_curve(nan, 1e-6, lo=0.0, hi=1.0),
        lambda: inv.illinois_log(nan, 1e-6, 0.0, 1.0, 1.0, 0.0, 1e-9, 1e-9),
    ]
    for call in calls:
        with pytest.raises(ParameterError, match="the certified curve is nan at x="):
            call()
    with pytest.raises(ParameterError, match="the certified curve is nan in the eps search"):
        inv.eps_interval_grid(lambda x: (np.full(np.shape(x), np.nan),) * 2, 1e-6, 1.0, 1e-9)
    for call in (lambda: inv.calibrate(UP, math.nan, 0.0, 1.0, increasing=False),
                 lambda: inv.eps_interval(UP, LO, math.nan, 1.0),
                 lambda: inv.eps_bracket(UP, LO, math.nan, hi=1.0),
                 lambda: inv.invert_delta_curve(UP, math.nan, lo=0.0, hi=1.0)):
        with pytest.raises(ParameterError, match="target must be a number; got nan"):
            call()


def test_targets_no_point_meets():
    """An eps(delta) search answers inf; a calibration (a parameter must be found) refuses; a bisection asked to
    start from an infeasible end refuses (its caller checks the end: eps_bracket answers inf)."""
    assert inv.eps_interval(UP, LO, 1e-300, 1.0) == (math.inf, math.inf)
    assert inv.eps_bracket(UP, LO, 1e-300, hi=1.0) == (1.0, math.inf)
    with pytest.raises(InfeasibleError):
        inv.calibrate(UP, 1e-300, 0.0, 1.0, increasing=False)
    with pytest.raises(ParameterError, match="at the upper end"):
        inv.invert_delta_curve(UP, 1e-300, lo=0.0, hi=1.0)


def test_eps_bracket_without_a_lower_curve_and_with_its_own_bracket():
    low, up = inv.eps_bracket(UP, None, 1e-3, hi=10.0)
    assert low is None and UP(up) <= 1e-3
    low2, up2 = inv.eps_bracket(UP, LO, 1e-3, hi=10.0, hi_lower=5.0)
    assert up2 == up and low2 <= -math.log(1e-3) / 3.0 <= up2


def test_the_short_decimal_upper_end_round_trips():
    """A delta that is the curve's own value at a typed eps inverts to that eps exactly (shortest_certified) on every
    search of the inverter."""
    d = UP(1.25)
    for name, (_, up_e) in _all_searches(UP, LO, d, 300.0).items():
        assert up_e == 1.25, (name, up_e)


def test_eps_interval_for_delta_is_the_secant_search():
    for d in (1e-2, 1e-9):
        assert inv.eps_interval_for_delta(UP, LO, d, 50.0) == inv.eps_interval(UP, LO, d, 50.0, search="secant")
    with pytest.raises(ParameterError, match="search must be one of"):
        inv.eps_interval(UP, LO, 1e-3, 1.0, search="brent")


def test_bisect_vectorised_brackets_every_curve_like_a_scalar_bisection():
    # curves delta_i(eps) = exp(-a_i eps), target 1e-3: root log(1e3) / a_i; each returned (lo, hi) brackets it,
    # hi evaluated at or below the target, lo above it, within 60 halvings of [0, 50] (or the ulp of the root)
    from shufflesim.accounting.numerics.invert import bisect_vectorised

    a = np.array([0.5, 1.0, 3.0, 10.0])
    lo, hi = bisect_vectorised(lambda x: np.exp(-a * x), 1e-3, np.zeros(4), np.full(4, 50.0), halvings=60)
    root = np.log(1e3) / a
    assert np.all(np.exp(-a * hi) <= 1e-3) and np.all(np.exp(-a * lo) > 1e-3)
    assert np.all(lo <= root) and np.all(root <= hi) and np.all(hi - lo <= np.maximum(50.0 * 2.0 ** -59, 2 * np.spacing(root)))  # halvings or ulp
    with pytest.raises(ParameterError, match="nan"):
        bisect_vectorised(lambda x: np.full(x.shape, np.nan), 1e-3, np.zeros(2), np.ones(2), halvings=3)


def test_largest_feasible_never_exceeds_the_target_and_is_within_rtol():
    from shufflesim.accounting.numerics.invert import largest_feasible

    x = largest_feasible(lambda v: v * v, 2.0, 0.1)  # doubling from 0.1 passes the root sqrt(2)
    assert x * x <= 2.0 and (math.sqrt(2.0) - x) <= 4e-15 * math.sqrt(2.0)
    assert largest_feasible(lambda v: 0.0 if v < 3.0 else 1.0, 0.5, 1.0) < 3.0


def test_bracket_illinois_returns_evaluated_ends_on_both_sides():
    # a curve known as a bracket: log delta(x) in [-3x - 1e-9, -3x + 1e-9]; target log 1e-4: root x* = log(1e4)/3.
    # The returned a has lower(a) > target, b has upper(b) <= target (both evaluated), b - a within rtol b plus the
    # ends' round-off (2e-9 / 3 in x); the tag is the one of the point that gave a.
    from shufflesim.accounting.numerics.invert import bracket_illinois

    seen = []

    def at(c):
        seen.append(c)
        return -3.0 * c - 1e-9, -3.0 * c + 1e-9, round(c, 6)

    t = math.log(1e-4)
    a, b, tag = bracket_illinois(at, t, 0.0, 10.0, -1e-9, "start", rtol=1e-9)
    root = -t / 3.0
    assert a in seen and b in seen and a <= root <= b
    assert -3.0 * a - 1e-9 > t and -3.0 * b + 1e-9 <= t
    assert b - a <= 1e-9 * b + 2e-9 / 3.0 * 4 and tag == round(a, 6)


def test_edges_of_the_newer_searches_are_refused_in_one_line():
    # review of issue 28: a curve that never exceeds the target has no largest feasible point (it looped forever);
    # a nan eps_max or a nan bracket is refused instead of returned as an answer
    from shufflesim.accounting.numerics.invert import bracket_illinois, eps_interval_grid, largest_feasible

    with pytest.raises(InfeasibleError, match="no largest feasible"):
        largest_feasible(lambda v: 0.0, 1.0, 1.0)
    with pytest.raises(ParameterError, match="eps_max"):
        eps_interval_grid(lambda x: (np.zeros_like(x), np.zeros_like(x)), 1e-6, float("nan"), 0.0)
    with pytest.raises(ParameterError, match="nan"):
        bracket_illinois(lambda c: (math.nan, math.nan, None), -5.0, 0.0, 1.0, 0.0, None, rtol=1e-9)
