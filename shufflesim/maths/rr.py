"""Randomised response in its two parametrisations: local privacy ε0 and blanket probability γ.

k-ary randomised response reports the true value with probability e^{ε0}/(e^{ε0}+k−1) and each other
value with probability 1/(e^{ε0}+k−1).  Balle, Bell, Gascón, Nissim (CRYPTO 2019, arXiv:1903.02837, §4)
write the same randomiser in *blanket* form: with probability 1−γ report the truth, with probability γ
a value uniform on all k values.  The two coincide when

    γ = k / (e^{ε0} + k − 1)        ⇔        ε0 = log(1 + k(1−γ)/γ)

(docs/theory.md#randomised-response).  This module is the one place that conversion is written; the
mechanism descriptions (:mod:`shufflesim.mechanisms.krr`), randomisers, pairs and bounds all call it.
Both directions stay finite where the textbook forms overflow: ε0 = 1000 gives γ ≈ k·e^{−1000} (a
subnormal or 0.0 — reported, never an exception), and γ = 1e−320 gives ε0 ≈ 738.
"""

from __future__ import annotations

import math

#: below this ε0 the form k/(expm1(ε0)+k) cannot overflow; above it the e^{−ε0} form is used
_EXP_SAFE = 700.0


def gamma_from_eps0(eps0: float, k: int) -> float:
    """Blanket probability γ = k/(e^{ε0}+k−1) of the ε0-LDP k-ary randomised response (0.0 on underflow)."""
    if eps0 <= _EXP_SAFE:
        return k / (math.expm1(eps0) + k)
    t = math.exp(-eps0)  # may underflow to 0.0: γ is then below the smallest subnormal
    return k * t / (1.0 + (k - 1) * t)


def eps0_from_gamma(gamma: float, k: int) -> float:
    """Local privacy ε0 = log(1 + k(1−γ)/γ) of k-RR with blanket probability γ ∈ (0, 1]; 0 for γ = 1."""
    ratio = k * (1.0 - gamma) / gamma
    if math.isfinite(ratio):
        return math.log1p(ratio)
    return math.log(k * (1.0 - gamma)) - math.log(gamma)  # γ subnormal: k(1−γ)/γ overflows


#: relative margin of :func:`eps0_upper`: ~90 ulps, far above the few roundings of :func:`eps0_from_gamma`
#: (1 − γ, the product, the quotient and log1p: relative error below 6 ulps)
EPS0_MARGIN = 1e-14


def eps0_upper(eps0: float) -> float:
    """A certified upper bound on a local ε0 computed in floating point (by :func:`eps0_from_gamma`, possibly
    times an integer): ``eps0`` raised by :data:`EPS0_MARGIN` relative.  Pairs and caps built from it are
    valid for the true ε0 (an ε0-LDP randomiser is ε0′-LDP for every ε0′ ≥ ε0)."""
    return eps0 + abs(eps0) * EPS0_MARGIN

