"""Generic inverse problems: the safe-side solution of fn(x) <= target for a monotone fn.

Examples: the smallest blanket probability gamma with certified delta_upper(gamma) <= delta (fn
decreasing in gamma); the largest eps0 with delta_upper(eps0) <= delta (fn increasing in eps0); the
smallest eps with delta_upper(eps) <= delta (eps(delta), fn decreasing in eps).

:func:`calibrate` keeps a bracket [feasible, infeasible] whose ends have both been *evaluated*, shrinks
it with a safeguarded regula falsi (Illinois variant; every other step is a bisection, so the bracket
at least halves every two steps), and returns the feasible end.  The returned value is therefore
verified: fn(x) <= target was computed at exactly that x, whatever the shape of fn, so calibration
never overshoots the target.  Monotonicity only matters for *how close* the answer is to the true
boundary (within ``xtol + rtol |x|``), not for its safety.  (Compare dp_accounting's Brent-based
``mechanism_calibration``, which returns a point near the root without this one-sided guarantee.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Callable

from shufflesim.core.checks import check_int, check_real
from shufflesim.errors import InfeasibleError, ParameterError


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    ``x`` is the safe value (``value = fn(x) <= target``, verified).  ``x_unsafe`` is the evaluated
    infeasible end of the final bracket (``value_unsafe > target``), or None when ``x`` is the end of
    the search interval on the infeasible side (the whole interval is feasible).
    """

    x: float
    value: float
    x_unsafe: float | None
    value_unsafe: float | None
    evaluations: int


def calibrate(
    fn: Callable[[float], float],
    target: float,
    lo: float,
    hi: float,
    *,
    increasing: bool,
    xtol: float = 1e-9,
    rtol: float = 1e-9,
    max_evals: int = 200,
    log_scale: bool = False,
) -> Calibration:
    """Safe-side solution of ``fn(x) <= target`` on [lo, hi] for fn monotone in x.

    ``increasing=True``: fn grows with x, the feasible set is [lo, x*]; returns the largest feasible x
    found (never above x*).  ``increasing=False``: the feasible set is [x*, hi]; returns the smallest
    feasible x found.  Stops when the bracket is narrower than ``xtol + rtol·|x|``.  ``log_scale``
    bisects in log x (requires lo > 0).  Raises InfeasibleError when even the favourable end of
    [lo, hi] violates the target.
    """
    lo = check_real("lo", lo)
    hi = check_real("hi", hi)
    target = float(target)
    if math.isnan(target):
        raise ParameterError("target must be a number; got nan")
    if not lo < hi:
        raise ParameterError(f"calibrate needs lo < hi; got lo={lo!r}, hi={hi!r}")
    xtol = check_real("xtol", xtol, low=0.0)
    rtol = check_real("rtol", rtol, low=0.0)
    if xtol == 0 and rtol == 0:
        raise ParameterError("xtol and rtol cannot both be 0")
    max_evals = check_int("max_evals", max_evals, minimum=2)
    if log_scale and lo <= 0:
        raise ParameterError(f"log_scale needs lo > 0; got lo={lo!r}")

    evals = 0

    def ev(x: float) -> float:
        nonlocal evals
        evals += 1
        v = float(fn(x))
        if math.isnan(v):
            raise ParameterError(f"calibrate: fn returned nan at x={x!r}")
        return v

    good, bad = (lo, hi) if increasing else (hi, lo)
    v_good = ev(good)
    if not v_good <= target:
        raise InfeasibleError(
            f"no value in [{lo:.6g}, {hi:.6g}] meets the target {target:.6g}: "
            f"even x={good:.6g} gives {v_good:.6g}; widen the search interval or relax the target"
        )
    v_bad = ev(bad)
    if v_bad <= target:
        return Calibration(bad, v_bad, None, None, evals)

    step = 0
    side_count = 0  # Illinois: consecutive updates of the same end
    last_side = None
    g_good, g_bad = v_good - target, v_bad - target
    while abs(bad - good) > xtol + rtol * max(abs(good), abs(bad)) and evals < max_evals:
        step += 1
        x = None
        if step % 2 == 1 and math.isfinite(g_good) and math.isfinite(g_bad) and g_bad != g_good:
            w_good, w_bad = g_good, g_bad
            if last_side == "good" and side_count >= 2:
                w_bad = g_bad / 2 ** (side_count - 1)
            elif last_side == "bad" and side_count >= 2:
                w_good = g_good / 2 ** (side_count - 1)
            # the secant step needs a non-zero, finite difference: near an extreme target (delta = 1e-320) the
            # halved (Illinois) values can underflow to equal subnormals or zeros; then bisect instead
            denom = w_good - w_bad
            t = w_good / denom if denom != 0.0 and math.isfinite(denom) else math.nan
            if 0.0 < t < 1.0:
                x = good + t * (bad - good)
                # keep away from the ends so the bracket really shrinks
                a, b = min(good, bad), max(good, bad)
                x = min(max(x, a + 0.01 * (b - a)), b - 0.01 * (b - a))
        if x is None:
            if log_scale:
                x = math.sqrt(good * bad)
            else:
                x = 0.5 * (good + bad)
        if x == good or x == bad:
            break
        v = ev(x)
        if v <= target:
            good, v_good, g_good = x, v, v - target
            side_count = side_count + 1 if last_side == "good" else 1
            last_side = "good"
        else:
            bad, v_bad, g_bad = x, v, v - target
            side_count = side_count + 1 if last_side == "bad" else 1
            last_side = "bad"
    return Calibration(good, v_good, bad, v_bad, evals)


