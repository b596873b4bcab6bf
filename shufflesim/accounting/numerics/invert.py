"""The one safe-side inverter (issue 28 item 1): every monotone certified curve is turned into its inverse here --
eps(delta) of a delta(eps) bound (the tight accountant, the PLD, the closed forms of :mod:`shufflesim.mechanisms`,
the published bounds), and every calibration of a parameter to a target.

Examples: the smallest blanket probability gamma with certified delta_upper(gamma) <= delta (fn
decreasing in gamma); the largest eps0 with delta_upper(eps0) <= delta (fn increasing in eps0); the
smallest eps with delta_upper(eps) <= delta (eps(delta), fn decreasing in eps).

The parts, each with its knobs explicit at the call site (bracket, tolerances, which side is safe):

* :func:`calibrate` -- a bracket [feasible, infeasible] closed by safeguarded regula falsi (below);
* :func:`calibrate_near` -- the same guarantee for privacy-loss tails, with secant steps on log(-log delta);
* :func:`bisect_decreasing` (:func:`invert_delta_curve`) -- plain bisection of a non-increasing curve;
* :func:`illinois_log` -- regula falsi on log delta (delta(eps) is close to log-linear);
* :func:`eps_interval` / :func:`eps_interval_for_delta` -- the certified (eps_lower, eps_upper) of eps(delta) from
  certified bounds on delta(eps) (regula falsi on delta, or on log delta), :func:`eps_interval_grid` the same with
  one vectorised evaluation per pass (the FFT accountant), :func:`eps_bracket` the same by bisection (closed forms);
* :func:`shortest_certified` -- the upper end without search-resolution digits.

One edge handling for all of them: a NaN target or a NaN value of the curve is refused in one line
(:func:`check_target`, :func:`value_at`); a target no evaluated point meets gives eps = inf (an eps(delta)) or
InfeasibleError (a calibration); a target met at the favourable end gives that end; a target of 0 is an ordinary
target (a curve exactly 0 meets it; the log-space search bisects, log 0 being undefined); curves equal to 0, 1 or
inf are ordinary values.  Questions are validated before they reach an inverter (:mod:`.queries`).  Every search
returns *evaluated* points on the two sides of the target (docs/theory.md, section 5.10 for the short-decimal upper
end), so its answer is certified whatever the shape of the curve; monotonicity only decides how close it is.

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

import numpy as np

from shufflesim.core.checks import check_int, check_real
from shufflesim.errors import InfeasibleError, ParameterError


def check_target(target) -> float:
    """The target of an inverse problem as a float; NaN is refused in one line (0 and +-inf are targets that every /
    no point meets, handled by the searches as such)."""
    t = float(target)
    if math.isnan(t):
        raise ParameterError("target must be a number; got nan")
    return t


def value_at(fn: Callable[[float], float], x: float) -> float:
    """``fn(x)`` as a float; a NaN (no certified value) is refused in one line."""
    v = float(fn(x))
    if math.isnan(v):
        raise ParameterError(f"the certified curve is nan at x={x!r}: no safe-side inverse")
    return v


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
    target = check_target(target)
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
        return value_at(fn, x)

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
    target = check_target(target)

    def F(x: float) -> float:
        if x not in cache:
            cache[x] = value_at(fn, x)
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


def illinois_log(ev: Callable[[float], float], target: float, bad: float, v_bad: float, good: float, v_good: float,
                 xtol: float, rtol: float, max_evals: int = 200) -> tuple[float, float]:
    """Safe-side root of a non-increasing ``ev`` (``ev(bad) > target >= ev(good)``, both evaluated):
    returns the final bracket (bad, good), both ends evaluated, with |good - bad| <= xtol + rtol max|.|.

    Regula falsi on log ev (delta(eps) is close to log-linear in eps, so the secant on log delta converges
    in a few steps where the secant on delta does not); when the same end has moved twice the step goes
    past the secant estimate (by twice its last move) so the bracket closes from both sides; every step
    is kept a quarter tolerance inside the bracket, and a bisection is taken whenever four steps have
    not halved it (issue 9).  A target <= 0 has no logarithm: the search bisects.
    Only *which* points are evaluated changes against :func:`calibrate`: the returned ends
    are evaluated points on the two sides of the target, so the result is certified the same way."""
    target = check_target(target)
    lt = math.log(target) if target > 0.0 else None

    def g(v: float) -> float:
        return max(math.log(v), -800.0) - lt if v > 0 else -800.0 - lt

    g_bad = g_good = 0.0
    if lt is not None:
        g_bad, g_good = g(v_bad), g(v_good)
    side = 0  # +k: the bad end kept k times in a row, -k: the good end
    widths = [abs(good - bad)]
    evals = 0
    last = None
    while evals < max_evals:
        w = abs(good - bad)
        tol = xtol + rtol * max(abs(good), abs(bad))
        if w <= tol:
            break
        x = None
        if lt is not None and (len(widths) < 5 or w <= 0.5 * widths[-5]):
            if g_bad != g_good:
                t = g_bad / (g_bad - g_good)
                if 0.0 < t < 1.0:
                    x = bad + t * (good - bad)
            if x is not None and abs(side) >= 2 and last is not None:
                # the same end moved twice: the secant creeps up on the root from that side; step past
                # the estimate by twice its last move (and half a tolerance) to land on the other side
                toward = (1.0 if good > bad else -1.0) * (1.0 if side > 0 else -1.0)
                x = x + toward * (2.0 * abs(x - last) + 0.5 * tol)
        if x is None:
            x = 0.5 * (bad + good)
        a, b = min(bad, good), max(bad, good)
        q = min(0.25 * tol, 0.25 * w)
        x = min(max(x, a + q), b - q)
        if x <= a or x >= b:
            break
        v = value_at(ev, x)
        evals += 1
        last = x
        if v <= target:
            good = x
            g_good = g(v) if lt is not None else 0.0
            side = side - 1 if side < 0 else -1
        else:
            bad = x
            g_bad = g(v) if lt is not None else 0.0
            side = side + 1 if side > 0 else 1
        widths.append(abs(good - bad))
    return bad, good


#: the searches of :func:`eps_interval`: regula falsi on delta (:func:`calibrate`, each end searched on [0, eps_max])
#: or on log delta (:func:`illinois_log`, the lower end's search starting from the bracket the upper end's left)
EPS_SEARCHES = ("secant", "log")


def eps_interval(
    delta_upper: Callable[[float], float],
    delta_lower: Callable[[float], float],
    delta: float,
    eps_max: float,
    *,
    search: str = "secant",
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
    ``search``: one of :data:`EPS_SEARCHES`; "log" reads ``delta_lower`` at the points the upper end's search
    evaluated (cheap where both come from one memoised evaluation, as in the tight accountant's exact path).
    """
    if search not in EPS_SEARCHES:
        raise ParameterError(f"search must be one of {', '.join(EPS_SEARCHES)}; got {search!r}")
    delta = check_target(delta)
    hi = max(check_real("eps_max", eps_max), 0.0) or 1e-300
    seen: list[float] = []  # the points the upper end's search evaluated (search "log")

    def up(x: float) -> float:
        seen.append(x)
        return value_at(delta_upper, x)

    def lo(x: float) -> float:
        return value_at(delta_lower, x)

    # upper end: the smallest evaluated eps with delta_upper <= delta
    if up(0.0) <= delta:
        eps_up = 0.0
    elif up(hi) > delta:
        eps_up = math.inf
    else:
        if search == "log":
            bad_up, eps_up = illinois_log(up, delta, 0.0, up(0.0), hi, up(hi), xtol, rtol)
        else:
            cal = calibrate(up, delta, 0.0, hi, increasing=False, xtol=xtol, rtol=rtol)
            bad_up, eps_up = cal.x_unsafe, cal.x
        eps_up = shortest_certified(up, delta, bad_up, eps_up)  # no search-resolution digits
    # lower end: the largest evaluated eps with delta_lower > delta
    if lo(0.0) <= delta:
        eps_lo = 0.0
    elif lo(hi) > delta:
        eps_lo = math.inf
    elif search == "log":
        # delta_lower <= delta_upper: every point feasible for the upper end is feasible here; start
        # from the tightest evaluated bracket
        good = min([x for x in seen if lo(x) <= delta])
        bad = max([x for x in seen if lo(x) > delta and x < good])
        eps_lo, _ = illinois_log(lo, delta, bad, lo(bad), good, lo(good), xtol, rtol)
    else:
        cal = calibrate(lo, delta, 0.0, hi, increasing=False, xtol=xtol, rtol=rtol)
        eps_lo = float(cal.x_unsafe) if cal.x_unsafe is not None else 0.0
    return min(eps_lo, eps_up), eps_up


