"""Result types shared by every accountant and published bound.

Every answer is an interval: ``delta_lower <= true delta <= delta_upper`` (or the same for epsilon),
together with the method that certified it and notes on anything the user should know (truncated tails,
a round-off floor, a Chernoff fallback).  A lower bound is ``None`` where a method has none.  A method
asked for outside its validity conditions returns :class:`NotApplicable` with the reason instead of a
number.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def to_dict(self) -> dict:
        return {"eps": self.eps, "delta_upper": self.delta_upper, "delta_lower": self.delta_lower,
                "accuracy_met": self.accuracy_met}


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

    def to_dict(self) -> dict:
        return {"delta": self.delta, "eps_upper": self.eps_upper, "eps_lower": self.eps_lower,
                "accuracy_met": self.accuracy_met}


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
