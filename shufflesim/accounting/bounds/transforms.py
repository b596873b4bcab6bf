"""Transforms of (eps, delta) guarantees: amplification by subsampling, DP from total variation, and the
safe-side inversion of a delta(eps) bound into an eps(delta) bound.

* Amplification by subsampling (Balle, Barthe, Gaboardi 2018; quoted as seed 002 Lemma 4; docs/theory.md#subsampling):
  if M on data sets of size m is (eps, delta)-DP for the replacement relation, then running M on m
  records sampled without replacement from n records is (log(1 + (m/n)(e^eps - 1)), (m/n) delta)-DP.
* DP from total variation (seed 004 Lemma F.2; docs/theory.md#dp-from-tv): if TV(M1(X), M2(X)) <= eta for every X
  and M2 is (eps, delta)-DP, then M1 is (eps, delta + (1 + e^eps) eta)-DP.
* :func:`invert_delta_curve`: the eps(delta) of a bound known only as delta(eps), by bisection that only
  ever reports an eps at which the bound itself certifies delta(eps) <= target ("safe side").
"""

from __future__ import annotations

import math
from typing import Callable

from shufflesim.core.checks import check_probability, check_real
from shufflesim.errors import ParameterError

__all__ = [
    "subsample",
    "subsample_inverse",
    "dp_from_tv",
    "invert_delta_curve",
]


def _check_rate(rate) -> float:
    return check_real("rate", rate, low=0.0, high=1.0, low_open=True)


def subsample(eps: float, delta: float, *, rate: float) -> tuple[float, float]:
    """(eps, delta) after subsampling a fraction ``rate = m/n`` without replacement.

    Seed 002 Lemma 4 (Balle, Barthe, Gaboardi 2018): returns
    ``(log(1 + rate (e^eps - 1)), rate * delta)``; computed as ``log1p(rate * expm1(eps))``.
    The guarantee is for the replacement relation on data sets of fixed size (as in the lemma).
    """
    eps = check_real("eps", eps, low=0.0)
    delta = check_probability("delta", delta)
    q = _check_rate(rate)
    return math.log1p(q * math.expm1(eps)), q * delta


def subsample_inverse(eps_after: float, delta_after: float, *, rate: float) -> tuple[float, float]:
    """The (eps, delta) the inner mechanism must satisfy so that subsampling at ``rate`` gives
    (eps_after, delta_after): the inverse of :func:`subsample` (seed 002 Lemma 4).

    ``eps = log(1 + (e^eps_after - 1)/rate)``, ``delta = delta_after/rate`` (may exceed 1, in which case the
    inner requirement is vacuous and any inner mechanism works for that delta; it is returned as is).
    """
    eps_after = check_real("eps_after", eps_after, low=0.0)
    delta_after = check_probability("delta_after", delta_after)
    q = _check_rate(rate)
    return math.log1p(math.expm1(eps_after) / q), delta_after / q


def dp_from_tv(eps: float, delta: float, *, eta: float) -> tuple[float, float]:
    """(eps, delta') for a mechanism within total variation ``eta`` of an (eps, delta)-DP one.

    Seed 004 Lemma F.2: ``delta' = delta + (1 + e^eps) * eta`` (not capped: a value above 1 is a vacuous
    guarantee and is returned unchanged so that the caller sees it).
    """
    eps = check_real("eps", eps, low=0.0)
    delta = check_probability("delta", delta)
    eta = check_probability("eta", eta)
    return eps, delta + (1.0 + math.exp(eps)) * eta


def invert_delta_curve(
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
    ``delta_at(hi) <= target`` (checked).  Bisection keeps the invariants ``delta_at(b) <= target`` and
    ``delta_at(a) > target``, and returns ``(b, a, evaluations)``:

    * if ``delta_at`` is an upper bound on the true delta, the mechanism is (b, target)-DP: ``b`` is the
      safe-side eps (certified by the bound itself even if the curve is not monotone);
    * if ``delta_at`` is a lower bound on the true delta, the true eps(target) is > ``a`` (the true delta is
      non-increasing in eps), so ``a`` is a safe lower bound on eps.

    ``a`` is ``None`` when ``delta_at(lo) <= target`` already (then ``b == lo``).  The loop stops when
    ``b - a <= max(atol, rtol * b)`` or after ``max_iter`` halvings; ``b`` is then moved to the shortest
    decimal of (a, b] evaluated to meet the target (:func:`~shufflesim.accounting.numerics.invert.shortest_certified`).
    """
    if not (hi >= lo):
        raise ParameterError(f"invert_delta_curve needs lo <= hi; got lo={lo!r}, hi={hi!r}")
    evaluations = 0
    d_hi = delta_at(hi)
    evaluations += 1
    if not d_hi <= target:
        raise ParameterError(
            f"invert_delta_curve: the bound gives delta={d_hi!r} > target={target!r} at the upper end eps={hi!r}"
        )
    d_lo = delta_at(lo)
    evaluations += 1
    if d_lo <= target:
        return lo, None, evaluations
    a, b = lo, hi
    for _ in range(max_iter):
        if b - a <= max(atol, rtol * b):
            break
        mid = 0.5 * (a + b)
        d = delta_at(mid)
        evaluations += 1
        if d <= target:
            b = mid
        else:
            a = mid
    # the upper end without search-resolution digits: the shortest decimal of (a, b] evaluated to meet the
    # target (calibrate.shortest_certified; a protocol's own (eps, delta_upper(eps)) then inverts to eps exactly)
    from shufflesim.accounting.numerics.invert import shortest_certified

    probes = [0]

    def counted(x: float) -> float:
        probes[0] += 1
        return delta_at(x)

    b = shortest_certified(counted, target, a, b)
    return b, a, evaluations + probes[0]
