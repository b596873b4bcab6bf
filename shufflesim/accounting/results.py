"""Result types shared by every accountant and published bound.

Every answer is an interval: ``delta_lower <= true delta <= delta_upper`` (or the same for epsilon),
together with the method that certified it and notes on anything the user should know (truncated tails,
a round-off floor, a Chernoff fallback).  A lower bound is ``None`` where a method has none.  A method
asked for outside its validity conditions returns :class:`NotApplicable` with the reason instead of a
number.
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
