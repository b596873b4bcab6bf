"""The one validator of a question put to an accountant (issue 28 item 4): the eps values of delta(eps), the delta
values of eps(delta), the number of compositions and the neighbouring relation.

Every path checks a question here, so that an edge question gets the same one-line answer everywhere: the
front end (:func:`~shufflesim.accounting.account.account`, ``calibrate_mechanism``, ``compare``), the engines
(``tight_delta`` / ``tight_epsilon`` / ``TightAccountant``, ``PrivacyLossDistribution.delta/epsilon``), the
command line (``shufflesim account``) and the scenario files (``[[curve]]`` steps).

* eps: finite, >= 0 (a list: every value);
* delta: finite, 0 < delta < 1.  delta = 0 (pure DP) is refused on every path: only some engines could
  certify a zero delta (exact atoms without an infinite loss), none of the FFT, tail or published bounds can, so
  no answer to it would mean the same on every path; delta = 1 is vacuous (every mechanism meets it);
* compositions: an integer >= 1; at most :data:`MAX_COMPOSITIONS` for the pair-based engines (beyond: hours of
  FFT grids, and integer overflow in the grid sizes), unbounded for the published bounds' composition theorems;
* relation: one of :class:`~shufflesim.accounting.model.mechanism.Relation`, checked by ``Relation.parse`` where a
  description is built (the one parser of relation names).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from shufflesim.core.checks import check_int
from shufflesim.errors import ParameterError

#: largest number of compositions the pair-based engines accept (beyond: hours; 10**300 overflows the grid sizes)
MAX_COMPOSITIONS = 10**6
#: the pair-based engines, as named in the refusal of too many compositions
PAIR_BASED = "the pair-based methods (tight, exact, ...)"


def _values(name: str, values) -> list[float]:
    """``values`` (a number, a sequence or an array of numbers) as a non-empty list of floats."""
    if isinstance(values, (str, bytes, dict)) or values is None:
        raise ParameterError(f"{name} must be a number or a non-empty list of numbers; got {values!r}")
    if isinstance(values, np.ndarray):
        values = values.ravel().tolist()
    elif not hasattr(values, "__iter__"):
        values = [values]
    out = []
    for v in values:
        v = v.item() if isinstance(v, np.generic) else v
        if isinstance(v, bool) or not isinstance(v, Real):
            raise ParameterError(f"{name} must be a number or a non-empty list of numbers; got {v!r}")
        try:
            out.append(float(v))
        except OverflowError:  # an integer beyond the double range: refused below as the infinity it rounds to
            out.append(math.inf if v > 0 else -math.inf)
    if not out:
        raise ParameterError(f"{name} must be a number or a non-empty list of numbers; got an empty list")
    return out


def eps_values(eps) -> list[float]:
    """The eps values of a delta(eps) question as floats: finite and >= 0; ParameterError otherwise."""
    out = _values("eps", eps)
    for v in out:
        if not (math.isfinite(v) and v >= 0.0):
            raise ParameterError(f"eps must be in [0, inf); got {v!r}")
    return out


def delta_values(delta) -> list[float]:
    """The delta values of an eps(delta) question as floats: finite, 0 < delta < 1; ParameterError otherwise."""
    out = _values("delta", delta)
    for v in out:
        if v == 0.0:
            raise ParameterError("delta must be in (0, 1); got 0.0 (pure DP: no engine certifies delta = 0 on every "
                                 "path; ask for a small delta such as 1e-300)")
        if not (0.0 < v < 1.0):
            raise ParameterError(f"delta must be in (0, 1); got {v!r}")
    return out


def check_eps(eps) -> np.ndarray:
    """:func:`eps_values` as a 1-D float array (the engines' form)."""
    return np.asarray(eps_values(eps), dtype=float)


def check_delta(delta) -> np.ndarray:
    """:func:`delta_values` as a 1-D float array (the engines' form)."""
    return np.asarray(delta_values(delta), dtype=float)


def check_compositions(compositions, *, pair_based: bool = False) -> int:
    """The number of compositions: an integer >= 1, and at most :data:`MAX_COMPOSITIONS` for a pair-based engine."""
    c = check_int("compositions", compositions, minimum=1)
    if pair_based and c > MAX_COMPOSITIONS:
        shown = c if c < 10**15 else f"{float(c):.6g}"
        raise ParameterError(f"compositions must be <= {MAX_COMPOSITIONS:.0e} for {PAIR_BASED}; got {shown}")
    return c


def check_method_applies(mechanism, method: str, compositions: int = 1) -> None:
    """What :func:`~shufflesim.accounting.account.account` refuses about a (mechanism, method) pair before it
    computes anything: the method is one of the description's, and a pair-based method's limits on n and on
    the compositions.  ``account``, ``run --check`` (a curve's and a defence's mechanisms) and the defence's
    pre-check call this one function, so a check refuses exactly what the run would."""
    from shufflesim.accounting.model.mechanism import PAIR_METHODS

    mechanism.check_method(method)
    if method in PAIR_METHODS:
        if mechanism.n > mechanism.max_n_pairs:
            raise ParameterError(f"n must be <= {mechanism.max_n_pairs:.0e} for method {method!r} (pair-based); "
                                 f"got n={mechanism.n}")
        check_compositions(compositions, pair_based=True)


def check_question(*, eps=None, delta=None, compositions=1, pair_based: bool = False):
    """One question checked whole: exactly one of ``eps`` / ``delta`` (returned as lists, the other None) and the
    number of compositions; ``(eps_list, delta_list, compositions)``."""
    if (eps is None) == (delta is None):
        raise ParameterError("give either eps values (to get delta) or delta values (to get eps), not both")
    c = check_compositions(compositions, pair_based=pair_based)
    return (eps_values(eps) if eps is not None else None, delta_values(delta) if delta is not None else None, c)