def eps_interval_for_delta(
    delta_upper: Callable[[float], float],
    delta_lower: Callable[[float], float],
    delta: float,
    eps_max: float,
    *,
    xtol: float = 1e-9,
    rtol: float = 1e-9,
) -> tuple[float, float]:
    """Certified (eps_lower, eps_upper) for eps(delta): :func:`eps_interval` with regula falsi on delta."""
    return eps_interval(delta_upper, delta_lower, delta, eps_max, search="secant", xtol=xtol, rtol=rtol)


#: points evaluated per bracket and pass of :func:`eps_interval_grid`
GRID_POINTS = 48


def eps_interval_grid(both: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], delta: float, eps_max: float,
                      xtol: float, rtol: float = 1e-9, points: int = GRID_POINTS,
                      max_passes: int = 60) -> tuple[float, float]:
    """Certified (eps_lower, eps_upper) for eps(delta) from ``both(eps_array) -> (delta_lower, delta_upper)``
    (certified bounds on the non-increasing delta(eps) at every eps of the array; beyond ``eps_max`` delta no
    longer changes), with one vectorised evaluation per pass instead of one call per eps (issue 21).

    The contract of :func:`eps_interval`: eps_upper is an *evaluated* eps with
    delta_upper(eps_upper) <= delta (so eps(delta) <= eps_upper), eps_lower an *evaluated* eps with
    delta_lower(eps_lower) > delta (so eps(delta) > eps_lower; 0 when no evaluated point has one), each
    within ``xtol + rtol |eps|`` of an evaluated point on the other side (or no point fits between).
    Certification rests on these per-point facts only, not on the monotonicity of the computed bounds: the
    upper end is the smallest evaluated eps whose upper bound meets delta, the lower end the largest whose
    lower bound exceeds it; each pass puts ``points`` points into each end's open bracket (geometrically
    spaced while it starts at 0, where eps(delta) may be many orders below eps_max)."""
    delta = check_target(delta)
    hi = max(check_real("eps_max", eps_max), 0.0) or 1e-300

    def values(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lv, uv = both(x)
        if np.any(np.isnan(lv)) or np.any(np.isnan(uv)):
            raise ParameterError("the certified curve is nan in the eps search: no safe-side inverse")
        return lv, uv

    xs = np.concatenate(([0.0], hi * np.geomspace(1e-12, 1.0, points)))
    lo_v, up_v = values(xs)

    def brackets():
        """((bad, good) or None, value) per end, from every point evaluated so far."""
        out = []
        ok = up_v <= delta  # upper end: the smallest evaluated eps with delta_upper <= delta
        if not np.any(ok):
            out.append((None, math.inf))
        else:
            good = float(xs[ok].min())
            bad_set = xs[(~ok) & (xs < good)]
            out.append(((float(bad_set.max()), good), good) if bad_set.size else (None, good))
        big = lo_v > delta  # lower end: the largest evaluated eps with delta_lower > delta
        if not np.any(big):
            out.append((None, 0.0))
        else:
            bad = float(xs[big].max())
            good_set = xs[(~big) & (xs > bad)]
            out.append(((bad, float(good_set.min())), bad) if good_set.size else (None, math.inf))
        return out

    for _ in range(max_passes):
        grids = []
        for br, _v in brackets():
            if br is None:
                continue
            bad, good = br
            a, b = min(bad, good), max(bad, good)
            if b - a <= xtol + rtol * b:
                continue
            g = (b * np.geomspace(1e-12, 1.0, points + 1)[:-1] if a == 0.0
                 else np.linspace(a, b, points + 2)[1:-1])
            g = g[(g > a) & (g < b)]
            if g.size:
                grids.append(g)
        if not grids:
            break
        new = np.unique(np.concatenate(grids))
        lv, uv = values(new)
        xs, lo_v, up_v = np.concatenate((xs, new)), np.concatenate((lo_v, lv)), np.concatenate((up_v, uv))
    (br_up, eps_up), (_, eps_lo) = brackets()
    if br_up is not None:  # no search-resolution digits on the upper end (shortest_certified)
        eps_up = shortest_certified(lambda e: float(values(np.array([e]))[1][0]), delta, br_up[0], eps_up)
    return min(eps_lo, eps_up), eps_up


def bisect_decreasing(
    delta_at: Callable[[float], float],
    target: float,
    *,
    lo: float,
    hi: float,
    rtol: float = 1e-10,
    atol: float = 1e-14,
    max_iter: int = 200,
) -> tuple[float, float | None, int]:
    """Bracket the smallest eps in [lo, hi] with ``delta_at(eps) <= target``, never undershooting.

    ``delta_at`` is a bound on delta as a function of eps, expected non-increasing; ``hi`` must satisfy
    ``delta_at(hi) <= target`` (checked: ParameterError otherwise).  Bisection keeps the invariants
    ``delta_at(b) <= target`` and ``delta_at(a) > target``, and returns ``(b, a, evaluations)``:

    * if ``delta_at`` is an upper bound on the true delta, the mechanism is (b, target)-DP: ``b`` is the
      safe-side eps (certified by the bound itself even if the curve is not monotone);
    * if ``delta_at`` is a lower bound on the true delta, the true eps(target) is > ``a`` (the true delta is
      non-increasing in eps), so ``a`` is a safe lower bound on eps.

    ``a`` is ``None`` when ``delta_at(lo) <= target`` already (then ``b == lo``).  The loop stops when
    ``b - a <= max(atol, rtol * b)`` or after ``max_iter`` halvings; ``b`` is then moved to the shortest
    decimal of (a, b] evaluated to meet the target (:func:`shortest_certified`).
    """
    if not (hi >= lo):
        raise ParameterError(f"invert_delta_curve needs lo <= hi; got lo={lo!r}, hi={hi!r}")
    target = check_target(target)
    evaluations = 0

    def ev(x: float) -> float:
        nonlocal evaluations
        evaluations += 1
        return value_at(delta_at, x)

    d_hi = ev(hi)
    if not d_hi <= target:
        raise ParameterError(
            f"invert_delta_curve: the bound gives delta={d_hi!r} > target={target!r} at the upper end eps={hi!r}"
        )
    if ev(lo) <= target:
        return lo, None, evaluations
    a, b = lo, hi
    for _ in range(max_iter):
        if b - a <= max(atol, rtol * b):
            break
        mid = 0.5 * (a + b)
        if ev(mid) <= target:
            b = mid
        else:
            a = mid
    # the upper end without search-resolution digits: the shortest decimal of (a, b] evaluated to meet the
    # target (a protocol's own (eps, delta_upper(eps)) then inverts to eps exactly)
    b = shortest_certified(ev, target, a, b)
    return b, a, evaluations


#: the public name the bounds use (:mod:`shufflesim.accounting.bounds.transforms` re-exports it)
invert_delta_curve = bisect_decreasing


def eps_bracket(
    delta_upper: Callable[[float], float],
    delta_lower: Callable[[float], float] | None,
    delta: float,
    *,
    hi: float,
    hi_lower: float | None = None,
    rtol: float = 1e-10,
) -> tuple[float | None, float]:
    """Certified (eps_lower, eps_upper) for eps(delta) of a closed-form profile, by :func:`bisect_decreasing`.

    eps_upper: the bisection of ``delta_upper`` on [0, ``hi``], +inf when even ``delta_upper(hi)`` exceeds
    ``delta`` (no finite eps is certified: e.g. a profile with a floor, :mod:`shufflesim.mechanisms.ikos`);
    eps_lower: the bisection's evaluated infeasible end for ``delta_lower`` on [0, ``hi_lower``] (default ``hi``),
    0 when ``delta_lower(0)`` already meets ``delta``, ``hi_lower`` itself when even ``delta_lower(hi_lower)`` exceeds
    it, None when there is no lower curve; never above eps_upper.  Unlike :func:`eps_interval`'s ``eps_max``, ``hi``
    is only where the search ends (a closed form may still fall beyond it, e.g. the Gaussian profile), so a target
    not met there leaves eps_upper = inf (always certified) and eps_lower = ``hi_lower`` (certified: even the lower
    curve exceeds delta there), not inf.
    """
    delta = check_target(delta)
    up = math.inf
    if value_at(delta_upper, hi) <= delta:
        up, _, _ = bisect_decreasing(delta_upper, delta, lo=0.0, hi=hi, rtol=rtol)
    if delta_lower is None:
        return None, up
    hi_lower = hi if hi_lower is None else hi_lower
    if not value_at(delta_lower, hi_lower) <= delta:
        return min(hi_lower, up), up  # even the lower curve exceeds delta at the end: eps(delta) > hi_lower
    _, below, _ = bisect_decreasing(delta_lower, delta, lo=0.0, hi=hi_lower, rtol=rtol)
    return (0.0 if below is None else min(below, up)), up


def bisect_vectorised(fn: Callable[[np.ndarray], np.ndarray], target: float, lo: np.ndarray, hi: np.ndarray, *,
                      halvings: int) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise bisection of many non-increasing curves at once (one vectorised evaluation per halving):
    ``fn(x)[i]`` is curve i at x[i].  After ``halvings`` halvings returns (lo, hi) with every evaluated lo above
    ``target`` and every evaluated hi at or below it (an end never evaluated keeps its start value).  Used where
    a search runs over thousands of curves (the exact δ(ε) of every neighbouring pair of a matrix randomiser,
    :mod:`shufflesim.mechanisms.matrix`)."""
    target = check_target(target)
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    for _ in range(check_int("halvings", halvings, minimum=0)):
        mid = 0.5 * (lo + hi)
        values = np.asarray(fn(mid), dtype=float)
        if np.isnan(values).any():
            raise ParameterError("the curve has no certified value (nan) in a vectorised bisection")
        above = values > target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return lo, hi


def largest_feasible(fn: Callable[[float], float], target: float, start: float, *, rtol: float = 1e-15,
                     max_iter: int = 200) -> float:
    """The largest x >= 0 with ``fn(x) <= target`` for a non-decreasing ``fn`` with fn(0) <= target: ``start`` is
    doubled until it is infeasible, then the bracket is bisected to ``rtol`` relative.  Returns the feasible end
    (evaluated, or 0), so ``fn`` at the answer never exceeds the target (e.g. the per-round ε of the advanced
    composition theorem, :func:`shufflesim.accounting.bounds.composition.advanced_eps_per_round`)."""
    target = check_target(target)
    lo, hi = 0.0, check_real("start", start, low=0.0, low_open=True)
    while value_at(fn, hi) <= target:
        lo, hi = hi, 2.0 * hi
        if not math.isfinite(hi):
            raise InfeasibleError(f"no x up to {lo:.3g} exceeds the target {target!r}: the curve stays at or below "
                                  "it, so there is no largest feasible x")
    for _ in range(max_iter):
        if hi - lo <= rtol * hi:
            break
        mid = 0.5 * (lo + hi)
        if value_at(fn, mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo


def bracket_illinois(at: Callable[[float], tuple[float, float, object]], target: float, a: float, b: float,
                     lower_a: float, tag_a: object, *, rtol: float, max_steps: int = 200,
                     probes: int = 40) -> tuple[float, float, object]:
    """Safe-side root of a non-increasing curve known at each point only through a certified bracket:
    ``at(c) -> (lower, upper, tag)`` with lower <= curve(c) <= upper (in any monotone scale, e.g. log δ; ``tag``
    names what gave the lower end, e.g. the worst data set).  Starts from ``a`` (its ``lower_a``, ``tag_a``
    evaluated) and ``b``, where the curve is known to be at or below ``target`` without an evaluation (e.g. δ = 0 at
    ε = ε0).  Returns ``(a, b, tag_a)`` with lower(a) > target (or ``a`` the start) and upper(b) <= target (or ``b``
    the start), ``b - a <= rtol b`` or as close as the ends' round-off allows.

    Illinois steps (regula falsi halving the end that stays) on the ends' distances to the target, kept 1e-3 of
    the width inside the bracket (a quarter of it near convergence, so that both ends move), bisection while an
    end has no finite value; where a point's bracket straddles the target (within its round-off of the root) the
    search probes on either side of it with doubling steps.  Both returned ends are evaluated points (or the
    given start), so the answer is certified whatever the curve's shape (the exact shuffled binary RR,
    :mod:`shufflesim.accounting.exact.exact_rr2`, where the two ends come from every data set's windows)."""
    target = check_target(target)
    ga, gb = lower_a - target, -math.inf
    side = 0

    def at(c: float, _at=at) -> tuple[float, float, object]:
        lo, up, tag = _at(c)
        if math.isnan(lo) or math.isnan(up):
            raise ParameterError("the certified bracket is nan in the search: no safe-side inverse")
        return lo, up, tag
    for _ in range(max_steps):
        if b - a <= rtol * b:
            break
        if math.isfinite(gb) and math.isfinite(ga) and ga > gb:
            c = (a * gb - b * ga) / (gb - ga)
            w = b - a
            c = min(max(c, a + 1e-3 * w), b - 1e-3 * w)
            if w <= 1e3 * rtol * b:  # near convergence, straddle the root so that both ends move
                c = min(max(c, a + 0.25 * w), b - 0.25 * w)
        else:
            c = 0.5 * (a + b)
        lo, up, tag = at(c)
        if lo > target:
            a, ga, tag_a = c, lo - target, tag
            if side == -1:
                gb *= 0.5  # Illinois: halve the end that stays
            side = -1
        elif up <= target:
            b, gb = c, up - target
            if side == 1:
                ga *= 0.5
            side = 1
        else:  # c is within the ends' round-off of the root: probe on either side of it
            h = max(rtol * b * 0.25, 1e-300)
            for _ in range(probes):
                lo_a, _, tag = at(max(a, c - h))
                _, up_b, _ = at(min(b, c + h))
                if lo_a > target:
                    a, ga, tag_a = max(a, c - h), lo_a - target, tag
                if up_b <= target:
                    b, gb = min(b, c + h), up_b - target
                if lo_a > target and up_b <= target:
                    break
                h *= 2.0
            break
    return a, b, tag_a
