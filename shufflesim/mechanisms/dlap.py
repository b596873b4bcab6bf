"""The discrete Laplace mechanism on an integer statistic: the mechanism description and its privacy profile.

``CentralDLap(eps0, sensitivity)``: a curator adds Z ~ DLap(α), P(Z = z) = (1 − α)/(1 + α)·α^{|z|}, with
α = e^{−ε0/Δ}, to an integer statistic that one user moves by at most Δ (docs/theory.md#dlap: ε0-DP).  This
is the central comparison mechanism of seed 004's IKOS protocol (Lemma 5.2, Appendix B: the rounded sum at
precision p has Δ = p) and shufflesim's ``central-dlap-sum`` baseline.  Method ``closed-form``: the exact
privacy profile of the worst pair, :func:`dlap_delta`.

Exact profile **(shufflesim's derivation; docs/theory.md#dlap-profile derives it in full)**.  Write
λ = ε0/Δ = −log α.  For the pair P = law(Z),
Q = law(Z + d) with 0 ≤ d ≤ Δ, the privacy loss log P(z)/Q(z) = λ(|z − d| − |z|) is non-increasing in z, so
the optimal event of the hockey-stick divergence (docs/theory.md#hockey-stick) is a half-line {z ≤ t} and
δ_d(ε) = sup_t [F(t) − e^ε F(t − d)] with F the CDF of Z.  As F(t − d) decreases in d, δ_d(ε) ≤ δ_Δ(ε): the
largest shift is the worst.  A statistic R + Z whose R depends on the data through a user's randomised
rounding (or any other randomness) is a mixture over the values of R of shifts by at most Δ, so by the
joint convexity of the hockey-stick divergence (docs/theory.md#summation-privacy-profiles) its δ is at
most δ_Δ(ε) too.  For d = Δ the loss is ε0 on z ≤ 0, λ(Δ − 2z) on 0 < z < Δ and −ε0 on z ≥ Δ; summing the
positive parts (two geometric series) gives,
for 0 ≤ ε < ε0 and J = #{z ∈ 1..Δ−1 : λ(Δ − 2z) > ε},

    δ(ε) = [1 − e^{ε−ε0} + α(1 − α^J)(1 − e^{ε − λ(Δ − J − 1)})] / (1 + α),

and δ(ε) = 0 for ε ≥ ε0; both directions agree (z ↦ Δ − z exchanges P and Q).  Δ = 1 gives the geometric
mechanism's (1 − e^{ε−ε0})/(1 + e^{−ε0}); as Δ → ∞ at fixed ε0 the profile tends to the Laplace
mechanism's 1 − e^{(ε−ε0)/2} (:mod:`.central`).  The tests compare it with the hockey-stick divergence
enumerated over DLap's PMF for every shift and with randomised-rounding data sets
(tests/test_mechanisms_summation.py).

Evaluated in double precision with expm1 (no cancellation); the reported interval widens the value by
1e-12 relative, as :mod:`.central` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from shufflesim.accounting.model.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.accounting.model.results import DeltaBound
from shufflesim.core.checks import Precision, check_int, check_real

from .central import closed_form_epsilon, widened

#: largest sensitivity accepted (the closed form is O(1) in Δ; this only keeps Δ an ordinary integer)
MAX_SENSITIVITY = 2**62
#: the precision range of the DLap ε0 (this mechanism's and IKOS's comparison mechanism's): its closed form divides
#: by ε0/Δ and by 2·ε0 and multiplies Δ·ε0 (Δ <= 2^62), so a subnormal ε0 divides by zero and ε0 near the double
#: maximum overflows to inf/nan; 1e250 keeps Δ·ε0 below 1e270 (ε0 = 1e6, "no privacy", stays valid)
DLAP_EPS0_PRECISION = Precision(low=1e-100, high=1e250,
                                below="eps0/sensitivity underflows double precision in the DLap closed form",
                                above="sensitivity*eps0 overflows double precision in the DLap closed form")


def dlap_delta(eps: float, eps0: float, sensitivity: int) -> float:
    """Exact δ(ε) of the pair (Z, Z + Δ), Z ~ DLap(e^{−ε0/Δ}) (module docstring), in double precision."""
    if eps >= eps0:
        return 0.0
    lam = eps0 / sensitivity
    alpha = math.exp(-lam)
    # J = #{z in 1..Δ-1 : λ(Δ - 2z) > ε} = #{z >= 1 : z < Δ(ε0 - ε)/(2 ε0)}; a z at the boundary contributes 0
    x = sensitivity * (eps0 - eps) / (2.0 * eps0)
    j = min(max(math.ceil(x) - 1, 0), sensitivity - 1)
    head = -math.expm1(eps - eps0)
    middle = 0.0
    if j > 0:
        middle = alpha * -math.expm1(-lam * j) * -math.expm1(eps - lam * (sensitivity - j - 1))
    return max(0.0, (head + middle) / (1.0 + alpha))


@dataclass(frozen=True)
class CentralDLap(Mechanism):
    """DLap(e^{−``eps0``/Δ}) noise on an integer statistic of sensitivity Δ = ``sensitivity``."""

    kind: ClassVar[str] = "central-dlap"
    summary: ClassVar[str] = "central baseline: discrete Laplace noise on an integer statistic (exact privacy profile)"
    example: ClassVar[str] = "--eps0 1 --sensitivity 1 --delta 1e-6"
    methods: ClassVar[tuple[str, ...]] = ("closed-form",)
    flags: ClassVar[tuple[Flag, ...]] = (
        Flag("eps0", "float", "the mechanism's epsilon: alpha = exp(-eps0/sensitivity)"),
        Flag("sensitivity", "int", "integer sensitivity of the statistic (default 1)", required=False),
    )

    eps0: float
    sensitivity: int = 1
    n: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps0", check_real("eps0", self.eps0, low=0.0, low_open=True,
                                                    precise=DLAP_EPS0_PRECISION))
        object.__setattr__(self, "sensitivity", check_int("sensitivity", self.sensitivity, minimum=1,
                                                          maximum=MAX_SENSITIVITY))
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))

    @classmethod
    def from_flags(cls, *, eps0, sensitivity=None) -> "CentralDLap":
        return cls(eps0, 1 if sensitivity is None else sensitivity)

    def params(self) -> dict[str, Any]:
        return {"eps0": self.eps0, "sensitivity": self.sensitivity, "alpha": math.exp(-self.eps0 / self.sensitivity)}

    def delta(self, eps: float) -> DeltaBound:
        eps = check_real("eps", eps, low=0.0)
        return widened(eps, dlap_delta(eps, self.eps0, self.sensitivity), "closed-form",
                       "discrete Laplace mechanism: exact privacy profile of the shift by the sensitivity")

    def bound(self, method: str, options: BoundOptions):
        note = "discrete Laplace mechanism: exact privacy profile inverted by bisection"
        return self.delta, lambda d: closed_form_epsilon(self.delta, d, self.eps0, "closed-form", note)
