"""Erlingsson, Feldman, Mironov, Raghunathan, Talwar, Thakurta (SODA 2019): amplification by shuffling.

Closed form (arXiv:1811.12469; docs/theory.md#bounds-erlingsson): eps = 12 eps0 sqrt(log(1/delta)/n), valid only for eps0 <= 1/2, n >= 1000 and
delta <= 0.01 (the constants of the theorem hold in that regime only; the ranges are those enforced by
Balle et al.'s public package).  Inverted for delta: delta = exp(-n (eps/(12 eps0))^2), applicable when
the resulting delta <= 0.01.  The bound holds for any eps0-LDP randomiser.
"""

from __future__ import annotations

import math

from shufflesim.core.checks import check_int, check_probability, check_real
from shufflesim.accounting.model.results import DeltaBound, EpsBound, NotApplicable

__all__ = ["erlingsson_delta", "erlingsson_eps", "ERLINGSSON_MAX_EPS0", "ERLINGSSON_MIN_N", "ERLINGSSON_MAX_DELTA"]

ERLINGSSON_MAX_EPS0 = 0.5
ERLINGSSON_MIN_N = 1000
ERLINGSSON_MAX_DELTA = 0.01

_REF = "Erlingsson et al. 2019 closed form (arXiv:1811.12469; docs/theory.md#bounds-erlingsson)"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _check_regime(n: int, eps0: float, *, eps=None, delta=None) -> NotApplicable | None:
    if eps0 > ERLINGSSON_MAX_EPS0:
        return NotApplicable("erlingsson", f"erlingsson requires eps0 <= 0.5; got eps0={_fmt(eps0)}", eps=eps, delta=delta)
    if n < ERLINGSSON_MIN_N:
        return NotApplicable("erlingsson", f"erlingsson requires n >= 1000; got n={n}", eps=eps, delta=delta)
    return None


def erlingsson_log_delta(eps: float, *, n: int, eps0: float) -> float:
    """log delta = -n (eps/(12 eps0))^2: the raw formula, WITHOUT validity checks (for reproducing tables
    that print it outside its regime, e.g. seed 003 Table II).  Use :func:`erlingsson_delta` for a bound."""
    if eps0 == 0.0:
        return -math.inf if eps > 0.0 else 0.0
    return -n * (eps / (12.0 * eps0)) ** 2


def erlingsson_delta(eps: float, *, n: int, eps0: float) -> DeltaBound | NotApplicable:
    """delta(eps) = exp(-n (eps/(12 eps0))^2) where the closed form applies (eps0 <= 1/2, n >= 1000,
    delta <= 0.01)."""
    eps = check_real("eps", eps, low=0.0)
    n = check_int("n", n, minimum=1)
    eps0 = check_real("eps0", eps0, low=0.0)
    bad = _check_regime(n, eps0, eps=eps)
    if bad is not None:
        return bad
    ld = erlingsson_log_delta(eps, n=n, eps0=eps0)
    if ld > math.log(ERLINGSSON_MAX_DELTA):
        return NotApplicable(
            "erlingsson",
            f"erlingsson requires delta <= 0.01; at eps={_fmt(eps)} the formula gives delta={_fmt(math.exp(ld))}",
            eps=eps,
        )
    return DeltaBound(eps=eps, delta_upper=math.exp(ld), delta_lower=None, method="erlingsson", notes=(_REF,))


def erlingsson_eps(delta: float, *, n: int, eps0: float) -> EpsBound | NotApplicable:
    """eps(delta) = 12 eps0 sqrt(log(1/delta)/n) where the closed form applies."""
    delta = check_probability("delta", delta)
    n = check_int("n", n, minimum=1)
    eps0 = check_real("eps0", eps0, low=0.0)
    bad = _check_regime(n, eps0, delta=delta)
    if bad is not None:
        return bad
    if not (0.0 < delta <= ERLINGSSON_MAX_DELTA):
        return NotApplicable("erlingsson", f"erlingsson requires 0 < delta <= 0.01; got delta={_fmt(delta)}", delta=delta)
    eps = 12.0 * eps0 * math.sqrt((-math.log(delta)) / n)
    return EpsBound(delta=delta, eps_upper=eps, eps_lower=None, method="erlingsson", notes=(_REF,))
