"""Composition theorems for (eps, delta) guarantees of the analytic methods (seed 001 §C.3; docs/theory.md#composition).

* Basic: the n_c-fold composition of an (eps, delta)-DP mechanism is (n_c eps, n_c delta)-DP.
* Advanced (Dwork & Roth 2014, Thm 3.20; seed 001 §C.3; seed 002 Lemma 3): for any delta' > 0 it is
  (sqrt(2 n_c log(1/delta')) eps + n_c eps (e^eps - 1), n_c delta + delta')-DP.
* "best": the smaller eps of the two at the same total delta, as FLAME does (seed 002 Theorem 4 takes the
  minimum of the basic and the advanced eps).

:func:`compose_eps` / :func:`compose_delta` lift a per-round bound (a function of delta or of eps that
returns an :class:`EpsBound` / :class:`DeltaBound` or :class:`NotApplicable`) to n_c rounds.  How the total
delta is split when none is given: for the advanced theorem, delta' = delta_total/(n_c + 1) and the
per-round delta is delta_total/(n_c + 1) (FLAME's split, seed 002 Theorem 4: delta_c = delta_cd (2 beta d + 1));
for the basic theorem, the per-round delta is delta_total/n_c.  For :func:`compose_delta` with the advanced
theorem and no delta', the best delta' on a logarithmic grid is used (every grid point gives a valid bound,
so their minimum is valid).  Lower bounds do not compose through these theorems and are dropped.
"""

from __future__ import annotations

import math
from typing import Callable, Literal

import numpy as np

from shufflesim.core.checks import check_int, check_probability, check_real
from shufflesim.errors import ParameterError
from shufflesim.accounting.model.results import DeltaBound, EpsBound, NotApplicable

__all__ = [
    "Composition",
    "basic_composition",
    "advanced_composition",
    "best_composition",
    "advanced_eps_per_round",
    "compose_eps",
    "compose_delta",
]

Composition = Literal["basic", "advanced", "best"]
_COMPOSITIONS = ("basic", "advanced", "best")


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _composition(c) -> str:
    if c not in _COMPOSITIONS:
        raise ParameterError(f"composition must be one of {', '.join(_COMPOSITIONS)}; got {c!r}")
    return c


def basic_composition(eps: float, delta: float, n_c: int) -> tuple[float, float]:
    """(n_c eps, n_c delta): basic composition (seed 001 §C.1.1)."""
    eps = check_real("eps", eps, low=0.0)
    delta = check_probability("delta", delta)
    n_c = check_int("n_c", n_c, minimum=1)
    return _up(n_c * eps), min(1.0, _up(n_c * delta))


def advanced_composition(eps: float, delta: float, n_c: int, delta_prime: float) -> tuple[float, float]:
    """(sqrt(2 n_c log(1/delta')) eps + n_c eps (e^eps - 1), n_c delta + delta'): Dwork & Roth's advanced
    composition as quoted in seed 001 §C.3; delta' in (0, 1]."""
    eps = check_real("eps", eps, low=0.0)
    delta = check_probability("delta", delta)
    n_c = check_int("n_c", n_c, minimum=1)
    delta_prime = check_real("delta_prime", delta_prime, low=0.0, high=1.0, low_open=True)
    eps_total = math.sqrt(2.0 * n_c * (-math.log(delta_prime))) * eps + n_c * eps * math.expm1(eps)
    # a handful of roundings: move the totals up by a few ulps so they stay upper bounds
    return _up(eps_total, 8), min(1.0, _up(n_c * delta + delta_prime, 4))


def _up(x: float, ulps: int = 2) -> float:
    """``x`` moved up by ``ulps`` units in the last place (to absorb rounding in an upper bound)."""
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def best_composition(eps: float, delta: float, n_c: int, delta_prime: float) -> tuple[float, float, str]:
    """FLAME's rule (seed 002 Theorem 4): eps_total = min(basic, advanced), delta_total = n_c delta + delta'
    (the basic guarantee holds a fortiori at the larger delta).  Returns (eps_total, delta_total, which)."""
    e_b, _ = basic_composition(eps, delta, n_c)
    e_a, d_a = advanced_composition(eps, delta, n_c, delta_prime)
    return (e_b, d_a, "basic") if e_b <= e_a else (e_a, d_a, "advanced")


def advanced_eps_per_round(eps_total: float, n_c: int, delta_prime: float) -> float:
    """The largest per-round eps whose advanced composition is <= eps_total (bisection; never overshoots)."""
    eps_total = check_real("eps_total", eps_total, low=0.0)
    n_c = check_int("n_c", n_c, minimum=1)
    delta_prime = check_real("delta_prime", delta_prime, low=0.0, high=1.0, low_open=True)

    def f(e: float) -> float:
        if e > 700.0:
            return math.inf
        return advanced_composition(e, 0.0, n_c, delta_prime)[0]  # the same rounded-up evaluation

    if eps_total == 0.0:
        return 0.0
    lo, hi = 0.0, eps_total  # f is increasing from f(0) = 0; double hi until f(hi) > eps_total
    while f(hi) <= eps_total:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        if hi - lo <= 1e-15 * hi:
            break
        mid = 0.5 * (lo + hi)
        if f(mid) <= eps_total:
            lo = mid
        else:
            hi = mid
    return lo


def _propagate(b: NotApplicable, *, eps=None, delta=None, what: str) -> NotApplicable:
    return NotApplicable(b.method, f"{what}: {b.reason}", eps=eps, delta=delta, notes=b.notes)


