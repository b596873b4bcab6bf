"""Central-model baselines for the histogram (seed 003's comparison; docs/theory.md#central-hist).

A trusted curator computes the exact counts and adds independent noise to every bin:

* ``central-laplace-hist`` — Laplace(Δ₁/ε) per bin, ε-DP;
* ``central-gaussian-hist`` — N(0, σ²) per bin, (ε, δ)-DP, with σ from the classical calibration
  (ε < 1 only) or the analytic one of Balle & Wang 2018 (seed 003's "optimal Gaussian").

Sensitivities depend on the neighbouring relation: replacing one user's value moves two counts by one
(Δ₁ = 2, Δ₂ = √2); adding or removing a user moves one count (Δ₁ = Δ₂ = 1).  The shuffle-model accountants
use replacement, so that is the default.  The distribution estimate is the noisy counts divided by n and
projected onto the simplex (post-processing, as in Balle & Wang's denoising).
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.core.checks import Precision, check_int, check_positive, check_probability, check_real
from shufflesim.accounting.model.results import PrivacyGuarantee
from shufflesim.pipeline.analyser import Analyser
from shufflesim.pipeline.baselines import IdentityRandomiser
from shufflesim.maths.central import analytic_gaussian_sigma, classical_gaussian_sigma, laplace_scale
from shufflesim.errors import ParameterError
from shufflesim.mechanisms.central import CentralGaussian, CentralLaplace
from shufflesim.pipeline.options import Option
from shufflesim.pipeline.histogram import HistogramEstimate, HistogramProtocol
from shufflesim.pipeline.registry import register
from shufflesim.pipeline.shuffler import TrustedCurator, View
from shufflesim.maths.simplex import project_to_simplex

SENSITIVITY = {"replace": (2.0, math.sqrt(2.0)), "add-remove": (1.0, 1.0)}


class NoisyHistogramAnalyser(Analyser):
    """Exact counts plus i.i.d. noise per bin from ``sampler(rng, k)``."""

    def __init__(self, k: int, n: int, noise: str, scale: float):
        self.k, self.n, self.noise, self.scale = k, n, noise, scale
        self.name = f"central-{noise}"

    def analyse(self, view: View, rng: np.random.Generator) -> HistogramEstimate:
        hist = view.counts(0, minlength=self.k).astype(float)
        if self.noise == "laplace":
            noisy = hist + rng.laplace(0.0, self.scale, size=self.k)
        else:
            noisy = hist + rng.normal(0.0, self.scale, size=self.k)
        return HistogramEstimate(hist, noisy, project_to_simplex(noisy / self.n))


class _CentralHistogram(HistogramProtocol):
    def mse_worst(self) -> float:
        return self.mse_expected(None)

    def sample_fast(self, summary, rng: np.random.Generator) -> HistogramEstimate:
        """Fast engine: the curator's exact counts are the data's histogram; only the k noise draws remain."""
        an = self.analyser
        hist = np.asarray(summary.counts, dtype=float)
        if an.noise == "laplace":
            noisy = hist + rng.laplace(0.0, an.scale, size=an.k)
        else:
            noisy = hist + rng.normal(0.0, an.scale, size=an.k)
        return HistogramEstimate(hist, noisy, project_to_simplex(noisy / an.n))

    def sample_fast_batch(self, summary, truth, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
        """The fast engine vectorised over ``size`` trials: the records' columns (``sq_error``, ``tv``)."""
        an = self.analyser
        hist = np.asarray(summary.counts, dtype=float)
        if an.noise == "laplace":
            noisy = hist + rng.laplace(0.0, an.scale, size=(size, an.k))
        else:
            noisy = hist + rng.normal(0.0, an.scale, size=(size, an.k))
        err = noisy - truth
        dist = project_to_simplex(noisy / an.n)
        tv = np.minimum(1.0, 0.5 * np.abs(dist - truth / an.n).sum(axis=1))
        return {"sq_error": np.sum(err * err, axis=1), "tv": tv}


def _common(n, k, neighbouring):
    n = check_int("n", n, minimum=1)
    if k is None:
        raise ParameterError("this protocol needs the number of categories k >= 2 (--k on the command line)")
    k = check_int("k", k, minimum=2)
    if neighbouring not in SENSITIVITY:
        raise ParameterError(f"neighbouring must be one of {', '.join(SENSITIVITY)}; got {neighbouring!r}")
    return n, k


