"""Central-model baselines as mechanism descriptions: the Laplace and Gaussian mechanisms.

A trusted curator adds noise to a statistic of L1 (Laplace) or L2 (Gaussian) sensitivity Δ.  Both have
closed-form privacy profiles (docs/theory.md#central), accounted by the method ``closed-form``:

* Laplace with scale b = Δ/ε: δ(ε') = max(0, 1 − e^{(ε'−ε)/2}) — the hockey-stick divergence between
  Lap(0, b) and Lap(Δ, b) (e.g. Koskela, Heikkilä, Honkela 2021, arXiv:2106.00477, and the Laplace
  privacy-loss distribution of Sommer, Meiser, Mohammadi 2019);
* Gaussian with noise σ: δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) (Balle, Wang, ICML 2018,
  arXiv:1805.06530, Theorem 8), :func:`shufflesim.maths.central.gaussian_delta`.

For the replacement histogram (``central-laplace-hist``: two bins move by ±1 under independent noise of
scale 2/ε) the two-bin view's exact profile is 1 − (1 + a/4)e^{−a/2}, a = (ε − ε′)₊
(docs/theory.md#central-laplace-hist-profile): ``CentralLaplace(eps, 2, bins=2)``.  It is below the 1-D
profile with sensitivity 2 by (a/4)e^{−a/2}.

The closed forms are evaluated in double precision; the reported interval widens each value by 1e-12
relative (far above the evaluation's round-off) so that the upper end is never below the true δ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from shufflesim.accounting.model.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.accounting.model.results import DeltaBound, EpsBound
from shufflesim.core.checks import check_int, check_positive, check_real

#: relative widening of a closed form evaluated in double precision
WIDEN = 1e-12


def widened(eps: float, delta: float, method: str, note: str) -> DeltaBound:
    """The certified interval of a closed-form delta evaluated in double precision: delta widened by :data:`WIDEN`
    relative on both sides (the upper end capped at 1)."""
    return DeltaBound(eps=eps, delta_upper=min(1.0, delta * (1 + WIDEN)), delta_lower=delta * (1 - WIDEN),
                      method=method, notes=(note,))


def closed_form_epsilon(delta_fn, delta: float, hi: float, method: str, note: str) -> EpsBound:
    """eps(delta) of a closed-form profile ``delta_fn(eps) -> DeltaBound`` by the one inverter's bisection
    (:func:`shufflesim.accounting.numerics.invert.eps_bracket`): the upper end certified by the upper curve, the lower
    end an eps at which even the lower curve exceeds delta (the true eps(delta) is above it)."""
    from shufflesim.accounting.numerics.invert import eps_bracket

    low, up = eps_bracket(lambda e: delta_fn(e).delta_upper, lambda e: delta_fn(e).delta_lower, delta, hi=hi)
    return EpsBound(delta=delta, eps_upper=up, eps_lower=low, method=method, notes=(note,))


@dataclass(frozen=True)
class CentralLaplace(Mechanism):
    """The Laplace mechanism of scale Δ/``eps0`` on a statistic of L1 sensitivity Δ = ``sensitivity``.

    ``bins`` is the number of coordinates a neighbouring change moves, each by Δ/``bins`` under independent
    noise: 1 (the 1-D profile) or 2 (the replacement histogram's two bins, profile
    1 − (1 + a/4)e^{−a/2}, a = (eps0 − ε′)₊; docs/theory.md#central-laplace-hist-profile)."""

    kind: ClassVar[str] = "central-laplace"
    summary: ClassVar[str] = "central baseline: the Laplace mechanism (exact privacy profile)"
    example: ClassVar[str] = "--eps0 1 --eps 0.5 1"
    methods: ClassVar[tuple[str, ...]] = ("closed-form",)
    flags: ClassVar[tuple[Flag, ...]] = (Flag("eps0", "float", "the Laplace mechanism's epsilon (scale = 1/eps0)"),)

    eps0: float
    sensitivity: float = 1.0
    n: int = 1
    bins: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps0", check_positive("eps0", self.eps0))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "bins", check_int("bins", self.bins, minimum=1, maximum=2))

    def params(self) -> dict[str, Any]:
        out = {"eps0": self.eps0, "scale": self.sensitivity / self.eps0, "sensitivity": self.sensitivity}
        return out if self.bins == 1 else {**out, "bins": self.bins}

    def delta(self, eps: float) -> DeltaBound:
        if eps >= self.eps0:
            return widened(eps, 0.0, "closed-form", "Laplace mechanism: delta(eps) = 0 for eps >= eps0")
        a = self.eps0 - eps
        if self.bins == 1:
            return widened(eps, -math.expm1(-a / 2.0), "closed-form",
                           "Laplace mechanism: delta(eps) = 1 - exp((eps - eps0)/2)")
        # 1 - (1 + a/4) e^{-a/2} = (1 - e^{-a/2}) - (a/4) e^{-a/2}: both terms ~ a/2, a/4 as a -> 0, no cancellation
        d = -math.expm1(-a / 2.0) - 0.25 * a * math.exp(-a / 2.0)
        return widened(eps, max(d, 0.0), "closed-form",
                       "Laplace mechanism on two bins: delta(eps) = 1 - (1 + a/4) exp(-a/2), a = eps0 - eps")

    def bound(self, method: str, options: BoundOptions):
        note = "Laplace mechanism: closed-form privacy profile inverted by bisection"
        return self.delta, lambda d: closed_form_epsilon(self.delta, d, self.eps0, "closed-form", note)



@dataclass(frozen=True)
class CentralGaussian(Mechanism):
    """The Gaussian mechanism with noise ``sigma`` on a statistic of L2 sensitivity ``sensitivity``."""

    kind: ClassVar[str] = "central-gaussian"
    summary: ClassVar[str] = "central baseline: the Gaussian mechanism (exact privacy profile, Balle & Wang 2018)"
    example: ClassVar[str] = "--sigma 4 --delta 1e-6"
    methods: ClassVar[tuple[str, ...]] = ("closed-form",)
    flags: ClassVar[tuple[Flag, ...]] = (Flag("sigma", "float", "noise standard deviation > 0"),)

    sigma: float
    sensitivity: float = 1.0
    n: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    def params(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "sensitivity": self.sensitivity}

    def delta(self, eps: float) -> DeltaBound:
        from shufflesim.maths.central import gaussian_delta

        eps = check_real("eps", eps, low=0.0)
        return widened(eps, gaussian_delta(self.sigma, eps, self.sensitivity), "closed-form",
                       "Gaussian mechanism: exact privacy profile (Balle & Wang 2018, Thm 8)")

    def bound(self, method: str, options: BoundOptions):
        note = "Gaussian mechanism: exact privacy profile inverted by bisection"
        hi = 1.0
        while self.delta(hi).delta_upper > 1e-300 and hi < 1e6:
            hi *= 2.0
        return self.delta, lambda d: closed_form_epsilon(self.delta, d, hi, "closed-form", note)