def compose_eps(
    per_round_eps: Callable[[float], EpsBound | NotApplicable],
    delta_total: float,
    n_c: int,
    *,
    composition: Composition = "basic",
    delta_prime: float | None = None,
) -> EpsBound | NotApplicable:
    """eps after n_c rounds at total ``delta_total``, from a per-round eps(delta) bound.

    ``per_round_eps(delta)`` is called with the per-round delta.  See the module docstring for the split.
    """
    delta_total = check_probability("delta_total", delta_total)
    n_c = check_int("n_c", n_c, minimum=1)
    composition = _composition(composition)
    if delta_prime is not None:
        delta_prime = check_real("delta_prime", delta_prime, low=0.0, high=delta_total, low_open=True)
    candidates: list[EpsBound] = []
    last_na: NotApplicable | None = None

    if composition in ("basic", "best"):
        b = per_round_eps(math.nextafter(delta_total / n_c, 0.0))
        if isinstance(b, NotApplicable):
            last_na = _propagate(b, delta=delta_total, what=f"per round (delta={_fmt(delta_total / n_c)})")
        else:
            e, d = basic_composition(b.eps_upper, b.delta, n_c)
            candidates.append(
                EpsBound(
                    delta=delta_total, eps_upper=e, eps_lower=None, method=b.method,
                    notes=b.notes + (f"basic composition of {n_c} rounds at per-round delta={_fmt(b.delta)}",),
                )
            )
    if composition in ("advanced", "best"):
        if delta_total == 0.0:
            last_na = NotApplicable("composition", "advanced composition requires delta_total > 0", delta=delta_total)
        else:
            dp = delta_total / (n_c + 1) if delta_prime is None else delta_prime
            d_round = math.nextafter(math.nextafter((delta_total - dp) / n_c, 0.0), 0.0)
            if d_round <= 0.0:
                raise ParameterError(f"delta_prime must be < delta_total; got delta_prime={dp!r}, delta_total={delta_total!r}")
            b = per_round_eps(d_round)
            if isinstance(b, NotApplicable):
                last_na = _propagate(b, delta=delta_total, what=f"per round (delta={_fmt(d_round)})")
            else:
                e, _ = advanced_composition(b.eps_upper, b.delta, n_c, dp)
                candidates.append(
                    EpsBound(
                        delta=delta_total, eps_upper=e, eps_lower=None, method=b.method,
                        notes=b.notes
                        + (f"advanced composition of {n_c} rounds: per-round delta={_fmt(d_round)}, delta'={_fmt(dp)}",),
                    )
                )
    if not candidates:
        assert last_na is not None
        return last_na
    return min(candidates, key=lambda c: c.eps_upper)


def compose_delta(
    per_round_delta: Callable[[float], DeltaBound | NotApplicable],
    eps_total: float,
    n_c: int,
    *,
    composition: Composition = "basic",
    delta_prime: float | None = None,
    grid_size: int = 64,
) -> DeltaBound | NotApplicable:
    """delta after n_c rounds at total ``eps_total``, from a per-round delta(eps) bound.

    Basic: n_c delta(eps_total/n_c).  Advanced: n_c delta(eps_r) + delta' with eps_r the largest per-round
    eps whose advanced composition is <= eps_total; delta' is ``delta_prime`` or the best of ``grid_size``
    values logarithmically spaced in [1e-300, 0.5].  "best": the smaller of the two.
    """
    eps_total = check_real("eps_total", eps_total, low=0.0)
    n_c = check_int("n_c", n_c, minimum=1)
    composition = _composition(composition)
    grid_size = check_int("grid_size", grid_size, minimum=1)
    candidates: list[DeltaBound] = []
    last_na: NotApplicable | None = None

    if composition in ("basic", "best"):
        b = per_round_delta(math.nextafter(math.nextafter(eps_total / n_c, 0.0), 0.0))
        if isinstance(b, NotApplicable):
            last_na = _propagate(b, eps=eps_total, what=f"per round (eps={_fmt(eps_total / n_c)})")
        else:
            candidates.append(
                DeltaBound(
                    eps=eps_total, delta_upper=min(1.0, _up(n_c * b.delta_upper)), delta_lower=None, method=b.method,
                    notes=b.notes + (f"basic composition of {n_c} rounds at per-round eps={_fmt(b.eps)}",),
                )
            )
    if composition in ("advanced", "best"):
        if delta_prime is not None:
            grid = [check_real("delta_prime", delta_prime, low=0.0, high=1.0, low_open=True)]
        else:
            grid = list(np.logspace(-300.0, math.log10(0.5), grid_size))
        best: DeltaBound | None = None
        for dp in grid:
            e_r = advanced_eps_per_round(eps_total, n_c, dp)
            b = per_round_delta(e_r)
            if isinstance(b, NotApplicable):
                last_na = _propagate(b, eps=eps_total, what=f"per round (eps={_fmt(e_r)}, delta'={_fmt(dp)})")
                continue
            total = _up(n_c * b.delta_upper + dp, 4)
            if best is None or total < best.delta_upper:
                best = DeltaBound(
                    eps=eps_total, delta_upper=min(1.0, total), delta_lower=None, method=b.method,
                    notes=b.notes
                    + (f"advanced composition of {n_c} rounds: per-round eps={_fmt(e_r)}, delta'={_fmt(dp)}",),
                )
        if best is not None:
            candidates.append(best)
    if not candidates:
        assert last_na is not None
        return last_na
    return min(candidates, key=lambda c: c.delta_upper)
