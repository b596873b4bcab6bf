"""Seed 004's IKOS summation with distributed Pólya noise: the mechanism description (``ikos-sum``).

``IKOSSum(eps0, p, sigma, q)``: every user sends additive shares mod q of x̄_i + Z_i (randomised rounding at
precision p plus a Pólya difference, Σ_i Z_i ~ DLap(e^{−ε0/p})) through parallel shufflers; the analyser's
view is the shuffled shares (docs/theory.md#summation-ikos).  Seed 004 (Balle, Bell, Gascón, Nissim 2020,
Lemma 5.2 and its proof in Appendix B, Lemma F.2) compares this view with a mechanism M2 that adds
DLap(e^{−ε0/p}) to the rounded sum (sensitivity p) and then simulates the secure summation on the result:
if the summation has worst-case statistical security σ (the views of two inputs with the same sum are within
η = 2^{−σ} in total variation), the view is within η of M2's for every data set, so by Lemma F.2
(docs/theory.md#dp-from-tv) applied at each ε (docs/theory.md#summation-ikos-profile), for every ε ≥ 0,

    δ(ε) ≤ δ_DLap(ε) + (1 + e^ε)·2^{−σ},

with δ_DLap the exact profile of the comparison mechanism (:func:`.dlap.dlap_delta`, Δ = p; M2 is a
post-processing of the noisy sum, and a mixture over the rounding of shifts by at most p).  At ε = ε0 the
first term is 0 and the bound is the protocol's own claim (ε0, (1 + e^{ε0})2^{−σ}); below ε0 the description
certifies the whole profile.  σ comes from shufflesim's reconstruction of seed 004's Theorem 6.1 / eq. (4)
(docs/theory.md#summation-ikos-messages): the upper bound rests on it.

Upper curve **(shufflesim, docs/theory.md#summation-ikos-profile)**.  The true δ(ε) is non-increasing in
ε, so u(ε) = min over ε' ≤ ε of the bound above is still a bound.  As a function of s = e^ε the bound is
convex (δ_DLap is a supremum of functions P(E) − sQ(E), affine in s; the second term is affine in s) and
piecewise linear with slope η − Q(loss > ε) = η − α^{p−J}/(1 + α) (J as in :mod:`.dlap`), so its minimum
over [0, ε0] is at the ε* where that slope turns non-negative, found in closed form;
u(ε) = bound(min(ε, ε*)).  ε* = ε0 whenever the protocol's own δ, (1 + e^{ε0})2^{−σ}, is below ½.  Hence
δ(ε) for ε ≥ ε0 is then the constant (1 + e^{ε0})2^{−σ}, and ε(δ) is infinite for δ below it.

Lower bound **(shufflesim, docs/theory.md#summation-ikos-profile)**, independent of the reconstruction.  The
view determines the sum of all shares, (Σ x̄_i + Z) mod q.  For the neighbours "every user holds 0" and "the
target holds 1" (x̄ = 0 and p exactly) that sum is Z mod q against (Z + p) mod q, which differ from the
unwrapped pair only when |Z| ≥ a = ⌊q/2⌋ − p + 1, so the view's δ(ε) ≥ δ_DLap(ε) − (1 + e^ε)·P(|Z| ≥ a)
with P(|Z| ≥ a) = 2α^a/(1 + α).  Without ``q`` there is no lower bound.

Both curves are evaluated in double precision and widened by 1e-12 relative (as :mod:`.central`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from shufflesim.accounting.model.mechanism import BoundOptions, Flag, Mechanism
from shufflesim.accounting.model.results import DeltaBound, EpsBound
from shufflesim.core.checks import check_int, check_positive, check_real

from .dlap import DLAP_EPS0_PRECISION, MAX_SENSITIVITY, dlap_delta

LN2 = math.log(2.0)
#: relative widening of a closed form evaluated in double precision (as :mod:`.central`); the ikos-sum protocol
#: reports its delta widened by the same margin
WIDEN = 1e-12
#: largest modulus (shares are 64-bit words; as :data:`shufflesim.maths.polya.MAX_Q`)
MAX_Q = 2**64 - 1


@dataclass(frozen=True)
class IKOSSum(Mechanism):
    """IKOS shares of the Pólya-noised rounded sum: ``eps0`` of the comparison mechanism, precision ``p``,
    worst-case statistical security ``sigma`` (bits), share modulus ``q`` (None: no lower bound)."""

    kind: ClassVar[str] = "ikos"
    summary: ClassVar[str] = "IKOS secure summation with discrete Laplace noise (seed 004 Lemma 5.2 + Lemma F.2)"
    example: ClassVar[str] = "--eps0 1 --p 32 --sigma 40 --q 10007 --eps 0.5 1"
    methods: ClassVar[tuple[str, ...]] = ("closed-form",)
    flags: ClassVar[tuple[Flag, ...]] = (
        Flag("eps0", "float", "epsilon of the comparison mechanism: the summed noise is DLap(exp(-eps0/p))"),
        Flag("p", "int", "fixed-point precision (the rounded sum's sensitivity)"),
        Flag("sigma", "float", "worst-case statistical security of the secure summation, in bits"),
        Flag("q", "int", "share modulus (gives the lower bound; default: none)", required=False),
    )

    eps0: float
    p: int
    sigma: float
    q: int | None = None
    n: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps0", check_real("eps0", self.eps0, low=0.0, low_open=True,
                                                    precise=DLAP_EPS0_PRECISION))
        object.__setattr__(self, "p", check_int("p", self.p, minimum=1, maximum=MAX_SENSITIVITY))
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        if self.q is not None:
            object.__setattr__(self, "q", check_int("q", self.q, minimum=2, maximum=MAX_Q))
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))

    @classmethod
    def from_flags(cls, *, eps0, p, sigma, q=None) -> "IKOSSum":
        return cls(eps0, p, sigma, q)

    @property
    def alpha(self) -> float:
        return math.exp(-self.eps0 / self.p)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"eps0": self.eps0, "p": self.p, "alpha": self.alpha, "sigma": self.sigma,
                               "tv": 2.0 ** -self.sigma}
        if self.q is not None:
            out["q"] = self.q
        if self.n != 1:
            out["n"] = self.n
        return out

    def local_guarantee(self) -> float | None:
        """None: the view is within 2^{−σ} of an ε0-DP mechanism, which is no pure guarantee."""
        return None

    # --- the curves -------------------------------------------------------------------------------------
    def _tv_term(self, eps: float) -> float:
        """(1 + e^ε)·2^{−σ}, as the protocol computes it (log1p form: no overflow for large ε)."""
        return math.exp(math.log1p(math.exp(-eps)) + eps - self.sigma * LN2)

    def _bound(self, eps: float) -> float:
        return dlap_delta(eps, self.eps0, self.p) + self._tv_term(eps)

    def argmin_eps(self) -> float:
        """ε* in [0, ε0] where the bound is smallest (module docstring): the left end of the first segment on
        which its slope in e^ε, η − α^{p−J}/(1 + α), is non-negative."""
        lam = self.eps0 / self.p
        log_eta = -self.sigma * LN2 + math.log1p(self.alpha)  # log(η(1 + α))
        if log_eta >= 0.0:
            return 0.0  # the slope is non-negative everywhere
        k = log_eta / -lam  # slope >= 0 on a segment iff p - J >= k
        j_max = max(math.ceil(self.p / 2.0) - 1, 0)  # J at ε = 0
        j_star = math.floor(self.p - k) if k < self.p + 1 else -1
        if j_star < 0:
            return self.eps0  # negative slope throughout: the minimum is at ε0
        if j_star >= j_max:
            return 0.0
        # the segment with J = j_star starts where the loss of z = j_star + 1 is reached
        return lam * (self.p - 2 * (j_star + 1))

    def _upper(self, eps: float) -> float:
        return self._bound(min(eps, self.argmin_eps()))

    def _lower(self, eps: float) -> float | None:
        if self.q is None:
            return None
        a = self.q // 2 - self.p + 1
        if a < 1:
            return None
        if eps >= self.eps0:  # dlap_delta is 0 there, so the bound is max(0, -wrap) = 0 (no e^eps to overflow)
            return 0.0
        log_tail = math.log(2.0) - a * (self.eps0 / self.p) - math.log1p(self.alpha)
        wrap = math.exp(math.log1p(math.exp(-eps)) + eps + log_tail)
        return max(0.0, dlap_delta(eps, self.eps0, self.p) * (1 - WIDEN) - wrap)

    def delta(self, eps: float) -> DeltaBound:
        eps = check_real("eps", eps, low=0.0)
        up = min(1.0, self._upper(eps) * (1 + WIDEN))
        low = self._lower(eps)
        return DeltaBound(eps=eps, delta_upper=up, delta_lower=None if low is None else min(low, up),
                          method="closed-form", notes=(
                              "seed 004 Lemma 5.2 + Lemma F.2: delta(eps) <= delta_DLap(eps) + (1+e^eps)*2^-sigma, "
                              "minimised over eps' <= eps; sigma from the reconstructed Theorem 6.1 / eq. (4)",))

    def epsilon(self, delta: float) -> EpsBound:
        from shufflesim.accounting.numerics.invert import eps_bracket
        from shufflesim.accounting.model.queries import delta_values

        (delta,) = delta_values([delta])  # the one question validator
        note = ("seed 004 Lemma 5.2 + Lemma F.2 bound inverted by bisection; it is >= (1+e^eps0)*2^-sigma for "
                "every eps, so smaller deltas have no finite eps")
        # the upper curve is constant from argmin_eps on: bisected on [0, eps*], inf where even u(eps*) > delta; the
        # lower curve (non-increasing, 0 from eps0 on) on [0, eps0]
        lower = (lambda e: self.delta(e).delta_lower) if self.q is not None and self._lower(0.0) is not None else None
        low, up = eps_bracket(lambda e: self.delta(e).delta_upper, lower, delta, hi=self.argmin_eps(),
                              hi_lower=self.eps0)
        return EpsBound(delta=delta, eps_upper=up, eps_lower=low, method="closed-form", notes=(note,))

    def bound(self, method: str, options: BoundOptions):
        return self.delta, self.epsilon
