"""Result types shared by every accountant and published bound.

Every answer is an interval: ``delta_lower <= true delta <= delta_upper`` (or the same for epsilon),
together with the method that certified it and notes on anything the user should know (truncated tails,
a round-off floor, a Chernoff fallback).  A lower bound is ``None`` where a method has none.  A method
asked for outside its validity conditions returns :class:`NotApplicable` with the reason instead of a
number.

Both ends bound the privacy curve of the *mechanism's view* (what its
:class:`~shufflesim.accounting.model.mechanism.Relation` says the adversary sees), never an intermediate bound
(issue 17).  A method that evaluates a *dominating* pair (the stronger clone pair, seed 001's eq 6.1 pair,
Feldman et al.'s pair, a stronger adversary's pair) certifies the upper end through it, and reports the
pair's own numerical bracket separately, as ``bound_pair`` (its name), ``bound_lower`` and ``bound_upper``
— a bracket of that pair's δ (or ε), which says how tightly the pair was evaluated, not how private the
mechanism is.  The mechanism-level lower end then comes from a genuine construction (the exact δ of an
explicit neighbouring pair of data sets, named in the notes) or is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shufflesim.core.checks import check_real
from shufflesim.errors import ParameterError


@dataclass(frozen=True)
class DeltaBound:
    """Certified bounds on delta(eps) for one eps."""

    eps: float
    delta_upper: float
    delta_lower: float | None
    method: str
    notes: tuple[str, ...] = ()
    applicable: bool = True
    #: False when the interval is certified but wider than the accountant's target accuracy (the notes
    #: say why); True for every other answer, including published bounds (which have no target)
    accuracy_met: bool = True
    #: the dominating pair a method evaluated (None: the method evaluated the mechanism's view itself) and
    #: that pair's own numerical bracket on δ(eps); ``delta_upper`` is certified through it
    bound_pair: str | None = None
    bound_lower: float | None = None
    bound_upper: float | None = None

    def to_dict(self) -> dict:
        d = {"eps": self.eps, "delta_upper": self.delta_upper, "delta_lower": self.delta_lower,
             "accuracy_met": self.accuracy_met}
        if self.bound_pair is not None:
            d.update(bound_pair=self.bound_pair, bound_lower=self.bound_lower, bound_upper=self.bound_upper)
        return d


@dataclass(frozen=True)
class EpsBound:
    """Certified bounds on eps(delta), the smallest eps with delta(eps) <= delta, for one delta."""

    delta: float
    eps_upper: float
    eps_lower: float | None
    method: str
    notes: tuple[str, ...] = ()
    applicable: bool = True
    #: False when the interval is certified but the delta interval at eps_upper is wider than the
    #: accountant's target accuracy (the notes say why); True otherwise
    accuracy_met: bool = True
    #: the dominating pair a method evaluated (None: the mechanism's view itself) and that pair's own
    #: numerical bracket on ε(δ); ``eps_upper`` is certified through it
    bound_pair: str | None = None
    bound_lower: float | None = None
    bound_upper: float | None = None

    def to_dict(self) -> dict:
        d = {"delta": self.delta, "eps_upper": self.eps_upper, "eps_lower": self.eps_lower,
             "accuracy_met": self.accuracy_met}
        if self.bound_pair is not None:
            d.update(bound_pair=self.bound_pair, bound_lower=self.bound_lower, bound_upper=self.bound_upper)
        return d


def upper_of(r) -> float:
    """The certified upper end of a result (``inf`` for anything else)."""
    if isinstance(r, EpsBound):
        return r.eps_upper
    if isinstance(r, DeltaBound):
        return r.delta_upper
    return float("inf")


def lower_of(r) -> float | None:
    """The mechanism-level lower end of a result (None where there is none)."""
    if isinstance(r, EpsBound):
        return r.eps_lower
    if isinstance(r, DeltaBound):
        return r.delta_lower
    return None


def as_dominating(r, pair: str, lower: float | None = None, note: str | None = None):
    """``r`` re-read as the bracket of the dominating pair ``pair``: its interval moves to ``bound_lower`` /
    ``bound_upper``, the upper end stays (the pair dominates the view), the mechanism-level lower end
    becomes ``lower`` (a genuine construction, or None).  A result that already names a dominating pair
    keeps it; only its lower end changes."""
    from dataclasses import replace

    if not isinstance(r, (DeltaBound, EpsBound)):
        return r
    if lower is not None:
        lower = min(lower, upper_of(r))
    notes = r.notes + ((note,) if note and note not in r.notes else ())
    if r.bound_pair is not None:
        pair, b_lo, b_up = r.bound_pair, r.bound_lower, r.bound_upper
    else:
        b_lo, b_up = lower_of(r), upper_of(r)
    if isinstance(r, EpsBound):
        return replace(r, eps_lower=lower, bound_pair=pair, bound_lower=b_lo, bound_upper=b_up, notes=notes)
    return replace(r, delta_lower=lower, bound_pair=pair, bound_lower=b_lo, bound_upper=b_up, notes=notes)


@dataclass(frozen=True)
class NotApplicable:
    """A method asked for outside its validity conditions; ``reason`` says which condition fails."""

    method: str
    reason: str
    eps: float | None = None
    delta: float | None = None
    notes: tuple[str, ...] = field(default=())
    applicable: bool = False

    def to_dict(self) -> dict:
        d: dict = {"applicable": False, "reason": self.reason}
        if self.eps is not None:
            d.update(eps=self.eps, delta_upper=None, delta_lower=None)
        if self.delta is not None:
            d.update(delta=self.delta, eps_upper=None, eps_lower=None)
        return d


@dataclass(frozen=True)
class PrivacyGuarantee:
    """The central (ε, δ) a protocol satisfies and how it was certified.

    ``method`` names the accountant or bound (``tight``, ``balle``, ``bennett``, ``basic-composition``, …);
    ``notes`` say under which adversary / neighbouring relation.
    """

    eps: float
    delta: float
    method: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"eps": self.eps, "delta": self.delta, "method": self.method, "notes": list(self.notes)}


@dataclass(frozen=True)
class AccountReport:
    """The answer to one ``account`` question."""

    mechanism: str
    params: dict
    method: str
    compositions: int
    results: tuple
    notes: tuple[str, ...]
    seconds: float
    composition: str | None = None

    def to_dict(self) -> dict:
        d = {
            "mechanism": self.mechanism,
            "params": self.params,
            "method": self.method,
            "compositions": self.compositions,
            "results": [r.to_dict() for r in self.results],
            "notes": list(self.notes),
            "seconds": self.seconds,
        }
        if self.composition is not None:
            d["composition"] = self.composition
        return d


def question_values(name: str, values) -> list[float]:
    """The eps (or delta) values of a question as floats; ParameterError for anything else."""
    if isinstance(values, (str, bytes, dict)) or values is None:
        raise ParameterError(f"{name} must be a number or a non-empty sequence of numbers; got {values!r}")
    if isinstance(values, np.ndarray):
        values = values.ravel().tolist()
    elif not hasattr(values, "__iter__"):
        values = [values]
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    if not values:
        raise ParameterError(f"{name} must be a number or a non-empty sequence of numbers; got an empty sequence")
    if name == "delta":
        return [check_real("delta", v, low=0.0, high=1.0, low_open=True, high_open=True) for v in values]
    return [check_real("eps", v, low=0.0) for v in values]