def calibrate_near(fn: Callable[[float], float], target: float, guesses, lo: float, hi: float, *, rtol: float,
                   max_evals: int = 60, known: dict | None = None):
    """Safe-side smallest x in [lo, hi] (lo > 0) with ``fn(x) <= target`` for fn decreasing in x (a certified δ
    as a function of a blanket γ or of the multiplier ν that sets the γ's): a
    :class:`~shufflesim.accounting.numerics.invert.Calibration` whose ``x`` was *evaluated* to meet the target.

    Why not :func:`~shufflesim.accounting.numerics.invert.calibrate` alone: its regula falsi works on δ itself, which
    spans tens of orders of magnitude over the bracket, so it mostly bisects (~30 evaluations of a certified δ
    at rtol 1e-4 from a bracket of a factor 1000).  Privacy-loss tails are δ ≈ exp(−c·x^a), so the model
    log(−log δ) is close to *linear in log x*: secant steps on that model (from the evaluated points nearest the
    target) land within a fraction of rtol after 2-3 evaluations, and each step aims just past the predicted
    root (by rtol/4) on the side of the bracket still missing, so the bracket [infeasible, feasible] closes to
    rtol in ~4-6 evaluations.  Steps that leave the current bracket or cannot be modelled (δ = 0 or ≥ 1) are
    replaced by a geometric bisection.  The model only chooses *where* to evaluate: the answer is then handed to
    ``calibrate`` on the bracket found (both ends already evaluated and cached, so it returns at once; if the
    bracket is still wider than rtol it finishes the search itself), which returns its evaluated feasible end,
    so the guarantee is the same as ``calibrate``'s (fn(x) <= target verified at x; never past the target).
    ``known``: already evaluated points {x: fn(x)} (shared and extended; a cache).  InfeasibleError when
    nothing in [lo, hi] meets the target.
    """
    cache = {} if known is None else known
    target = float(target)

    def F(x: float) -> float:
        if x not in cache:
            cache[x] = float(fn(x))
        return cache[x]

    def model(v: float) -> float | None:
        return math.log(-math.log(v)) if 0.0 < v < 1.0 else None

    ys: dict[float, float | None] = {}  # the model coordinate of each evaluated point

    start = len(cache)
    ty = model(target)
    for x in guesses:
        if lo <= x <= hi:
            F(float(x))
    while ty is not None and len(cache) - start < max_evals - 2:
        inside = [(x, v) for x, v in cache.items() if lo <= x <= hi]
        feas = [x for x, v in inside if v <= target]
        good = min(feas) if feas else None
        infeas = [x for x, v in inside if v > target and (good is None or x < good)]
        bad = max(infeas) if infeas else None
        if good is not None and bad is not None and good - bad <= rtol * good:
            break
        a, b = (bad if bad is not None else lo), (good if good is not None else hi)
        for x, v in inside:
            if x not in ys:
                ys[x] = model(v)
        pts = sorted((abs(ys[x] - ty), x, ys[x]) for x, _ in inside if ys[x] is not None)[:2]
        xs = None
        if len(pts) == 2 and pts[0][2] != pts[1][2]:
            (_, x1, y1), (_, x2, y2) = pts
            lx = math.log(x1) + (ty - y1) * (math.log(x2) - math.log(x1)) / (y2 - y1)
            if math.isfinite(lx) and lx < 709.0:
                xs = math.exp(lx)
                # aim past the root on the side whose end is farther from it (closing the bracket)
                if good is None or (bad is not None and good - xs > xs - bad):
                    xs *= 1.0 + rtol / 4.0
                else:
                    xs *= 1.0 - rtol / 4.0
        if xs is None or not a < xs < b or xs in cache:
            xs = math.sqrt(a * b)
            if xs in cache or not a < xs < b:
                break
        F(xs)
    inside = [(x, v) for x, v in cache.items() if lo <= x <= hi]
    feas = [x for x, v in inside if v <= target]
    good = min(feas) if feas else hi
    infeas = [x for x, v in inside if v > target and x < good]
    bad = max(infeas) if infeas else lo
    if bad >= good:  # good == lo: the whole interval certifies
        return Calibration(good, F(good), None, None, len(cache) - start)
    cal = calibrate(F, target, bad, good, increasing=False, xtol=0.0, rtol=rtol, log_scale=True,
                    max_evals=max(2, max_evals - (len(cache) - start) + 2))
    return Calibration(cal.x, cal.value, cal.x_unsafe, cal.value_unsafe, len(cache) - start)


