"""Transforms of (eps, delta) guarantees: amplification by subsampling, DP from total variation, and the
safe-side inversion of a delta(eps) bound into an eps(delta) bound.

* Amplification by subsampling (Balle, Barthe, Gaboardi 2018; quoted as seed 002 Lemma 4; docs/theory.md#subsampling):
  if M on data sets of size m is (eps, delta)-DP for the replacement relation, then running M on m
  records sampled without replacement from n records is (log(1 + (m/n)(e^eps - 1)), (m/n) delta)-DP.
* DP from total variation (seed 004 Lemma F.2; docs/theory.md#dp-from-tv): if TV(M1(X), M2(X)) <= eta for every X
  and M2 is (eps, delta)-DP, then M1 is (eps, delta + (1 + e^eps) eta)-DP.
* :func:`invert_delta_curve`: the eps(delta) of a bound known only as delta(eps), by bisection that only
  ever reports an eps at which the bound itself certifies delta(eps) <= target ("safe side"); it is the one
  inverter's bisection (:func:`shufflesim.accounting.numerics.invert.bisect_decreasing`), re-exported here for the bounds.
"""

from __future__ import annotations

import math
from shufflesim.accounting.numerics.invert import invert_delta_curve
from shufflesim.accounting.numerics.logspace import exp_or_inf
from shufflesim.core.checks import check_probability, check_real

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
    if eta == 0.0:
        return eps, delta
    return eps, delta + (1.0 + exp_or_inf(eps)) * eta  # inf: vacuous, as above