_K = Option("k", int, "number of categories (k >= 2)", metavar="K")
_NB = Option("neighbouring", str, "neighbouring relation for the sensitivity", default="replace",
             choices=tuple(SENSITIVITY))


#: the ε range where the Laplace histogram's formulas keep double precision (checks.Precision)
LAPLACE_EPS_PRECISION = Precision(low=1e-100, below="the Laplace scale 1/eps and the error ~ 1/eps^2 overflow double "
                                  "precision")


@register
class CentralLaplaceHistogram(_CentralHistogram):
    """Laplace mechanism on the histogram (pure ε-DP)."""

    name = "central-laplace-hist"
    summary = "central baseline: Laplace noise on every histogram bin"
    example = "--k 10 --eps 1"
    options = (_K, Option("eps", float, "central epsilon > 0"), _NB)

    @classmethod
    def create(cls, n, *, k=None, eps=None, neighbouring="replace"):
        n, k = _common(n, k, neighbouring)
        if eps is None:
            raise ParameterError("central-laplace-hist needs eps > 0")
        eps = check_real("eps", eps, low=0.0, low_open=True, precise=LAPLACE_EPS_PRECISION)
        b = laplace_scale(eps, SENSITIVITY[neighbouring][0])
        return cls(n=n, randomiser=IdentityRandomiser(k), shuffler=TrustedCurator(),
                   analyser=NoisyHistogramAnalyser(k, n, "laplace", b),
                   params={"k": k, "eps": eps, "delta": 0.0, "neighbouring": neighbouring, "scale": b})

    def mse_expected(self, data) -> float:
        return 2.0 * self.params["scale"] ** 2 * self.k

    def mechanism(self) -> CentralLaplace:
        """Laplace noise of scale Δ₁/ε on every bin (Δ₁ from the neighbouring relation); under replacement two
        bins move by one each, whose exact profile is below the 1-D one (docs/theory.md#central-laplace-hist-profile)."""
        sens = SENSITIVITY[self.params["neighbouring"]][0]
        return CentralLaplace(self.params["eps"], sens, bins=2 if self.params["neighbouring"] == "replace" else 1)

    def privacy(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(self.params["eps"], 0.0, "laplace", (f"{self.params['neighbouring']} neighbours",))


@register
class CentralGaussianHistogram(_CentralHistogram):
    """Gaussian mechanism on the histogram, classical or analytic calibration."""

    name = "central-gaussian-hist"
    summary = "central baseline: Gaussian noise on every bin (analytic = seed 003's optimal Gaussian)"
    example = "--k 10 --eps 1 --delta 1e-6"
    options = (
        _K,
        Option("eps", float, "central epsilon > 0"),
        Option("delta", float, "central delta in (0, 1)"),
        Option("calibration", str, "sigma calibration", default="analytic", choices=("analytic", "classical")),
        _NB,
    )

    @classmethod
    def create(cls, n, *, k=None, eps=None, delta=None, calibration="analytic", neighbouring="replace"):
        n, k = _common(n, k, neighbouring)
        if eps is None or delta is None:
            raise ParameterError("central-gaussian-hist needs eps > 0 and delta in (0, 1)")
        eps = check_positive("eps", eps)
        delta = check_probability("delta", delta, allow_zero=False, allow_one=False)
        d2 = SENSITIVITY[neighbouring][1]
        if calibration == "analytic":
            sigma = analytic_gaussian_sigma(eps, delta, d2)
        elif calibration == "classical":
            sigma = classical_gaussian_sigma(eps, delta, d2)
        else:
            raise ParameterError(f"calibration must be 'analytic' or 'classical'; got {calibration!r}")
        return cls(n=n, randomiser=IdentityRandomiser(k), shuffler=TrustedCurator(),
                   analyser=NoisyHistogramAnalyser(k, n, "gaussian", sigma),
                   params={"k": k, "eps": eps, "delta": delta, "calibration": calibration,
                           "neighbouring": neighbouring, "sigma": sigma})

    def mse_expected(self, data) -> float:
        return self.params["sigma"] ** 2 * self.k

    def mechanism(self) -> CentralGaussian:
        """Gaussian noise σ on every bin (L2 sensitivity Δ₂ from the neighbouring relation)."""
        return CentralGaussian(self.params["sigma"], SENSITIVITY[self.params["neighbouring"]][1])

    def privacy(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(self.params["eps"], self.params["delta"], f"gaussian-{self.params['calibration']}",
                                (f"{self.params['neighbouring']} neighbours",))