def shortest_decimal_in(a: float, b: float) -> float | None:
    """The float with the fewest significant decimal digits in the half-open interval (a, b], 0 <= a < b
    (``b`` truncated to d significant digits for the smallest d that stays above ``a``); None if no such
    float is found below 18 digits.  Exact: the truncation is done in :class:`decimal.Decimal`."""
    if not (0.0 <= a < b and math.isfinite(b)):
        return None
    big = Decimal(b)
    top = big.adjusted()
    for digits in range(1, 18):
        c = float(big.quantize(Decimal(1).scaleb(top - digits + 1), rounding=ROUND_FLOOR))
        if a < c <= b:
            return c
    return None


def significant_digits(x: float) -> int:
    """Significant decimal digits of the shortest representation of the float ``x`` (0 for 0)."""
    if x == 0.0 or not math.isfinite(x):
        return 0
    return len(Decimal(repr(abs(x))).normalize().as_tuple().digits)


#: the most significant digits of an eps that :func:`shortest_certified` moves an upper end to: an eps a user
#: typed (1, 0.5, 0.125, 1.5e-3); a bracket of relative width ~2e-9 holds such a decimal only for ~0.2% of the
#: answers, so other answers keep their evaluated end unchanged
SHORT_DIGITS = 6
#: extra evaluations :func:`shortest_certified` may spend (a typed eps is found by the first one)
SHORTEST_EVALS = 2


def shortest_certified(fn: Callable[[float], float], target: float, bad: float | None, good: float, *,
                       evals: int = SHORTEST_EVALS, max_digits: int = SHORT_DIGITS) -> float:
    """The upper end ``good`` of a final bracket (bad, good] (``fn(bad) > target >= fn(good)``, both evaluated,
    fn non-increasing) moved down to the shortest decimal of the bracket with at most ``max_digits``
    significant digits at which ``fn`` is *evaluated* to meet the target (at most ``evals`` evaluations;
    ``good`` when there is no such decimal or none certifies).

    Why: the inverse query eps(delta) returns an evaluated eps with delta_upper(eps) <= delta, within its
    resolution (xtol + rtol|eps|, ~1e-9) above the boundary.  Where delta itself is a certified delta_upper(eps*)
    -- a protocol calibrated to eps* reports exactly that pair -- the boundary *is* eps* and the bracket's
    feasible end is eps* plus search resolution (1.00000000049994 for blanket-sum at n = 1000, eps = 1): the
    round trip printed numerical noise above the protocol's own certified eps.  An eps* the user typed is the
    shortest decimal of the bracket, and it is kept only if evaluated to certify, so the answer stays an
    evaluated, certified point, never larger than ``good``."""
    if bad is None or not bad < good:
        return good
    for _ in range(evals):
        c = shortest_decimal_in(bad, good)
        if c is None or c >= good or significant_digits(c) > max_digits:
            break
        if float(fn(c)) <= target:
            good = c
        else:
            bad = c
    return good


def eps_interval_for_delta(
    delta_upper: Callable[[float], float],
    delta_lower: Callable[[float], float],
    delta: float,
    eps_max: float,
    *,
    xtol: float = 1e-9,
    rtol: float = 1e-9,
) -> tuple[float, float]:
    """Certified (eps_lower, eps_upper) for eps(delta) = min{eps >= 0 : delta(eps) <= delta}.

    ``delta_upper``/``delta_lower`` are certified bounds on the non-increasing function delta(eps);
    beyond ``eps_max`` delta(eps) no longer changes.  eps_upper is an evaluated eps with
    delta_upper(eps_upper) <= delta, so eps(delta) <= eps_upper; eps_lower is an evaluated eps with
    delta_lower(eps_lower) > delta, so eps(delta) > eps_lower (or 0 when nothing better is certified).
    Either end is +inf when no finite eps reaches the target.  The upper end is moved to a short decimal of
    its final bracket that certifies, if there is one (:func:`shortest_certified`: a typed eps round-trips).
    """
    eps_max = max(float(eps_max), 0.0)
    hi = eps_max if eps_max > 0 else 1e-300
    # upper end
    if delta_upper(0.0) <= delta:
        eps_up = 0.0
    elif delta_upper(hi) > delta:
        eps_up = math.inf
    else:
        cal = calibrate(delta_upper, delta, 0.0, hi, increasing=False, xtol=xtol, rtol=rtol)
        eps_up = shortest_certified(delta_upper, delta, cal.x_unsafe, cal.x)
    # lower end
    if delta_lower(0.0) <= delta:
        eps_lo = 0.0
    elif delta_lower(hi) > delta:
        eps_lo = math.inf
    else:
        cal = calibrate(delta_lower, delta, 0.0, hi, increasing=False, xtol=xtol, rtol=rtol)
        eps_lo = float(cal.x_unsafe) if cal.x_unsafe is not None else 0.0
    return min(eps_lo, eps_up), eps_up
