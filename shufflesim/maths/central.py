"""Central-model mechanisms and their calibration (docs/theory.md#central).

These are the baselines a shuffle protocol is compared with: the trusted curator adds noise once to
the exact statistic.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from shufflesim.core.checks import check_positive, check_probability
from shufflesim.errors import NotApplicableError


def laplace_scale(eps: float, sensitivity: float = 1.0) -> float:
    """Scale b = Δ₁/ε of the Laplace mechanism (ε-DP); its variance is 2b²."""
    check_positive("eps", eps)
    check_positive("sensitivity", sensitivity)
    return sensitivity / eps


def classical_gaussian_sigma(eps: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ₂·sqrt(2 log(1.25/δ))/ε of the classical Gaussian mechanism (Dwork & Roth Thm A.1).

    Valid only for ε < 1; raises :class:`NotApplicableError` otherwise.
    """
    check_positive("eps", eps)
    check_probability("delta", delta, allow_zero=False, allow_one=False)
    check_positive("sensitivity", sensitivity)
    if eps >= 1.0:
        raise NotApplicableError(f"the classical Gaussian calibration requires eps < 1; got eps={eps}")
    return sensitivity * math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) / eps


def _log_ndtr(x: float) -> float:
    return float(special.log_ndtr(x))


def gaussian_delta(sigma: float, eps: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of the Gaussian mechanism with noise σ (Balle & Wang 2018, Thm 8), computed stably.

    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).
    """
    a = sensitivity / (2.0 * sigma)
    b = eps * sigma / sensitivity
    la = _log_ndtr(a - b)
    lb = eps + _log_ndtr(-a - b)
    if lb >= la:
        return 0.0
    return float(math.exp(la) * -math.expm1(lb - la))


def analytic_gaussian_sigma(eps: float, delta: float, sensitivity: float = 1.0, *, rtol: float = 1e-12) -> float:
    """Smallest σ with :func:`gaussian_delta` (σ, ε) ≤ δ (Balle & Wang 2018, "analytic Gaussian").

    Biswas et al. (seed 003) call the mechanism calibrated this way the "optimal Gaussian".  The root is
    found by Brent's method on log σ and the returned σ is moved up until the certified δ ≤ target.
    """
    check_positive("eps", eps)
    check_probability("delta", delta, allow_zero=False, allow_one=False)
    check_positive("sensitivity", sensitivity)

    def f(log_sigma: float) -> float:
        return gaussian_delta(math.exp(log_sigma), eps, sensitivity) - delta

    lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 10.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    root = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=rtol)
    sigma = math.exp(root)
    while gaussian_delta(sigma, eps, sensitivity) > delta:  # stay on the safe side of the root
        sigma = np.nextafter(sigma, math.inf) * (1 + 1e-12)
    return float(sigma)
